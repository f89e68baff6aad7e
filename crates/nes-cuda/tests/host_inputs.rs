//! The host build of the kernels (`nes_cuda::host`) takes states as `Batch` does: a state nes-core
//! refuses (banking maps past the ROM, another ROM's state) is an error, not a run of the C++
//! code on it, and a refused call leaves the caller's states as they were.

use nes_cuda::{host, Error, RomImage, PIXELS_PER_ENV};

/// An NROM image of `banks` 16 KiB PRG banks (a loop at $8000) and 8 KiB of CHR ROM.
fn nrom(banks: u8) -> RomImage {
    let prg = banks as usize * 0x4000;
    let mut rom = vec![0u8; 16 + prg + 0x2000];
    rom[..6].copy_from_slice(&[b'N', b'E', b'S', 0x1a, banks, 1]);
    rom[16..19].copy_from_slice(&[0x4c, 0x00, 0x80]); // JMP $8000
    let vectors = 16 + prg - 6;
    rom[vectors..vectors + 6].copy_from_slice(&[0x00, 0x80, 0x00, 0x80, 0x00, 0x80]);
    RomImage::new(&rom).unwrap()
}

#[test]
fn states_nes_core_refuses_are_errors_and_change_nothing() {
    let image = nrom(2);
    let good = image.power_on();
    let mut past_the_rom = good;
    past_the_rom.cart_prg_map = [0x7000_0000; 4];
    let mut chr_past = good;
    chr_past.cart_chr_map = [0x7000_0000; 8];
    let other_rom = nrom(1).power_on();
    for bad in [past_the_rom, chr_past, other_rom] {
        let mut states = [good, bad];
        let before = states;
        let r = host::step(&mut states, &image, &[0, 0], 2, None);
        assert!(r.is_err(), "a state nes-core refuses ran");
        assert!(states == before, "a refused step changed the states");
        let mut one = bad;
        assert!(host::ppu_run(&mut one, &image, 10, true, None).is_err());
        assert!(host::status_bound(&bad, &image).is_err());
        assert!(host::cpu_step(&mut one, &image).is_err());
        let (mut a, mut b) = (vec![0u8; PIXELS_PER_ENV], vec![0u8; PIXELS_PER_ENV]);
        assert!(host::replay_check(&mut one, &image, &mut a, &mut b).is_err());
    }
    let mut states = [good];
    host::step(&mut states, &image, &[0], 2, None).unwrap(); // the good state runs
}

#[test]
fn replay_check_refuses_pictures_of_the_wrong_size() {
    let image = nrom(2);
    let mut state = image.power_on();
    let (mut a, mut b) = (vec![0u8; 10], vec![0u8; PIXELS_PER_ENV]);
    assert!(matches!(host::replay_check(&mut state, &image, &mut a, &mut b), Err(Error::BadArgument(_))));
    let mut a = vec![0u8; PIXELS_PER_ENV];
    assert!(host::replay_check(&mut state, &image, &mut a, &mut b).unwrap() >= 0);
}

#[test]
fn a_call_refused_for_any_argument_changes_no_state() {
    // Bits nes-core's loader drops: a call that goes on clears them; a refused one must not.
    let image = nrom(2);
    let mut odd = image.power_on();
    odd.ppu_palette[3] |= 0xc0;
    odd.ppu_v |= 0x8000;
    let before = [odd, odd];
    let mut states = before;
    assert!(host::step_in_order(&mut states, &image, &[0, 0], &[1, 0], 1, &mut [0u32; 1]).is_err());
    assert!(host::step(&mut states, &image, &[0, 0], 1, Some(&mut [0u8; 5])).is_err());
    let mut short = vec![0u8; PIXELS_PER_ENV];
    assert!(host::step_drawn_by_lines(&mut states, &image, &[0, 0], 1, &mut short, None).is_err());
    let mut pixels = vec![0u8; 2 * PIXELS_PER_ENV];
    let mut gray = [0u8; 7];
    assert!(host::step_drawn_by_lines(&mut states, &image, &[0, 0], 1, &mut pixels, Some(&mut gray)).is_err());
    let mut one = odd;
    assert!(host::ppu_run(&mut one, &image, 10, true, Some(&mut [0u8; 3])).is_err());
    let (mut a, mut b) = (vec![0u8; 10], vec![0u8; PIXELS_PER_ENV]);
    assert!(host::replay_check(&mut one, &image, &mut a, &mut b).is_err());
    assert!(states == before && one == odd, "a refused call changed the states");
    host::step(&mut states, &image, &[0, 0], 0, None).unwrap();
    assert_eq!((states[0].ppu_palette[3], states[0].ppu_v & 0x8000), (odd.ppu_palette[3] & 0x3f, 0));
}

#[test]
fn zero_frames_drawn_by_lines_make_the_84x84_pictures_of_the_pictures_there() {
    let image = nrom(2);
    let mut states = [image.power_on(), image.power_on()];
    let mut pixels: Vec<u8> = (0..2 * PIXELS_PER_ENV).map(|i| (i * 31 % 64) as u8).collect();
    let mut want = vec![0u8; 2 * nes_cuda::picture::GRAY_PIXELS];
    nes_cuda::picture::gray84(&pixels, &mut want).unwrap();
    let mut gray = vec![0x07u8; want.len()];
    let kept = pixels.clone();
    assert_eq!(host::step_drawn_by_lines(&mut states, &image, &[0, 0], 0, &mut pixels, Some(&mut gray)).unwrap(), 0);
    assert!(gray == want && pixels == kept);
}

#[test]
fn a_rom_image_debugs_as_its_sizes_not_its_bytes() {
    let shown = format!("{:?}", nrom(2));
    assert!(shown.len() < 300 && shown.contains("prg: 32768"), "{shown}");
}

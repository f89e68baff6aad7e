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

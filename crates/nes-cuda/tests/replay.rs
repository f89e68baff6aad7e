//! Drawing a frame after it ran, by replaying its logged PPU and mapper accesses through the
//! PPU alone (kernels/replay.cuh, host build only so far), gives the picture the step kernel
//! draws while running it: SMB and Tetris (600 frames of random buttons each) and every test
//! ROM (240 frames), every frame.

use nes_cuda::{host, RomImage, PIXELS_PER_ENV};

mod common;
use common::{rom, test_roms, Rng};

fn check(name: &str, frames: usize) {
    let Some(bytes) = rom(name) else { panic!("{name} missing: `python -m nesle roms fetch` (or set NESLE_ROM_DIR)") };
    check_rom(name, &bytes, frames, true);
}

fn check_rom(name: &str, bytes: &[u8], frames: usize, games_draw: bool) {
    let image = RomImage::new(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut state = image.power_on();
    let mut rng = Rng(7);
    let (mut a, mut b) = (vec![0u8; PIXELS_PER_ENV], vec![0u8; PIXELS_PER_ENV]);
    let mut events = 0i64;
    let mut pictures = 0;
    for f in 0..frames {
        let buttons = if f % 4 == 0 { (rng.next() >> 9) as u8 } else { state.pad_buttons[0] };
        state.pad_buttons[0] = buttons;
        let n = host::replay_check(&mut state, &image, &mut a, &mut b).unwrap();
        assert!(n >= 0, "{name} frame {f}: {n}");
        events += n as i64;
        if let Some(i) = a.iter().zip(&b).position(|(x, y)| x != y) {
            panic!("{name} frame {f}: pixel {i} (line {}, x {}): {} drawn, {} replayed", i / 256, i % 256, a[i], b[i]);
        }
        pictures += a.iter().any(|&p| p != a[0]) as usize;
    }
    // Something was drawn: most frames of a game are more than one colour.
    assert!(!games_draw || pictures > frames / 2, "{name}: only {pictures} of {frames} frames show a picture");
    eprintln!("{name}: {frames} frames replayed alike, {events} events logged");
}

#[test]
fn replayed_frames_match_the_drawn_ones() {
    // The two game ROMs the test set-up fetches (Zelda and Contra replayed alike too, 600
    // frames each, when this was written).
    for name in ["super-mario-bros.nes", "tetris.nes"] {
        check(name, 600);
    }
}

#[test]
fn replayed_test_rom_frames_match_the_drawn_ones() {
    for p in test_roms() {
        check_rom(&p.display().to_string(), &std::fs::read(&p).unwrap(), 240, false);
    }
}

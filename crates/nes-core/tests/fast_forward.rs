//! The fast-forwards of `run_frame` change nothing but speed: after every frame, a console with
//! them and one without hold the same save state and pixels. They are the idle loop (a `JMP`
//! to itself skipped in bulk up to the next cycle where an interrupt line may change,
//! perf-notes #21) and the `$2002` poll (`LDA $2002; AND #m; BEQ/BNE` skipped up to the first
//! read that could see a status bit change, perf-notes #35).
//!
//! Game ROMs as in `games.rs` (`python3 -m nesle roms fetch`: every known game, Contra and Zelda
//! among them); test ROMs from the shared folder (`NESLE_TEST_ROMS`, as in `test_roms.rs`).

use std::path::PathBuf;

use nes_core::Console;

mod common;

fn test_rom(path: &str) -> Vec<u8> {
    let dir = match std::env::var("NESLE_TEST_ROMS") {
        Ok(d) => PathBuf::from(d),
        Err(_) => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/test-roms"),
    };
    let p = dir.join(path);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Start taps, then running right with B and a jump every 40 frames.
fn buttons(f: u32) -> u8 {
    if f < 200 {
        return if f % 20 < 5 { 0x08 } else { 0 };
    }
    0x82 | if f % 40 < 12 { 0x01 } else { 0 }
}

/// Runs `frames` frames on two consoles, fast-forward on and off, and compares them after
/// each. Some frames are followed by a few single steps, so frames start at varied points of
/// the idle loop and the skips end at varied distances from the interrupt events.
fn assert_fast_forward_is_invisible(name: &str, rom: &[u8], frames: u32) {
    let mut fast = Console::new(rom).unwrap();
    let mut slow = Console::new(rom).unwrap();
    slow.set_fast_forward(false);
    for c in [&mut fast, &mut slow] {
        c.set_render(true);
    }
    for f in 0..frames {
        for c in [&mut fast, &mut slow] {
            c.set_buttons(0, buttons(f));
            c.run_frame();
            for _ in 0..(f % 7) * (f % 3) {
                c.step();
            }
        }
        assert!(fast.save_state() == slow.save_state(), "{name}: states differ after frame {f}");
        assert!(fast.pixels() == slow.pixels(), "{name}: pixels differ after frame {f}");
    }
}

#[test]
fn fast_forward_leaves_super_mario_bros_exactly_as_stepping_does() {
    assert_fast_forward_is_invisible("smb", &common::game_rom("super-mario-bros.nes"), 1200);
}

#[test]
fn fast_forward_leaves_tetris_exactly_as_stepping_does() {
    assert_fast_forward_is_invisible("tetris", &common::game_rom("tetris.nes"), 800);
}

#[test]
fn fast_forward_leaves_the_apu_and_interrupt_tests_exactly_as_stepping_does() {
    for (path, frames) in [
        ("apu/apu_test/apu_test.nes", 900),
        ("cpu/cpu_interrupts_v2/cpu_interrupts.nes", 600),
        ("ppu/ppu_vbl_nmi/rom_singles/10-even_odd_timing.nes", 300),
        ("ppu/ppu_vbl_nmi/rom_singles/07-nmi_on_timing.nes", 300),
        ("mappers/mmc3_test_2/rom_singles/4-scanline_timing.nes", 200),
    ] {
        assert_fast_forward_is_invisible(path, &test_rom(path), frames);
    }
}

#[test]
fn fast_forward_leaves_contra_and_zelda_exactly_as_stepping_does() {
    assert_fast_forward_is_invisible("contra", &common::game_rom("contra.nes"), 600);
    assert_fast_forward_is_invisible("zelda", &common::game_rom("zelda.nes"), 600);
}

#[test]
fn fast_forward_leaves_the_sprite_hit_and_overflow_tests_exactly_as_stepping_does() {
    for path in ["ppu/ppu_sprite_hit/ppu_sprite_hit.nes", "ppu/ppu_sprite_overflow/ppu_sprite_overflow.nes"] {
        assert_fast_forward_is_invisible(path, &test_rom(path), 600);
    }
}

#[test]
fn fast_forward_of_status_polls_is_exact_on_every_line() {
    assert_fast_forward_is_invisible("status polls", &common::status_poll_rom(), 700);
}

#[test]
fn oam_dma_without_catch_ups_in_vertical_blank_is_exact_wherever_it_starts() {
    assert_fast_forward_is_invisible("OAM DMA", &common::oam_dma_rom(), 600);
}

#[test]
fn oam_dma_in_vertical_blank_is_exact_with_dmc_fetches_inside() {
    assert_fast_forward_is_invisible("OAM DMA with the DMC", &common::oam_dma_dmc_rom(), 600);
}

//! The fast-forwards of `run_frame` change nothing but speed: after every frame, a console with
//! them and one without hold the same save state and pixels. They are the idle loop (a `JMP`
//! to itself skipped in bulk up to the next cycle where an interrupt line may change,
//! perf-notes #21) and the `$2002` poll (`LDA $2002; AND #m; BEQ/BNE` skipped up to the first
//! read that could see a status bit change, perf-notes #35).
//!
//! Game ROMs as in `games.rs` (`python3 -m nesle roms fetch smb tetris`); test ROMs from the
//! shared folder (`NESLE_TEST_ROMS`, as in `test_roms.rs`).

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
    for path in
        ["ppu/ppu_sprite_hit/ppu_sprite_hit.nes", "ppu/ppu_sprite_overflow/ppu_sprite_overflow.nes"]
    {
        assert_fast_forward_is_invisible(path, &test_rom(path), 600);
    }
}

/// An NROM-128 image: `code` at $C000 (the rest `NOP`), NMI and IRQ at `nmi`, reset at
/// `reset`, and 8 KiB of mostly opaque CHR.
fn nrom(code: &[u8], nmi: u16, reset: u16) -> Vec<u8> {
    let mut prg = vec![0xeau8; 0x4000];
    prg[..code.len()].copy_from_slice(code);
    for (at, v) in [(0x3ffa, nmi), (0x3ffc, reset), (0x3ffe, nmi)] {
        prg[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }
    let mut rom = vec![b'N', b'E', b'S', 0x1a, 1, 1, 0, 0];
    rom.resize(16, 0);
    rom.extend_from_slice(&prg);
    for i in 0..0x2000usize {
        rom.push(if i % 3 == 0 { 0x0f } else { 0xff ^ (i as u8) });
    }
    rom
}

/// An NROM program that only polls `$2002`: for VBL (`AND #$80`, where a read on the dot
/// before VBL suppresses it), for sprite overflow and for the sprite 0 hit (`BEQ`), and for
/// the flags' clear (`BNE`), with rendering on, sprite 0's four bytes set to the frame count
/// (its Y runs through every line, so the hit lands on every line) and mostly opaque CHR.
fn status_poll_rom() -> Vec<u8> {
    #[rustfmt::skip]
    let code: &[u8] = &[
        0x78, 0xd8, 0xa2, 0xff, 0x9a,       // SEI CLD LDX #$FF TXS
        // $C005: the PPU ignores $2001 for ~29,658 cycles after power-on: write it each time.
        0xa9, 0x1e, 0x8d, 0x01, 0x20,       // LDA #$1E STA $2001 (rendering on)
        0xad, 0x02, 0x20, 0x29, 0x80, 0xf0, 0xf9, // $C00A: LDA $2002 AND #$80 BEQ $C00A
        0xe6, 0x10, 0xa9, 0x00, 0x8d, 0x03, 0x20, // INC $10 LDA #0 STA $2003
        0xa5, 0x10, 0x8d, 0x04, 0x20, 0x8d, 0x04, 0x20, // LDA $10 STA $2004 STA $2004
        0x8d, 0x04, 0x20, 0x8d, 0x04, 0x20, // STA $2004 STA $2004 (sprite 0 := frame, all 4)
        0xa9, 0x00, 0x8d, 0x03, 0x20,       // LDA #0 STA $2003
        0xad, 0x02, 0x20, 0x29, 0x40, 0xd0, 0xf9, // LDA $2002 AND #$40 BNE (hit clear)
        0xad, 0x02, 0x20, 0x29, 0x40, 0xf0, 0xf9, // LDA $2002 AND #$40 BEQ (hit)
        0xad, 0x0a, 0x3f, 0x29, 0x20, 0xf0, 0xf9, // LDA $3F0A (mirror) AND #$20 BEQ (overflow)
        0x4c, 0x05, 0xc0,                   // JMP $C005
        0x40,                               // $C043: RTI
    ];
    assert_eq!(code.len(), 0x44, "the vectors below point into this layout");
    nrom(code, 0xc043, 0xc000)
}

#[test]
fn fast_forward_of_status_polls_is_exact_on_every_line() {
    assert_fast_forward_is_invisible("status polls", &status_poll_rom(), 700);
}

/// A ROM whose NMI starts an OAM DMA (page 2, rewritten every frame) after a delay that grows
/// by 11 cycles a frame, and whose main loop also starts one after a delay of its own: over the
/// frames the transfers start all through vertical blank, across its end into the pre-render
/// line and in the middle of rendering, with OAMADDR moved to varied values first.
fn oam_dma_rom() -> Vec<u8> {
    #[rustfmt::skip]
    let code: &[u8] = &[
        0x78, 0xd8, 0xa2, 0xff, 0x9a,       // SEI CLD LDX #$FF TXS
        // $C005: NMI and rendering on (the PPU ignores them early after power-on: each time).
        0xa9, 0x80, 0x8d, 0x00, 0x20,       // LDA #$80 STA $2000
        0xa9, 0x1e, 0x8d, 0x01, 0x20,       // LDA #$1E STA $2001
        0xa6, 0x11, 0xca, 0xd0, 0xfd,       // LDX $11; DEX BNE (a delay of its own)
        0xa9, 0x02, 0x8d, 0x14, 0x40,       // LDA #2 STA $4014 (a DMA from the main loop)
        0xe6, 0x11, 0x4c, 0x05, 0xc0,       // INC $11 JMP $C005
        // $C01E NMI: 8 bytes of page 2 from the frame count, a wait, OAMADDR moved, the DMA.
        0xe6, 0x10, 0xa5, 0x10, 0xa0, 0x08, // INC $10 LDA $10 LDY #8
        0x99, 0xff, 0x01, 0x18, 0x69, 0x35, 0x88, 0xd0, 0xf7, // STA $01FF,Y CLC ADC #$35 DEY BNE
        0xa6, 0x10, 0xca, 0xea, 0xea, 0xea, 0xd0, 0xfa, // LDX $10; DEX NOP NOP NOP BNE: 11 cycles more
                                            // each frame, wrapping after 256: through all of VBL
        0xa5, 0x10, 0x8d, 0x03, 0x20,       // LDA $10 STA $2003
        0xa9, 0x02, 0x8d, 0x14, 0x40,       // LDA #2 STA $4014
        0x40,                               // RTI
    ];
    assert_eq!(code.len(), 0x40, "the vectors below point into this layout");
    nrom(code, 0xc01e, 0xc000)
}

#[test]
fn oam_dma_without_catch_ups_in_vertical_blank_is_exact_wherever_it_starts() {
    assert_fast_forward_is_invisible("OAM DMA", &oam_dma_rom(), 600);
}

/// `oam_dma_rom` with the DMC playing a looped sample at its fastest rate from power-on, so
/// its fetches (a byte every 432 cycles) fall inside the 513-cycle transfers, at all offsets.
fn oam_dma_dmc_rom() -> Vec<u8> {
    #[rustfmt::skip]
    let code: &[u8] = &[
        0x78, 0xd8, 0xa2, 0xff, 0x9a,       // SEI CLD LDX #$FF TXS
        0xa9, 0x4f, 0x8d, 0x10, 0x40,       // LDA #$4F STA $4010: rate 15, loop, no IRQ
        0xa9, 0xff, 0x8d, 0x13, 0x40,       // LDA #$FF STA $4013: 4,081 bytes from $C000
        0xa9, 0x10, 0x8d, 0x15, 0x40,       // LDA #$10 STA $4015: the DMC on
        // $C014: as oam_dma_rom's main loop.
        0xa9, 0x80, 0x8d, 0x00, 0x20,       // LDA #$80 STA $2000
        0xa9, 0x1e, 0x8d, 0x01, 0x20,       // LDA #$1E STA $2001
        0xa6, 0x11, 0xca, 0xd0, 0xfd,       // LDX $11; DEX BNE
        0xa9, 0x02, 0x8d, 0x14, 0x40,       // LDA #2 STA $4014
        0xe6, 0x11, 0x4c, 0x14, 0xc0,       // INC $11 JMP $C014
        // $C02D NMI: as oam_dma_rom's.
        0xe6, 0x10, 0xa5, 0x10, 0xa0, 0x08, // INC $10 LDA $10 LDY #8
        0x99, 0xff, 0x01, 0x18, 0x69, 0x35, 0x88, 0xd0, 0xf7, // STA $01FF,Y CLC ADC #$35 DEY BNE
        0xa6, 0x10, 0xca, 0xea, 0xea, 0xea, 0xd0, 0xfa, // LDX $10; DEX NOP NOP NOP BNE
        0xa5, 0x10, 0x8d, 0x03, 0x20,       // LDA $10 STA $2003
        0xa9, 0x02, 0x8d, 0x14, 0x40,       // LDA #2 STA $4014
        0x40,                               // RTI
    ];
    assert_eq!(code.len(), 0x4f, "the vectors below point into this layout");
    nrom(code, 0xc02d, 0xc000)
}

#[test]
fn oam_dma_in_vertical_blank_is_exact_with_dmc_fetches_inside() {
    assert_fast_forward_is_invisible("OAM DMA with the DMC", &oam_dma_dmc_rom(), 600);
}



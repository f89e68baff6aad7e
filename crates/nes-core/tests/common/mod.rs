//! Fixtures shared by the integration tests and the benches (`#[path]`-included there).
#![allow(dead_code)]

use std::path::PathBuf;

/// A small ROM that runs: it turns on NMI and rendering, then loops writing PPU data, every
/// mapper's registers and PRG RAM. Each 16 KiB PRG bank is a copy of the same code at $E000, so
/// any banking leaves the program in place. `prg_16k` banks, `chr_8k` CHR banks (0 = CHR RAM).
pub fn tiny_rom(mapper: u8, prg_16k: u8, chr_8k: u8) -> Vec<u8> {
    #[rustfmt::skip]
    let code: &[u8] = &[
        0x78, 0xd8, 0xa2, 0xff, 0x9a, 0x58, // SEI CLD LDX #$FF TXS CLI
        // $E006: the PPU ignores $2000/$2001 for ~29,658 cycles after power-on, so the loop
        // re-enables NMI and rendering every time round.
        0xa9, 0x80, 0x8d, 0x00, 0x20,       // LDA #$80 STA $2000   (NMI on)
        0xa9, 0x1e, 0x8d, 0x01, 0x20,       // LDA #$1E STA $2001   (rendering on)
        0xe6, 0x10, 0xa5, 0x10,             // INC $10 LDA $10
        0x8d, 0x07, 0x20,                   // STA $2007
        0x8d, 0x00, 0x80, 0x8d, 0x01, 0x80, // STA $8000 STA $8001 (bank select / serial port)
        0x8d, 0x00, 0xc0, 0x8d, 0x01, 0xc0, // STA $C000 STA $C001 (MMC3 IRQ latch / reload)
        0x8d, 0x01, 0xe0, 0x8d, 0x00, 0x60, // STA $E001 (IRQ on)  STA $6000 (PRG RAM)
        0x4c, 0x06, 0xe0,                   // JMP $E006
        0xe6, 0x11, 0x40,                   // $E02C NMI: INC $11 RTI
        0x8d, 0x00, 0xe0, 0x40,             // $E02F IRQ: STA $E000 (acknowledge) RTI
    ];
    assert_eq!(code.len(), 0x33, "the vectors below point into this layout");
    let mut bank = vec![0xeau8; 0x4000];
    bank[0x2000..0x2000 + code.len()].copy_from_slice(code);
    bank[0x3ffa..].copy_from_slice(&[0x2c, 0xe0, 0x00, 0xe0, 0x2f, 0xe0]);
    let mut rom = vec![b'N', b'E', b'S', 0x1a, prg_16k, chr_8k, (mapper & 0x0f) << 4 | 1, mapper & 0xf0];
    rom.resize(16, 0);
    for _ in 0..prg_16k {
        rom.extend_from_slice(&bank);
    }
    for i in 0..chr_8k as usize * 0x2000 {
        rom.push((i * 7 + i / 0x400) as u8);
    }
    rom
}

/// Every supported board, as (mapper, PRG 16 KiB banks, CHR 8 KiB banks).
pub const BOARDS: &[(u8, u8, u8)] = &[(0, 2, 1), (1, 4, 2), (2, 4, 0), (3, 2, 4), (4, 4, 4), (7, 4, 0), (66, 4, 4)];

/// Reads a game ROM from `$NESLE_ROM_DIR` or the nesle cache, or fails saying how to get it.
pub fn game_rom(file: &str) -> Vec<u8> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("NESLE_ROM_DIR") {
        dirs.push(d.into());
    }
    match std::env::var_os("XDG_CACHE_HOME") {
        Some(c) if !c.is_empty() => dirs.push(PathBuf::from(c).join("nesle/roms")),
        _ => {
            if let Some(h) = std::env::var_os("HOME") {
                dirs.push(PathBuf::from(h).join(".cache/nesle/roms"));
            }
        }
    }
    for d in &dirs {
        if let Ok(bytes) = std::fs::read(d.join(file)) {
            return bytes;
        }
    }
    panic!(
        "game ROM {file} not found in {dirs:?}; run `python3 -m nesle roms fetch` \
         (or point NESLE_ROM_DIR at a folder holding it)"
    );
}

/// An NROM-128 image: `code` at $C000 (the rest `NOP`), NMI and IRQ at `nmi`, reset at
/// `reset`, and 8 KiB of mostly opaque CHR.
pub fn nrom(code: &[u8], nmi: u16, reset: u16) -> Vec<u8> {
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
pub fn status_poll_rom() -> Vec<u8> {
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

/// A ROM whose NMI starts an OAM DMA (page 2, rewritten every frame) after a delay that grows
/// by 11 cycles a frame, and whose main loop also starts one after a delay of its own: over the
/// frames the transfers start all through vertical blank, across its end into the pre-render
/// line and in the middle of rendering, with OAMADDR moved to varied values first.
pub fn oam_dma_rom() -> Vec<u8> {
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

/// `oam_dma_rom` with the DMC playing a looped sample at its fastest rate from power-on, so
/// its fetches (a byte every 432 cycles) fall inside the 513-cycle transfers, at all offsets.
pub fn oam_dma_dmc_rom() -> Vec<u8> {
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

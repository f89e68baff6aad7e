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
    let mut rom = vec![
        b'N',
        b'E',
        b'S',
        0x1a,
        prg_16k,
        chr_8k,
        (mapper & 0x0f) << 4 | 1,
        mapper & 0xf0,
    ];
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
pub const BOARDS: &[(u8, u8, u8)] = &[
    (0, 2, 1),
    (1, 4, 2),
    (2, 4, 0),
    (3, 2, 4),
    (4, 4, 4),
    (7, 4, 0),
    (66, 4, 4),
];

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
        "game ROM {file} not found in {dirs:?}; run `python3 -m nesle roms fetch smb tetris` \
         (or point NESLE_ROM_DIR at a folder holding it)"
    );
}

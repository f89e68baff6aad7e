//! What the SMB examples share: the ROM, and a console at World 1-1's first gameplay frame.

use nes_core::Console;
use std::path::PathBuf;

/// Where the game ROMs are: `$NESLE_ROM_DIR`, else the folder `nesle roms fetch` fills
/// (`$XDG_CACHE_HOME/nesle/roms`, default `~/.cache/nesle/roms`).
#[allow(dead_code)] // not every example that includes this file boots SMB, nor the other way
pub fn rom_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("NESLE_ROM_DIR") {
        return d.into();
    }
    match std::env::var_os("XDG_CACHE_HOME") {
        Some(c) if !c.is_empty() => PathBuf::from(c).join("nesle/roms"),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/nesle/roms"),
    }
}

/// Super Mario Bros. from [`rom_dir`], just powered on.
#[allow(dead_code)]
pub fn power_on() -> Console {
    let rom = std::fs::read(rom_dir().join("super-mario-bros.nes")).expect("super-mario-bros.nes (set NESLE_ROM_DIR)");
    Console::new(&rom).expect("a valid ROM")
}

/// Super Mario Bros. from [`rom_dir`], booted with one press of Start to the first frame of
/// play in World 1-1 (the GPU benchmark's start).
#[allow(dead_code)]
pub fn world_1_1() -> Console {
    let mut c = power_on();
    for frame in 0..1200 {
        c.set_buttons(0, if (40..42).contains(&frame) { 0x08 } else { 0 });
        c.run_frame();
        if frame > 42 && c.ram()[0x0770] == 1 && c.ram()[0x000e] == 8 {
            break;
        }
    }
    c
}

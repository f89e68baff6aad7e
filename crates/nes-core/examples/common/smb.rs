//! What the SMB examples share: the ROM, and a console at World 1-1's first gameplay frame.

use nes_core::Console;
use std::path::PathBuf;

/// Super Mario Bros. from `$NESLE_ROM_DIR` or `~/.cache/nesle/roms`, booted with one press of
/// Start to the first frame of play in World 1-1 (the GPU benchmark's start).
pub fn world_1_1() -> Console {
    let dir = std::env::var("NESLE_ROM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/nesle/roms"));
    let rom = std::fs::read(dir.join("super-mario-bros.nes")).expect("super-mario-bros.nes (set NESLE_ROM_DIR)");
    let mut c = Console::new(&rom).expect("a valid ROM");
    for frame in 0..1200 {
        c.set_buttons(0, if (40..42).contains(&frame) { 0x08 } else { 0 });
        c.run_frame();
        if frame > 42 && c.ram()[0x0770] == 1 && c.ram()[0x000e] == 8 {
            break;
        }
    }
    c
}

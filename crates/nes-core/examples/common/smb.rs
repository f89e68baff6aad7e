//! What the SMB examples share: the ROM, and a console at World 1-1's first gameplay frame.

use nes_core::Console;
use std::path::PathBuf;

/// Where the game ROMs are, in the order searched: `$NESLE_ROM_DIR`, then the folder
/// `nesle roms fetch` fills (`$XDG_CACHE_HOME/nesle/roms`, default `~/.cache/nesle/roms`), as
/// the Python package and nes-core's tests search them.
#[allow(dead_code)] // not every example that includes this file boots SMB, nor the other way
pub fn rom_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("NESLE_ROM_DIR").map(PathBuf::from).into_iter().collect();
    dirs.push(match std::env::var_os("XDG_CACHE_HOME") {
        Some(c) if !c.is_empty() => PathBuf::from(c).join("nesle/roms"),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/nesle/roms"),
    });
    dirs
}

/// The game ROM `file` in the first of [`rom_dirs`] that holds it (else its path in the first,
/// for the error a read of it gives).
#[allow(dead_code)]
pub fn rom_path(file: &str) -> PathBuf {
    let dirs = rom_dirs();
    dirs.iter().map(|d| d.join(file)).find(|p| p.is_file()).unwrap_or_else(|| dirs[0].join(file))
}

/// Super Mario Bros. from [`rom_path`], just powered on.
#[allow(dead_code)]
pub fn power_on() -> Console {
    let rom = std::fs::read(rom_path("super-mario-bros.nes")).expect("super-mario-bros.nes (set NESLE_ROM_DIR)");
    Console::new(&rom).expect("a valid ROM")
}

/// Super Mario Bros. from [`rom_path`], booted with one press of Start to the first frame of
/// play in World 1-1 (the GPU benchmarks' start).
#[allow(dead_code)]
pub fn world_1_1() -> Console {
    let rom = std::fs::read(rom_path("super-mario-bros.nes")).expect("super-mario-bros.nes (set NESLE_ROM_DIR)");
    world_1_1_of(&rom).unwrap_or_else(|e| panic!("{e}")).0
}

/// `rom` booted with Start pressed at frames 40 and 41 until World 1-1's gameplay starts
/// (OperMode $0770 = 1, GameEngineSubroutine $000E = 8: player control), and the frames that
/// took; an error for a ROM nes-core refuses or one that never gets there.
#[allow(dead_code)]
pub fn world_1_1_of(rom: &[u8]) -> Result<(Console, usize), String> {
    let mut c = Console::new(rom).map_err(|e| e.to_string())?;
    for frame in 0..1200 {
        c.set_buttons(0, if (40..42).contains(&frame) { 0x08 } else { 0 });
        c.run_frame();
        if frame > 42 && c.ram()[0x0770] == 1 && c.ram()[0x000e] == 8 {
            return Ok((c, frame + 1));
        }
    }
    Err("SMB never reached World 1-1 gameplay in 1200 frames (is this the gym-super-mario-bros ROM?)".into())
}

//! Determinism oracle and fixed benchmark run of the speed work (docs/perf-notes.md).
//!
//! Without arguments it prints FNV hashes of `save_state()` (and `pixels()` with pixel output
//! on) taken during scripted runs of the game ROMs and a few timing test ROMs: a change that
//! only makes the emulator faster must print the same hashes as the commit before it.
//!
//! * `STEP`: hashes every 777 `Console::step` calls (SMB, Tetris, Contra, apu_test,
//!   cpu_interrupts; pixels on and off): lazily run chips must be exact between steps;
//! * one line per ROM: hashes every 100 `run_frame` calls, with a save/load round trip half
//!   way (derived caches must be rebuilt from the saved fields alone);
//! * `ALL`: the lines above folded into one.
//!
//! `bench N R` runs the callgrind protocol: SMB, 200 frames of boot, then `N` timed frames
//! (the `timed` function) with pixel output `R` (0 or 1). `rgb N` converts SMB's frame 200 to
//! RGB `N` times (`timed_rgb`, `palette::indices_to_rgb`).
//!
//! ```text
//! cargo run --release -p nes-core --example oracle [-- -v | bench 300 0]
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='oracle::timed*' \
//!     target/release/examples/oracle bench 300 0
//! ```
//! The game ROMs come from `$NESLE_ROM_DIR` or the nesle cache
//! (`$XDG_CACHE_HOME/nesle/roms`, default `~/.cache/nesle/roms`), the test ROMs from
//! `$NESLE_TEST_ROMS` or `/work/shared/test-roms`.

use nes_core::Console;
use std::path::PathBuf;

#[path = "common/smb.rs"]
mod smb;

fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Scripted input for frame `f`: Start taps during boot, then run right with B, jump every
/// 40 frames, and a little Up now and then.
fn script(f: u64) -> u8 {
    if f < 200 {
        return if f % 20 < 5 { 0x08 } else { 0 };
    }
    let mut b = 0x80 | 0x02;
    if f % 40 < 12 {
        b |= 0x01;
    }
    if f % 300 > 280 {
        b = 0x40;
    }
    b
}

fn game(file: &str) -> PathBuf {
    smb::rom_path(file)
}

fn test_rom(path: &str) -> PathBuf {
    let dir = std::env::var_os("NESLE_TEST_ROMS").unwrap_or_else(|| "/work/shared/test-roms".into());
    PathBuf::from(dir).join(path)
}

fn load(path: &PathBuf) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Hashes every 100 frames of `frames`, with a save/load round trip at `frames / 2`.
fn run(path: &PathBuf, frames: u64, render: bool, print: bool) -> u64 {
    let rom = load(path);
    let mut nes = Console::new(&rom).unwrap();
    nes.set_render(render);
    let mut acc = 0u64;
    for f in 0..frames {
        nes.set_buttons(0, script(f));
        nes.run_frame();
        if f == frames / 2 {
            let s = nes.save_state();
            let mut n2 = Console::new(&rom).unwrap();
            n2.set_render(render);
            n2.load_state(&s).unwrap();
            nes = n2;
        }
        if (f + 1) % 100 == 0 {
            let s = fnv(&nes.save_state());
            let p = if render { fnv(nes.pixels()) } else { 0 };
            acc = acc.rotate_left(7) ^ s ^ p.rotate_left(13);
            if print {
                println!("{} f{} state {s:016x} pix {p:016x} cyc {}", path.display(), f + 1, nes.cycles());
            }
        }
    }
    acc
}

/// Hashes every 777 of 400,000 `Console::step` calls.
fn run_steps(path: &PathBuf, render: bool) -> u64 {
    let rom = load(path);
    let mut nes = Console::new(&rom).unwrap();
    nes.set_render(render);
    let mut acc = 0u64;
    for i in 0..400_000u64 {
        nes.set_buttons(0, script(i / 3000));
        nes.step();
        if i % 777 == 0 {
            let ppu = &nes.bus.ppu;
            acc = acc.rotate_left(5)
                ^ fnv(&nes.save_state())
                ^ ppu.scanline as u64
                ^ ((ppu.dot as u64) << 20)
                ^ ppu.frame;
            if render {
                acc ^= fnv(nes.pixels()).rotate_left(11);
            }
        }
    }
    acc
}

fn bench(n: u64, render: bool) {
    let rom = load(&game("super-mario-bros.nes"));
    let mut nes = Console::new(&rom).unwrap();
    for f in 0..200 {
        nes.set_buttons(0, script(f));
        nes.run_frame();
    }
    nes.set_render(render);
    let t = std::time::Instant::now();
    timed(&mut nes, n);
    let s = t.elapsed().as_secs_f64();
    println!("fps {:.0} state {:016x}", n as f64 / s, fnv(&nes.save_state()));
}

fn bench_rgb(n: u64) {
    let rom = load(&game("super-mario-bros.nes"));
    let mut nes = Console::new(&rom).unwrap();
    for f in 0..200 {
        nes.set_buttons(0, script(f));
        nes.run_frame();
    }
    let mut rgb = vec![0u8; nes.pixels().len() * 3];
    let t = std::time::Instant::now();
    timed_rgb(&nes, &mut rgb, n);
    let s = t.elapsed().as_secs_f64();
    println!("frames/s {:.0} rgb {:016x}", n as f64 / s, fnv(&rgb));
}

/// The measured part of `bench_rgb`.
#[inline(never)]
fn timed_rgb(nes: &Console, rgb: &mut [u8], n: u64) {
    for _ in 0..n {
        nes_core::palette::indices_to_rgb(std::hint::black_box(nes.pixels()), rgb);
    }
}

/// The measured part of `bench` (callgrind's `--toggle-collect` target).
#[inline(never)]
fn timed(nes: &mut Console, n: u64) {
    for f in 200..200 + n {
        nes.set_buttons(0, script(f));
        nes.run_frame();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() > 1 && args[1] == "bench" {
        let n = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(300);
        bench(n, args.get(3).map(String::as_str) == Some("1"));
        return;
    }
    if args.len() > 1 && args[1] == "rgb" {
        bench_rgb(args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100));
        return;
    }
    let print = args.len() > 1 && args[1] == "-v";
    let step_roms = [
        game("super-mario-bros.nes"),
        game("tetris.nes"),
        game("contra.nes"),
        test_rom("apu/apu_test/apu_test.nes"),
        test_rom("cpu/cpu_interrupts_v2/cpu_interrupts.nes"),
    ];
    let mut acc = 0u64;
    for p in &step_roms {
        for render in [true, false] {
            acc = acc.rotate_left(3) ^ run_steps(p, render);
        }
    }
    println!("STEP {acc:016x}");
    let roms: Vec<(PathBuf, u64)> = vec![
        (game("super-mario-bros.nes"), 1500),
        (game("contra.nes"), 600),
        (game("zelda.nes"), 600),
        (game("tetris.nes"), 600),
        (test_rom("mappers/holydiverbatman/M4_P128K.nes"), 300),
        (test_rom("mappers/mmc3_test_2/rom_singles/4-scanline_timing.nes"), 300),
        (test_rom("ppu/ppu_vbl_nmi/rom_singles/10-even_odd_timing.nes"), 300),
        (test_rom("ppu/ppu_sprite_overflow/ppu_sprite_overflow.nes"), 900),
        (test_rom("ppu/ppu_sprite_hit/ppu_sprite_hit.nes"), 900),
        (test_rom("apu/apu_test/apu_test.nes"), 900),
        (test_rom("cpu/cpu_interrupts_v2/cpu_interrupts.nes"), 600),
    ];
    let mut all = 0u64;
    for (p, n) in &roms {
        let a = run(p, *n, true, print);
        let b = run(p, *n, false, false);
        let name = p.file_name().unwrap().to_string_lossy();
        println!("{name:40} render {a:016x} norender {b:016x}");
        all ^= a.rotate_left(3) ^ b;
    }
    println!("ALL {all:016x}");
}

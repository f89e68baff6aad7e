//! Host speed proxy for the kernels: the host-compiled kernel (`nes_cuda::host::step`, the same
//! sources as the GPU build) on Super Mario Bros., frames per second with pixels off and on.
//! Host C++ speed stands in for the GPU's instruction count (docs/kernel-notes.md, "Catch-up
//! PPU in the kernels" and "Lazy APU, one deadline, cached lines, idle-loop fast-forward in the
//! kernels"); it is not a GPU throughput figure.
//!
//! `cargo run --release -p nes-cuda --example host_fps -- [FRAMES] [off|on|both]`
//! (default 600 both). Boot (200 frames, Start pressed at 60-63) runs on nes-core and is not
//! timed. For instruction counts run the binary under
//! `valgrind --tool=callgrind --toggle-collect=nesle_host_step target/release/examples/host_fps 120 off`.
//! ROM: `super-mario-bros.nes` in `$NESLE_ROM_DIR`, else in `~/.cache/nesle/roms`.

use nes_core::Console;
use nes_cuda::{host, RomImage, PIXELS_PER_ENV};
use std::time::Instant;

#[path = "../../nes-core/examples/common/smb.rs"]
mod smb;

/// Run right with B, jump every 40 frames (the perf-notes protocol's scripted play).
fn play_input(frame: usize) -> u8 {
    if frame % 40 < 10 {
        0x83
    } else {
        0x82
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let frames: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(600);
    let mode = args.get(2).map(String::as_str).unwrap_or("both");
    let rom = std::fs::read(smb::rom_path("super-mario-bros.nes")).expect("super-mario-bros.nes (set NESLE_ROM_DIR)");
    let image = RomImage::new(&rom).unwrap();
    let mut core = Console::new(&rom).unwrap();
    for f in 0..200 {
        core.set_buttons(0, if (60..64).contains(&f) { 0x08 } else { 0 });
        core.run_frame();
    }
    let boot = core.to_flat();
    for (name, on) in [("off", false), ("on", true)] {
        if mode != "both" && mode != name {
            continue;
        }
        let mut states = vec![boot];
        let mut pixels = vec![0u8; PIXELS_PER_ENV];
        let t = Instant::now();
        for f in 0..frames {
            // One frame per call, so with pixels on every frame is drawn.
            let px = if on { Some(&mut pixels[..]) } else { None };
            host::step(&mut states, &image, &[play_input(f)], 1, px).unwrap();
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "pixels {name}: {frames} frames in {s:.3} s = {:.0} frames/s (ram[0x86]={})",
            frames as f64 / s,
            states[0].ram[0x86]
        );
    }
}

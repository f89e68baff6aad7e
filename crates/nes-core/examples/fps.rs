//! Single-thread frames per second of nes-core on Super Mario Bros. World 1-1, printed as one
//! JSON line. `bench/cpu_peers.py` runs it next to the other emulators with the same protocol:
//!
//! 1. power on, tap Start on the title screen until World 1-1 is playable (OperMode $0770 = 1,
//!    task $0772 = 3): not timed;
//! 2. timed: `--steps` env steps of 4 frames, each holding one action byte read from
//!    `--actions FILE` (one byte per step, nesle's bit order: A B Select Start Up Down Left
//!    Right from bit 0), or RIGHT every step without a file (protocol A).
//!
//! `--mode none` turns pixel output off; `pixels` writes the palette-index picture every frame;
//! `rgb` also converts the last frame of every step to RGB (the observation a pixel agent gets).
//!
//! ```text
//! cargo run --release -p nes-core --example fps -- ROM [--steps 2000] [--mode none|pixels|rgb] [--actions FILE]
//! ```

use nes_core::controller::{RIGHT, START};
use nes_core::Console;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut rom_path = None;
    let mut steps: usize = 2000;
    let mut mode = String::from("none");
    let mut actions_path = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--steps" => steps = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| fail("--steps N")),
            "--mode" => mode = args.next().unwrap_or_else(|| fail("--mode none|pixels|rgb")),
            "--actions" => actions_path = Some(args.next().unwrap_or_else(|| fail("--actions FILE"))),
            _ if rom_path.is_none() => rom_path = Some(a),
            _ => fail(&format!("unexpected argument {a}")),
        }
    }
    let rom_path =
        rom_path.unwrap_or_else(|| fail("usage: fps ROM [--steps N] [--mode none|pixels|rgb] [--actions FILE]"));
    let rom = std::fs::read(&rom_path).unwrap_or_else(|e| fail(&format!("{rom_path}: {e}")));
    let actions = match &actions_path {
        Some(p) => std::fs::read(p).unwrap_or_else(|e| fail(&format!("{p}: {e}"))),
        None => vec![RIGHT; steps],
    };
    if actions.len() < steps {
        fail(&format!("{} actions for {steps} steps", actions.len()));
    }
    let (render, rgb) = match mode.as_str() {
        "none" => (false, false),
        "pixels" => (true, false),
        "rgb" => (true, true),
        _ => fail("--mode none|pixels|rgb"),
    };

    let mut nes = Console::new(&rom).unwrap_or_else(|e| fail(&format!("{rom_path}: {e}")));
    let mut boot_frames = 0;
    while !(nes.ram()[0x0770] == 1 && nes.ram()[0x0772] == 3) {
        let title = nes.ram()[0x0770] == 0 && nes.ram()[0x0772] == 3;
        nes.set_buttons(0, if title && boot_frames % 10 < 5 { START } else { 0 });
        nes.run_frame();
        boot_frames += 1;
        if boot_frames > 600 {
            fail("did not reach World 1-1 in 600 frames (is this Super Mario Bros.?)");
        }
    }

    nes.set_render(render);
    let mut frame = vec![0u8; 256 * 240 * 3];
    let t = Instant::now();
    for &a in &actions[..steps] {
        nes.set_buttons(0, a);
        nes.run_frames(4); // pixels of the observed (last) frame only
        if rgb {
            nes_core::palette::indices_to_rgb(nes.pixels(), &mut frame);
        }
    }
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(&frame);
    let ram = nes.ram();
    println!(
        "{{\"emulator\": \"nesle\", \"mode\": \"{mode}\", \"steps\": {steps}, \"frames\": {}, \"seconds\": {secs:.6}, \
         \"fps\": {:.1}, \"boot_frames\": {boot_frames}, \"x\": {}, \"oper_mode\": {}, \"lives\": {}}}",
        steps * 4,
        (steps * 4) as f64 / secs,
        ram[0x006d] as u32 * 256 + ram[0x0086] as u32,
        ram[0x0770],
        ram[0x075a],
    );
}

fn fail(msg: &str) -> ! {
    eprintln!("fps: {msg}");
    std::process::exit(2)
}

//! Super Mario Bros.'s instruction mix under protocol B's inputs: the share of executed
//! instructions by access class (read, immediate or from memory; write; read-modify-write; the
//! rest) and by operand kind (zero page or indirect, absolute, relative), which says how many
//! of the kernel's `cpu_read` calls a frame-loop round an inline read at one call site removes
//! (docs/kernel-notes.md, #107-#109). A host count, not a GPU measurement: like the kernel, an
//! idle loop's repeats (a `JMP` to itself) count once a frame.
//!
//! ```text
//! cargo run --release -p nes-core --example instruction_mix -- [FRAMES]
//! ```
//! From the first gameplay frame of World 1-1, SIMPLE_MOVEMENT actions from the benchmark's
//! seeded generator every 4 frames, FRAMES frames (default 2,000). The ROM comes from
//! `$NESLE_ROM_DIR` or `~/.cache/nesle/roms`.

use nes_core::cpu::ops::{Access, Mode, OPS};


#[path = "common/rng.rs"]
mod rng;
use rng::{Rng, SIMPLE_MOVEMENT};
#[path = "common/smb.rs"]
mod smb;

fn main() {
    let frames: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let mut c = smb::world_1_1();
    let mut rng = Rng(0x9e37_79b9);
    // Access classes: read immediate, read memory, write, modify, other; operands: zero page or
    // indirect, absolute, relative.
    let mut class = [0u64; 5];
    let mut operand = [0u64; 3];
    let mut total = 0u64;
    for frame in 0..frames {
        if frame % 4 == 0 {
            c.set_buttons(0, SIMPLE_MOVEMENT[(rng.next() % 7) as usize]);
        }
        c.bus.ppu.frame_complete = false;
        let mut repeats = 0;
        while !c.bus.ppu.frame_complete {
            let pc = c.cpu.pc;
            let op = OPS[c.peek(pc) as usize];
            c.step();
            if c.cpu.pc == pc {
                repeats += 1;
                if repeats > 1 {
                    continue;
                }
            } else {
                repeats = 0;
            }
            total += 1;
            class[match (op.mn.access(), op.mode) {
                (Access::Read, Mode::Imm) => 0,
                (Access::Read, _) => 1,
                (Access::Write, _) => 2,
                (Access::Modify, _) => 3,
                (Access::Other, _) => 4,
            }] += 1;
            match op.mode {
                Mode::Zp | Mode::Zpx | Mode::Zpy | Mode::Izx | Mode::Izy => operand[0] += 1,
                Mode::Abs | Mode::Abx | Mode::Aby if op.mn.access() != Access::Other => operand[1] += 1,
                Mode::Rel => operand[2] += 1,
                _ => {}
            }
        }
    }
    let pct = |x: u64| 100.0 * x as f64 / total.max(1) as f64;
    println!("{total} instructions in {frames} frames ({:.0} a frame)", total as f64 / frames as f64);
    println!(
        "read immediate {:.1}%, read memory {:.1}%, write {:.1}%, read-modify-write {:.1}%, other {:.1}%",
        pct(class[0]),
        pct(class[1]),
        pct(class[2]),
        pct(class[3]),
        pct(class[4])
    );
    println!(
        "operand in zero page or indirect {:.1}%, absolute (not JMP/JSR) {:.1}%, relative (branches) {:.1}%",
        pct(operand[0]),
        pct(operand[1]),
        pct(operand[2])
    );
}

//! Super Mario Bros.'s instruction mix under protocol B's inputs: the share of executed
//! instructions by access class (read, immediate or from memory; write; read-modify-write; the
//! rest) and by operand kind (zero page or indirect, absolute, relative), which says how many
//! of the kernel's `cpu_read` calls a frame-loop round an inline read at one call site removes
//! (docs/kernel-notes.md, #107-#109). It also counts the quiet runs: consecutive instructions
//! whose operand lies in RAM or PRG ROM and that leave the interrupt flag alone (`quiet`), the
//! stretches a path with the CPU's registers and clock in registers could run without the bus's
//! per-cycle tests (kernel-notes, "What the slowest warps run"); a page-crossing dummy read and
//! the deadlines are not modelled. It prints the memory operands by addressing mode (the quiet
//! step's address paths, kernel-notes #144) and, for the instructions that are not quiet, why
//! (the PPU's registers, by register; I/O; the interrupt flag...). A host count, not a GPU
//! measurement: like the kernel, an idle loop's repeats (a `JMP` to itself) count once a frame,
//! but the sprite-0 wait, which the kernels skip in bulk, counts every pass.
//!
//! ```text
//! cargo run --release -p nes-core --example instruction_mix -- [FRAMES]
//! ```
//! From the first gameplay frame of World 1-1, SIMPLE_MOVEMENT actions from the benchmark's
//! seeded generator every 4 frames, FRAMES frames (default 2,000). The ROM comes from
//! `$NESLE_ROM_DIR` or the nesle cache
//! (`$XDG_CACHE_HOME/nesle/roms`, default `~/.cache/nesle/roms`).

use nes_core::cpu::ops::{Access, Mn, Mode, OPS};

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
    // The read, write and read-modify-write instructions with a memory operand, by mode (ZP,
    // ZPX, ZPY, ABS, ABX, ABY, IZX, IZY): how often each of the quiet step's address paths runs.
    let mut by_mode = [0u64; MEMORY_MODES.len()];
    let mut total = 0u64;
    // The instructions that are not quiet, by why (LOUD).
    let mut loud = [0u64; LOUD.len()];
    // The PPU register accesses among them, by register (reads 0-7, writes 8-15): outside and
    // inside vertical blank (lines 241-260).
    let mut ppu_regs = [[0u64; 2]; 16];
    // Quiet instructions, and of them those in runs of at least 8 and 32; the current run.
    let (mut quiet, mut in_8, mut in_32, mut run) = (0u64, 0u64, 0u64, 0u64);
    let mut end_run = |run: &mut u64| {
        if *run >= 8 {
            in_8 += *run;
        }
        if *run >= 32 {
            in_32 += *run;
        }
        *run = 0;
    };
    for frame in 0..frames {
        if frame % 4 == 0 {
            c.set_buttons(0, SIMPLE_MOVEMENT[(rng.next() % 7) as usize]);
        }
        c.bus.ppu.frame_complete = false;
        let mut repeats = 0;
        while !c.bus.ppu.frame_complete {
            let pc = c.cpu.pc;
            let op = OPS[c.peek(pc) as usize];
            let why = loud_reason(&c, op.mode, op.mn);
            let calm = why.is_none();
            // A PPU register access: the register (0-7), 8 more for a write.
            let write = op.mn.access() != Access::Read;
            let ppu_reg =
                (why == Some(LOUD_PPU)).then(|| (operand_address(&c, op.mode) & 7) as usize + 8 * write as usize);
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
            if calm {
                quiet += 1;
                run += 1;
            } else {
                end_run(&mut run);
            }
            if let Some(w) = why {
                loud[w] += 1;
            }
            if let Some(r) = ppu_reg {
                // The PPU was caught up to the access, so its line is the access's.
                ppu_regs[r][(241..=260).contains(&c.bus.ppu.scanline) as usize] += 1;
            }
            class[match (op.mn.access(), op.mode) {
                (Access::Read, Mode::Imm) => 0,
                (Access::Read, _) => 1,
                (Access::Write, _) => 2,
                (Access::Modify, _) => 3,
                (Access::Other, _) => 4,
            }] += 1;
            if op.mn.access() != Access::Other {
                if let Some(i) = MEMORY_MODES.iter().position(|&x| x == op.mode) {
                    by_mode[i] += 1;
                }
            }
            match op.mode {
                Mode::Zp | Mode::Zpx | Mode::Zpy | Mode::Izx | Mode::Izy => operand[0] += 1,
                Mode::Abs | Mode::Abx | Mode::Aby if op.mn.access() != Access::Other => operand[1] += 1,
                Mode::Rel => operand[2] += 1,
                _ => {}
            }
        }
    }
    end_run(&mut run);
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
    let modes: Vec<String> = MEMORY_MODES.iter().zip(by_mode).map(|(m, k)| format!("{m:?} {:.1}%", pct(k))).collect();
    println!("memory operands of reads, writes and read-modify-writes by mode: {}", modes.join(", "));
    let named: Vec<String> = LOUD.iter().zip(loud).map(|(name, k)| format!("{name} {:.2}%", pct(k))).collect();
    println!("not quiet, by why: {}", named.join(", "));
    let regs: Vec<String> = (0..16)
        .filter(|&r| ppu_regs[r] != [0, 0])
        .map(|r| {
            let [out, vbl] = ppu_regs[r];
            let rw = if r < 8 { "read" } else { "write" };
            format!("${:04X} {rw} {:.2}% ({:.2}% in vertical blank)", 0x2000 + (r & 7), pct(out + vbl), pct(vbl))
        })
        .collect();
    println!("PPU register accesses: {}", regs.join(", "));
    println!(
        "quiet (operand in RAM or PRG ROM, I flag untouched) {:.1}%, in quiet runs of 8 or more {:.1}%, of 32 or more {:.1}%",
        pct(quiet),
        pct(in_8),
        pct(in_32)
    );
}

/// The modes with a memory operand, as counted by mode.
const MEMORY_MODES: [Mode; 8] = [Mode::Zp, Mode::Zpx, Mode::Zpy, Mode::Abs, Mode::Abx, Mode::Aby, Mode::Izx, Mode::Izy];

/// The address the instruction at the CPU's PC reads or writes through an absolute, indexed or
/// indirect operand of `mode` (for other modes, the operand's two bytes).
fn operand_address(c: &nes_core::Console, mode: Mode) -> u16 {
    let pc = c.cpu.pc;
    let lo = c.peek(pc.wrapping_add(1));
    let word = u16::from_le_bytes([lo, c.peek(pc.wrapping_add(2))]);
    let pointer = |zp: u8| u16::from_le_bytes([c.peek(zp as u16), c.peek(zp.wrapping_add(1) as u16)]);
    match mode {
        Mode::Izx => pointer(lo.wrapping_add(c.cpu.x)),
        Mode::Abx => word.wrapping_add(c.cpu.x as u16),
        Mode::Aby => word.wrapping_add(c.cpu.y as u16),
        Mode::Izy => pointer(lo).wrapping_add(c.cpu.y as u16),
        _ => word,
    }
}

/// Why an instruction is not quiet (`loud_reason`), as printed.
const LOUD: [&str; 7] = [
    "interrupt flag or stack of RTI/PLP/BRK",
    "PPU registers ($2000-$3FFF)",
    "APU or I/O write ($4000-$4017, not $4014)",
    "OAM DMA ($4014)",
    "I/O read ($4000-$4017: the pads, $4015)",
    "cartridge space ($4018-$7FFF)",
    "JMP indirect",
];

/// The index in LOUD of the PPU's registers.
const LOUD_PPU: usize = 1;

/// Why the instruction at the CPU's PC, of `mode` and `mn`, is not quiet (its index in LOUD), or
/// None when it is: it reads or writes only RAM ($0000-$1FFF) and PRG ROM ($8000-$FFFF) and
/// leaves the interrupt flag as it is.
fn loud_reason(c: &nes_core::Console, mode: Mode, mn: Mn) -> Option<usize> {
    if matches!(mn, Mn::BRK | Mn::RTI | Mn::CLI | Mn::SEI | Mn::PLP) {
        return Some(0);
    }
    match mode {
        Mode::Imp | Mode::Acc | Mode::Imm | Mode::Rel | Mode::Zp | Mode::Zpx | Mode::Zpy => None,
        Mode::Abs if matches!(mn, Mn::JMP | Mn::JSR) => None,
        Mode::Ind => Some(6),
        _ => match operand_address(c, mode) {
            0x2000..=0x3fff => Some(LOUD_PPU),
            0x4014 => Some(3),
            0x4000..=0x4017 if mn.access() == Access::Write => Some(2),
            0x4000..=0x4017 => Some(4),
            0x4018..=0x7fff => Some(5),
            _ => None,
        },
    }
}

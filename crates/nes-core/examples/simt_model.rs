//! A host model of how a warp of 32 consoles schedules its threads under protocol B, now that
//! most instructions run on the kernel's quiet path (docs/kernel-notes.md, #116, #122): one
//! table-driven interpreter loop whose cost barely depends on which instruction a thread runs.
//! It compares, per frame part (12 parts of equal CPU time, the kernel's `NESLE_PHASES` since
//! #125; the tables of #122 were made with 8):
//! - `vote`: each round the threads at the lowest (stack, PC) run one instruction (the kernel
//!   today); a round is one quiet or one full step of that group;
//! - `free K`: each round every thread whose next instruction is quiet runs it, at whatever PC;
//!   a thread at an instruction that needs the full path waits, and the waiting threads at the
//!   lowest (stack, PC) run their full step when no thread can run a quiet one or when the
//!   oldest has waited K rounds (then in the same round as the quiet ones);
//! - `lead f`, `lead fm`, `major f`, `major fm`: the free schedule with K = inf, but only one
//!   quiet form (`f`) or one form and addressing mode (`fm`) a round, so the table-driven body
//!   does not diverge inside a round: the lowest-(stack, PC) quiet thread's, or the one most
//!   quiet threads share (`one_form`; docs/kernel-notes.md, "One quiet form a round");
//! - `opcode`, `form`: the vote widened to the other quiet threads at the same opcode or form;
//! - `class K`: the free schedule with a patience of K, but only one class of quiet form a
//!   round (memory or control: `one_class`), as a straight body split in two halves would run.
//!
//! With `SIMT_BLOCKS=1` the envs are ordered as the kernel's batch orders them (#179: by the
//! count, then each block of 16 warps by the PC its last frame ended at), and each frame also
//! prints, for the vote and the free schedule (patience 8, 64 and unlimited), the slowest and
//! the mean block's critical path in rounds: with a block barrier after each part (the sum over
//! parts of the block's slowest warp in it), and with one part of slack (a warp may start part
//! p + 1 once every warp of its block has finished part p - 1; kernel-notes #187).
//!
//! Per warp-frame it prints the rounds, how many ran a full step, the distinct quiet forms and
//! addressing modes a quiet round runs (what a table-driven interpreter serialises when threads
//! differ), and a cost in warp instructions with the weights given below. A model, not a
//! measurement: "quiet" is decided from the opcode and its addresses (RAM or PRG ROM), not from
//! the bus's deadlines, so it counts a few full steps too few.
//!
//! ```text
//! cargo run --release -p nes-core --example simt_model -- [WARPS] [STEP,STEP,...]
//! ```
//! Super Mario Bros. from World 1-1's first frame, WARPS x 32 envs (default 16), SIMPLE_MOVEMENT
//! actions from a seeded generator every 4 frames; the envs are sorted by their previous
//! frame's instructions before each traced frame, as the kernel's batch order is.

use nes_core::cpu::ops::{Access, Mn, Mode, OPS};
use nes_core::Console;

const WARP: usize = 32;
const PARTS: u64 = 12;
const FRAME_CYCLES: u64 = 29781;
/// Weights of the cost column, in warp instructions (kernel-notes #117's source counters): a
/// converged quiet round, each further quiet form or mode a round runs, a full step.
const QUIET_ROUND: f64 = 123.0;
const EXTRA_FORM: f64 = 20.0;
const EXTRA_MODE: f64 = 10.0;
const FULL_STEP: f64 = 350.0;

#[path = "common/rng.rs"]
mod rng;
use rng::{Rng, SIMPLE_MOVEMENT};
#[path = "common/blocks.rs"]
mod blocks;
#[path = "common/smb.rs"]
mod smb;

#[derive(Clone, Copy, PartialEq, Eq)]
struct Slot {
    pc: u16,
    sp: u8,
    op: u8,
    /// Whether the kernel's quiet path could run it (its form, bank and addresses).
    quiet: bool,
    /// The frame part it starts in.
    part: u8,
}

impl Slot {
    fn key(&self) -> u32 {
        (self.sp as u32) << 16 | self.pc as u32
    }
}

/// kernels/quiet.cuh's forms: 0 none, then read, write, modify, modify A, branch, JMP,
/// JMP indirect, JSR, RTS, push, PLA, implied.
fn form(op: u8) -> u8 {
    let o = OPS[op as usize];
    if o.mn.unofficial() || matches!(o.mn, Mn::BRK | Mn::RTI | Mn::PLP | Mn::CLI | Mn::SEI) {
        return 0;
    }
    match o.mn.access() {
        Access::Read => 1,
        Access::Write => 2,
        Access::Modify => {
            if o.mode == Mode::Acc {
                4
            } else {
                3
            }
        }
        Access::Other => match (o.mn, o.mode) {
            (_, Mode::Rel) => 5,
            (Mn::JMP, Mode::Ind) => 7,
            (Mn::JMP, _) => 6,
            (Mn::JSR, _) => 8,
            (Mn::RTS, _) => 9,
            (Mn::PHA | Mn::PHP, _) => 10,
            (Mn::PLA, _) => 11,
            _ => 12,
        },
    }
}

fn quiet_addr(a: u16) -> bool {
    !(0x2000..0x8000).contains(&a)
}

/// Whether the instruction at the CPU's PC passes cpu_quiet_step's tests but the deadline's.
fn quiet_now(c: &Console) -> bool {
    let pc = c.cpu.pc;
    if pc < 0x8000 || (pc & 0x1fff) > 0x1ffd {
        return false;
    }
    let op = c.peek(pc);
    let f = form(op);
    if f == 0 {
        return false;
    }
    let (b1, b2) = (c.peek(pc.wrapping_add(1)), c.peek(pc.wrapping_add(2)));
    let (x, y) = (c.cpu.x, c.cpu.y);
    let le = |lo: u8, hi: u8| (hi as u16) << 8 | lo as u16;
    match f {
        1..=3 => {
            let mode = OPS[op as usize].mode;
            let (base, idx) = match mode {
                Mode::Imp | Mode::Acc | Mode::Imm => return true,
                // Page zero is RAM.
                Mode::Zp | Mode::Zpx | Mode::Zpy => return true,
                Mode::Izx => {
                    let p = b1.wrapping_add(x);
                    let a = le(c.peek(p as u16), c.peek(p.wrapping_add(1) as u16));
                    return if f == 1 { quiet_addr(a) } else { a < 0x2000 };
                }
                Mode::Izy => (le(c.peek(b1 as u16), c.peek(b1.wrapping_add(1) as u16)), y),
                Mode::Abs => (le(b1, b2), 0),
                Mode::Abx => (le(b1, b2), x),
                Mode::Aby => (le(b1, b2), y),
                _ => return true,
            };
            let a = base.wrapping_add(idx as u16);
            let early = (base & 0xff00) | (a & 0xff);
            if (early != a || f != 1) && !quiet_addr(early) {
                return false;
            }
            if f == 1 {
                quiet_addr(a)
            } else {
                a < 0x2000
            }
        }
        7 => quiet_addr(le(b1, b2)),
        _ => true,
    }
}

/// One frame, instruction by instruction (interrupt sequences as full steps), each idle or
/// poll loop kept once.
fn traced_frame(c: &mut Console) -> Vec<Slot> {
    let mut t: Vec<Slot> = Vec::new();
    c.bus.ppu.frame_complete = false;
    let start = c.cycles();
    while !c.bus.ppu.frame_complete {
        let (pc, sp) = (c.cpu.pc, c.cpu.s);
        let op = c.peek(pc);
        let quiet = quiet_now(c);
        let part = ((c.cycles() - start) / (FRAME_CYCLES / PARTS)).min(PARTS - 1) as u8;
        c.step();
        // An interrupt sequence pushes three bytes and is no instruction of the quiet path.
        let interrupt = sp.wrapping_sub(c.cpu.s) == 3 && op != 0x00;
        t.push(Slot { pc, sp, op, quiet: quiet && !interrupt, part });
        for l in [1, 3] {
            let n = t.len();
            let same =
                |a: &[Slot], b: &[Slot]| a.iter().zip(b).all(|(p, q)| p.pc == q.pc && p.op == q.op && p.sp == q.sp);
            if n >= 2 * l && same(&t[n - 2 * l..n - l], &t[n - l..]) {
                t.truncate(n - l);
            }
        }
    }
    c.bus.ppu.frame_complete = false;
    t
}

#[derive(Default, Clone, Copy)]
struct Tally {
    rounds: u64,
    full: u64,
    forms: u64,
    modes: u64,
    quiet_rounds: u64,
    cost: f64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.rounds += o.rounds;
        self.full += o.full;
        self.forms += o.forms;
        self.modes += o.modes;
        self.quiet_rounds += o.quiet_rounds;
        self.cost += o.cost;
    }
}

/// One round's quiet group: its distinct forms and modes, and its cost.
fn quiet_round(t: &mut Tally, ops: &[u8]) {
    if ops.is_empty() {
        return;
    }
    let mut forms = 0u16;
    let mut modes = 0u16;
    for &op in ops {
        forms |= 1 << form(op);
        modes |= 1 << OPS[op as usize].mode as u16;
    }
    let (f, m) = (forms.count_ones() as u64, modes.count_ones() as u64);
    t.quiet_rounds += 1;
    t.forms += f;
    t.modes += m;
    t.cost += QUIET_ROUND + EXTRA_FORM * (f - 1) as f64 + EXTRA_MODE * (m - 1) as f64;
}

/// The kernel today: the (stack, PC) vote, part by part.
fn vote(traces: &[Vec<Slot>]) -> Tally {
    let mut t = Tally::default();
    let mut at = vec![0usize; traces.len()];
    for part in 0..PARTS as u8 {
        loop {
            let next = |j: usize| traces[j].get(at[j]).filter(|s| s.part == part);
            let Some(low) = (0..traces.len()).filter_map(|j| next(j).map(|s| s.key())).min() else { break };
            let group: Vec<usize> = (0..traces.len()).filter(|&j| next(j).is_some_and(|s| s.key() == low)).collect();
            t.rounds += 1;
            let quiet: Vec<u8> = group.iter().map(|&j| traces[j][at[j]]).filter(|s| s.quiet).map(|s| s.op).collect();
            quiet_round(&mut t, &quiet);
            if quiet.len() < group.len() {
                t.full += 1;
                t.cost += FULL_STEP;
            }
            for j in group {
                at[j] += 1;
            }
        }
    }
    t
}

/// The vote, widened: the threads at the lowest (stack, PC) run as in `vote`, and with them every
/// other thread whose next instruction is quiet and `same` as theirs (the same opcode, or the same
/// quiet form), which a table-driven interpreter runs through the same code.
fn widened(traces: &[Vec<Slot>], same: impl Fn(u8, u8) -> bool) -> Tally {
    let mut t = Tally::default();
    let mut at = vec![0usize; traces.len()];
    for part in 0..PARTS as u8 {
        loop {
            let next = |at: &[usize], j: usize| traces[j].get(at[j]).copied().filter(|s| s.part == part);
            let Some(lead) = (0..traces.len()).filter_map(|j| next(&at, j)).min_by_key(|s| s.key()) else { break };
            t.rounds += 1;
            let mut quiet = Vec::new();
            let mut full = false;
            for j in 0..traces.len() {
                let Some(s) = next(&at, j) else { continue };
                let runs = if s.key() == lead.key() { true } else { lead.quiet && s.quiet && same(s.op, lead.op) };
                if runs {
                    if s.quiet {
                        quiet.push(s.op);
                    } else {
                        full = true;
                    }
                    at[j] += 1;
                }
            }
            quiet_round(&mut t, &quiet);
            if full {
                t.full += 1;
                t.cost += FULL_STEP;
            }
        }
    }
    t
}

/// Every quiet thread each round; the full steps waiting as described at the top.
fn free(traces: &[Vec<Slot>], patience: u64) -> Tally {
    free_picking(traces, patience, |quiet| vec![true; quiet.len()])
}

/// The free schedule with one quiet form (and, with `modes`, one addressing mode) a round, so a
/// table-driven body does not diverge inside it: each round the quiet threads whose (form, mode)
/// is the chosen one run; the choice is the lowest-(stack, PC) quiet thread's (`majority`
/// false) or the one most quiet threads share (ties: the lowest key's). A thread at a full-path
/// instruction waits until no thread can run a quiet one; then the waiting threads at the lowest
/// (stack, PC) run their full step together, as `free` with K = inf.
fn one_form(traces: &[Vec<Slot>], modes: bool, majority: bool) -> Tally {
    let kind = |op: u8| (form(op), if modes { OPS[op as usize].mode as u8 } else { 0 });
    free_picking(traces, u64::MAX, |quiet| {
        let lead = quiet.iter().min_by_key(|s| s.key()).unwrap();
        let mut chosen = kind(lead.op);
        if majority {
            let mut counts = std::collections::BTreeMap::new();
            for s in quiet {
                *counts.entry(kind(s.op)).or_insert(0u32) += 1;
            }
            let best = counts.values().copied().max().unwrap();
            if counts[&chosen] != best {
                chosen = *counts.iter().find(|(_, &c)| c == best).unwrap().0;
            }
        }
        quiet.iter().map(|s| kind(s.op) == chosen).collect()
    })
}

/// The free schedule with one class of quiet form a round, the lowest-(stack, PC) quiet thread's:
/// memory (reads, writes, read-modify-writes, implied) or control (branches, jumps, calls,
/// returns, pushes, pulls), as a straight body split in two halves would run one half a round.
fn one_class(traces: &[Vec<Slot>], patience: u64) -> Tally {
    let control = |op: u8| matches!(form(op), 5..=11);
    free_picking(traces, patience, |quiet| {
        let lead = quiet.iter().min_by_key(|s| s.key()).unwrap();
        quiet.iter().map(|s| control(s.op) == control(lead.op)).collect()
    })
}

/// The free schedules: each round the quiet threads `pick` keeps (given their next
/// instructions, never none of them) run; the full steps wait as described at the top.
fn free_picking(traces: &[Vec<Slot>], patience: u64, pick: impl Fn(&[Slot]) -> Vec<bool>) -> Tally {
    let mut t = Tally::default();
    let mut at = vec![0usize; traces.len()];
    let mut since = vec![0u64; traces.len()];
    for part in 0..PARTS as u8 {
        loop {
            let next = |at: &[usize], j: usize| traces[j].get(at[j]).copied().filter(|s| s.part == part);
            let live: Vec<usize> = (0..traces.len()).filter(|&j| next(&at, j).is_some()).collect();
            if live.is_empty() {
                break;
            }
            let (quiet, blocked): (Vec<usize>, Vec<usize>) = live.iter().partition(|&&j| next(&at, j).unwrap().quiet);
            for &j in &blocked {
                since[j] += 1;
            }
            let due = quiet.is_empty() || blocked.iter().any(|&j| since[j] > patience);
            t.rounds += 1;
            let slots: Vec<Slot> = quiet.iter().map(|&j| next(&at, j).unwrap()).collect();
            let runs: Vec<usize> = if slots.is_empty() {
                Vec::new()
            } else {
                quiet.iter().zip(pick(&slots)).filter(|&(_, keep)| keep).map(|(&j, _)| j).collect()
            };
            quiet_round(&mut t, &runs.iter().map(|&j| next(&at, j).unwrap().op).collect::<Vec<_>>());
            for &j in &runs {
                at[j] += 1;
            }
            if due && !blocked.is_empty() {
                let low = blocked.iter().map(|&j| next(&at, j).unwrap().key()).min().unwrap();
                t.full += 1;
                t.cost += FULL_STEP;
                for &j in &blocked {
                    if next(&at, j).unwrap().key() == low {
                        at[j] += 1;
                        since[j] = 0;
                    }
                }
            }
        }
    }
    t
}

const BLOCK_WARPS: usize = 16;

/// Each warp's rounds in each part under `run` (the traces cut to one part at a time).
fn part_rounds(traces: &[Vec<Slot>], run: &dyn Fn(&[Vec<Slot>]) -> Tally) -> Vec<Vec<u64>> {
    traces
        .chunks(WARP)
        .map(|w| {
            (0..PARTS as u8)
                .map(|p| {
                    let cut: Vec<Vec<Slot>> =
                        w.iter().map(|t| t.iter().copied().filter(|s| s.part == p).collect()).collect();
                    run(&cut).rounds
                })
                .collect()
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let warps: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(16);
    let steps: Vec<usize> = args
        .get(1)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![30, 100, 200]);
    let boot = smb::world_1_1();
    let n = warps * WARP;
    let mut envs: Vec<(Console, u64)> = (0..n).map(|_| (boot.clone(), 0)).collect();
    let mut rngs: Vec<Rng> = (0..n).map(Rng::for_env).collect();
    let last = steps.iter().copied().max().unwrap_or(0);
    let policies: [&str; 12] = [
        "vote", "opcode", "form", "free 0", "free 8", "free inf", "lead f", "lead fm", "major f", "major fm",
        "class 8", "class 64",
    ];
    let run = |name: &str, w: &[Vec<Slot>]| match name {
        "vote" => vote(w),
        "opcode" => widened(w, |a, b| a == b),
        "form" => widened(w, |a, b| form(a) == form(b)),
        "free 0" => free(w, 0),
        "free 8" => free(w, 8),
        "free 64" => free(w, 64),
        "lead f" => one_form(w, false, false),
        "lead fm" => one_form(w, true, false),
        "major f" => one_form(w, false, true),
        "major fm" => one_form(w, true, true),
        "class 8" => one_class(w, 8),
        "class 64" => one_class(w, 64),
        _ => free(w, u64::MAX),
    };
    println!("{n} envs, protocol B, {PARTS} parts a frame; per warp-frame, mean over warps and the step's 4 frames (slowest warp in brackets)");
    println!(
        "{:>5} {:>9} {:>7} {:>7} {:>16} {:>7} {:>6} {:>6} {:>18}",
        "step", "policy", "instr", "longest", "rounds", "full", "forms", "modes", "cost"
    );
    for step in 0..=last {
        for ((c, _), r) in envs.iter_mut().zip(rngs.iter_mut()) {
            c.set_buttons(0, SIMPLE_MOVEMENT[(r.next() % 7) as usize]);
        }
        if !steps.contains(&step) {
            for (c, count) in envs.iter_mut() {
                c.run_frames(3);
                if steps.contains(&(step + 1)) {
                    *count = traced_frame(c).len() as u64;
                } else {
                    c.run_frame();
                }
            }
            continue;
        }
        let mut sums = vec![Tally::default(); policies.len()];
        let mut slowest = vec![Tally::default(); policies.len()];
        let (mut instr, mut longest, mut quiet) = (0u64, 0u64, 0u64);
        let blocks = std::env::var_os("SIMT_BLOCKS").is_some();
        for f in 0..4 {
            envs.sort_by_key(|e| e.1);
            if blocks {
                for b in envs.chunks_mut(BLOCK_WARPS * WARP) {
                    b.sort_by_key(|e| e.0.cpu.pc);
                }
            }
            let traces: Vec<Vec<Slot>> = envs.iter_mut().map(|(c, _)| traced_frame(c)).collect();
            for ((_, count), t) in envs.iter_mut().zip(&traces) {
                *count = t.len() as u64;
                instr += t.len() as u64;
                quiet += t.iter().filter(|s| s.quiet).count() as u64;
            }
            for w in traces.chunks(WARP) {
                longest += w.iter().map(|t| t.len() as u64).max().unwrap_or(0);
            }
            if blocks {
                for name in ["vote", "free 8", "free 64", "free inf", "class 64"] {
                    let rounds = part_rounds(&traces, &|w: &[Vec<Slot>]| run(name, w));
                    let mut cells = Vec::new();
                    for slack in [0, 1] {
                        let paths: Vec<u64> =
                            rounds.chunks(BLOCK_WARPS).map(|b| blocks::block_path(b, slack)).collect();
                        let mean = paths.iter().sum::<u64>() as f64 / paths.len() as f64;
                        cells.push(format!(
                            "slack {slack}: slowest block {} mean {mean:.0}",
                            paths.iter().max().unwrap()
                        ));
                    }
                    eprintln!("step {step} frame {f} {name}: {}", cells.join("; "));
                }
            }
            for (k, name) in policies.iter().enumerate() {
                let per_warp: Vec<Tally> = traces.chunks(WARP).map(|w| run(name, w)).collect();
                for t in &per_warp {
                    sums[k].add(t);
                }
                // The slowest warp of this frame by the policy's cost.
                let worst = per_warp.iter().max_by(|a, b| a.cost.total_cmp(&b.cost)).copied().unwrap_or_default();
                slowest[k].add(&worst);
            }
        }
        let wf = (4 * warps) as f64;
        eprintln!(
            "step {step}: {:.0} instructions an env-frame, {:.1}% quiet by the model",
            instr as f64 / (4 * n) as f64,
            100.0 * quiet as f64 / instr as f64
        );
        for (k, name) in policies.iter().enumerate() {
            let s = &sums[k];
            let w = &slowest[k];
            let qr = s.quiet_rounds.max(1) as f64;
            println!(
                "{step:>5} {name:>9} {:>7.0} {:>7.0} {:>7.0} [{:>6.0}] {:>7.0} {:>6.2} {:>6.2} {:>8.0} [{:>7.0}]",
                instr as f64 / (4 * n) as f64,
                longest as f64 / wf,
                s.rounds as f64 / wf,
                w.rounds as f64 / 4.0,
                s.full as f64 / wf,
                s.forms as f64 / qr,
                s.modes as f64 / qr,
                s.cost / wf,
                w.cost / 4.0
            );
        }
    }
}

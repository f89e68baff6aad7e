//! Straight-line blocks of a ROM's hot code for the kernels' block path (kernel-notes, "The
//! ROM's code as straight-line blocks"): traces Super Mario Bros. under protocol B on nes-core,
//! cuts the PRG ROM code it ran into blocks, and writes them as a CUDA header
//! (kernels/blocks_gen.cuh) that the kernels include with `-DNESLE_BLOCKS=1`.
//!
//! ```text
//! cargo run --release -p nes-core --example block_gen -- [ENVS] [STEPS] [COVER] > blocks_gen.cuh
//! ```
//! A block is a run of instructions the quiet path may take (kernels/quiet.cuh), in address
//! order, that ends after a branch, jump, call or return, before an instruction the quiet path
//! never takes, and before any place the trace entered other than from the instruction before
//! it (a join, where threads arriving from elsewhere meet the ones running through). Every
//! instruction of a block is an entry of its own, so a thread stopped inside a block (at its
//! part's end, or at an instruction whose address the quiet path refused) resumes there; an
//! entry runs the rest of its block only when all of it fits before the quiet path's bound. The
//! blocks whose instructions make up the first COVER (default 0.99) of the quiet path's traced
//! instructions are written, hottest first. The header holds code derived from the ROM, so it
//! is never committed.

use nes_core::cpu::ops::{len, Mn, Mode, OPS};
use std::collections::{BTreeMap, BTreeSet};

#[path = "common/rng.rs"]
mod rng;
use rng::{Rng, SIMPLE_MOVEMENT};
#[path = "common/smb.rs"]
mod smb;

/// Whether kernels/quiet.cuh's `cpu_quiet_form` gives the opcode a quiet form.
fn quiet(op: u8) -> bool {
    let o = OPS[op as usize];
    !o.mn.unofficial() && !matches!(o.mn, Mn::BRK | Mn::RTI | Mn::PLP | Mn::CLI | Mn::SEI)
}

/// Whether the quiet path could take the instruction `op b1 b2` at all: an absolute operand
/// (indexed or not) below $2000 or in PRG ROM, as a register's or open bus's never is.
fn may_be_quiet(op: u8, b1: u8, b2: u8) -> bool {
    let base = u16::from_le_bytes([b1, b2]);
    let absolute = matches!(OPS[op as usize].mode, Mode::Abs | Mode::Abx | Mode::Aby | Mode::Ind);
    let jump = matches!(OPS[op as usize].mn, Mn::JMP | Mn::JSR) && OPS[op as usize].mode == Mode::Abs;
    quiet(op) && (!absolute || jump || !(0x2000..0x8000).contains(&base))
}

/// Whether the opcode ends a block: it may go elsewhere than the next instruction.
fn ends_block(op: u8) -> bool {
    let o = OPS[op as usize];
    o.mode == Mode::Rel || matches!(o.mn, Mn::JMP | Mn::JSR | Mn::RTS)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let envs: usize = args.get(1).map_or(128, |a| a.parse().expect("ENVS"));
    let steps: usize = args.get(2).map_or(230, |a| a.parse().expect("STEPS"));
    let cover: f64 = args.get(3).map_or(0.99, |a| a.parse().expect("COVER"));
    let boot = smb::world_1_1();
    let prg = {
        let rom = std::fs::read(smb::rom_dir().join("super-mario-bros.nes")).expect("the SMB ROM");
        // PRG ROM where the header says (after a trainer, if any); the blocks assume NROM's 32 KiB.
        let h = nes_core::cart::Header::parse(&rom).expect("an iNES header");
        assert_eq!(h.prg_rom, 32768, "the block path's entries cover 32 KiB of PRG ROM");
        rom[h.prg_offset()..h.prg_offset() + h.prg_rom].to_vec()
    };
    let byte = |pc: u16| prg[(pc & 0x7fff) as usize];
    // How often each PRG ROM address ran, and the addresses entered other than from the
    // instruction before them.
    let mut count: BTreeMap<u16, u64> = BTreeMap::new();
    let mut joins: BTreeSet<u16> = BTreeSet::new();
    for e in 0..envs {
        let mut c = boot.clone();
        let mut r = Rng::for_env(e);
        let mut prev: Option<u16> = None;
        for _ in 0..steps {
            c.set_buttons(0, SIMPLE_MOVEMENT[(r.next() % 7) as usize]);
            for _ in 0..4 {
                c.bus.ppu.frame_complete = false;
                while !c.bus.ppu.frame_complete {
                    let pc = c.cpu.pc;
                    if pc >= 0x8000 {
                        *count.entry(pc).or_default() += 1;
                        let through = prev.is_some_and(|p| {
                            let op = byte(p);
                            quiet(op) && !ends_block(op) && p.wrapping_add(len(OPS[op as usize].mode)) == pc
                        });
                        if !through {
                            joins.insert(pc);
                        }
                    }
                    prev = Some(pc);
                    c.step();
                }
            }
        }
    }
    // Blocks: from each address the trace ran that no block runs into, on through the
    // instructions after it while they may continue one.
    // A window's last two bytes have QF_NONE code words (kernels/quiet.cuh `cpu_code_word`).
    let takes = |pc: u16| {
        let i = (pc & 0x7fff) as usize;
        let b = |k: usize| prg.get(i + k).copied().unwrap_or(0);
        // A `JMP` to itself is the idle loop, which the turn fast-forwards (nes_skip_idle_loop).
        let idle = b(0) == 0x4c && u16::from_le_bytes([b(1), b(2)]) == pc;
        may_be_quiet(b(0), b(1), b(2)) && (pc & 0x1fff) < 0x1ffe && !idle
    };
    // The instruction a block runs on to after `pc`, if any.
    let follows = |pc: u16| -> Option<u16> {
        if !takes(pc) || ends_block(byte(pc)) {
            return None;
        }
        let next = pc.wrapping_add(len(OPS[byte(pc) as usize].mode));
        let ok = next >= 0x8000 && count.contains_key(&next) && takes(next) && !joins.contains(&next);
        ok.then_some(next)
    };
    let inner: BTreeSet<u16> = count.keys().filter_map(|&pc| follows(pc)).collect();
    let mut blocks: Vec<(u64, Vec<u16>)> = Vec::new();
    for &start in count.keys().filter(|pc| !inner.contains(pc) && takes(**pc)) {
        let mut b = vec![start];
        while let Some(next) = follows(*b.last().unwrap()) {
            b.push(next);
        }
        let weight = b.iter().map(|pc| count[pc]).sum();
        blocks.push((weight, b));
    }
    blocks.sort_by(|a, b| b.0.cmp(&a.0).then(a.1[0].cmp(&b.1[0])));
    let total: u64 = blocks.iter().map(|b| b.0).sum();
    let mut kept = 0u64;
    let mut n = 0;
    while n < blocks.len() && (kept as f64) < cover * total as f64 {
        kept += blocks[n].0;
        n += 1;
    }
    blocks.truncate(n);
    let insns: usize = blocks.iter().map(|b| b.1.len()).sum();
    let entered: u64 = blocks.iter().map(|b| count[&b.1[0]]).sum();
    eprintln!(
        "{} addresses ran; {} blocks of {} instructions kept ({:.1}% of the quiet path's traced instructions), \
         {:.2} instructions a block, {:.2} a block entered",
        count.len(),
        n,
        insns,
        100.0 * kept as f64 / total as f64,
        insns as f64 / n.max(1) as f64,
        kept as f64 / entered.max(1) as f64
    );
    if std::env::var_os("BLOCK_GEN_TOP").is_some() {
        for (w, b) in blocks.iter().take(40) {
            let pcs: Vec<String> = b.iter().map(|pc| format!("{pc:04x}:{:02x}", byte(*pc))).collect();
            eprintln!("{w:>10} entered {:>9}  {}", count[&b[0]], pcs.join(" "));
        }
    }
    if let Some(warps) = std::env::var("BLOCK_GEN_MODEL").ok().and_then(|v| v.parse().ok()) {
        model(&boot, &blocks, warps);
    }
    emit(&prg, &blocks);
}

/// One traced instruction: its (stack, PC) key.
fn key(c: &nes_core::Console) -> u32 {
    (c.cpu.s as u32) << 16 | c.cpu.pc as u32
}

/// A frame's (stack, PC) keys, instruction by instruction, each idle or poll loop kept once (the
/// kernels' fast-forwards: a trace ending in two passes of a 1- or 3-instruction loop drops the
/// second, as crates/nes-core/examples/warp_model.rs does).
fn traced_frame(c: &mut nes_core::Console) -> Vec<u32> {
    let mut t: Vec<u32> = Vec::new();
    c.bus.ppu.frame_complete = false;
    while !c.bus.ppu.frame_complete {
        t.push(key(c));
        c.step();
        for l in [1, 3] {
            let n = t.len();
            if n >= 2 * l && t[n - 2 * l..n - l] == t[n - l..] {
                t.truncate(n - l);
            }
        }
    }
    c.bus.ppu.frame_complete = false;
    t
}

/// A frame's turns with the block path: from each instruction that is a block's entry, the
/// instructions that follow the block's order, to its end; every other instruction alone. Each
/// turn keyed by its first instruction's (stack, PC).
fn turns(t: &[u32], entries: &std::collections::HashMap<u16, (usize, usize)>, blocks: &[(u64, Vec<u16>)]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        out.push(t[i]);
        let mut m = 1;
        if let Some(&(b, j)) = entries.get(&(t[i] as u16)) {
            let code = &blocks[b].1;
            while j + m < code.len() && i + m < t.len() && t[i + m] as u16 == code[j + m] {
                m += 1;
            }
        }
        i += m;
    }
    out
}

/// The (stack, PC) vote's rounds for a warp whose threads take `traces`' turns.
fn vote_rounds(traces: &[Vec<u32>]) -> u64 {
    let mut at = vec![0usize; traces.len()];
    let mut rounds = 0;
    while let Some(low) = traces.iter().zip(&at).filter_map(|(t, &i)| t.get(i).copied()).min() {
        rounds += 1;
        for (t, i) in traces.iter().zip(at.iter_mut()) {
            if t.get(*i) == Some(&low) {
                *i += 1;
            }
        }
    }
    rounds
}

/// `BLOCK_GEN_MODEL=WARPS`: WARPS x 32 other envs of protocol B (seeded apart from the traced
/// ones), in the envs' own order (no regrouping); at steps 30, 100 and 200 each frame's
/// slowest and mean warp in vote rounds, per instruction (today's turns) and with the blocks.
fn model(boot: &nes_core::Console, blocks: &[(u64, Vec<u16>)], warps: usize) {
    let entries: std::collections::HashMap<u16, (usize, usize)> =
        blocks.iter().enumerate().flat_map(|(b, (_, code))| code.iter().enumerate().map(move |(j, &pc)| (pc, (b, j)))).collect();
    let n = warps * 32;
    let mut envs: Vec<(nes_core::Console, Rng)> = (0..n).map(|i| (boot.clone(), Rng::for_env(10_000 + i))).collect();
    eprintln!("model: {n} envs; per step, the 4 frames' sums: slowest warp's rounds per instruction -> with blocks (ratio); the same for the mean warp; instructions a turn");
    for step in 0..=200 {
        for (c, r) in envs.iter_mut() {
            c.set_buttons(0, SIMPLE_MOVEMENT[(r.next() % 7) as usize]);
        }
        if ![30, 100, 200].contains(&step) {
            for (c, _) in envs.iter_mut() {
                c.run_frames(4);
            }
            continue;
        }
        let (mut slow_i, mut slow_b, mut mean_i, mut mean_b, mut insns, mut nturns) = (0u64, 0u64, 0f64, 0f64, 0usize, 0usize);
        for _ in 0..4 {
            let traces: Vec<Vec<u32>> = envs.iter_mut().map(|(c, _)| traced_frame(c)).collect();
            let tt: Vec<Vec<u32>> = traces.iter().map(|t| turns(t, &entries, blocks)).collect();
            insns += traces.iter().map(Vec::len).sum::<usize>();
            nturns += tt.iter().map(Vec::len).sum::<usize>();
            let ri: Vec<u64> = traces.chunks(32).map(vote_rounds).collect();
            let rb: Vec<u64> = tt.chunks(32).map(vote_rounds).collect();
            slow_i += ri.iter().max().unwrap();
            slow_b += rb.iter().max().unwrap();
            mean_i += ri.iter().sum::<u64>() as f64 / warps as f64;
            mean_b += rb.iter().sum::<u64>() as f64 / warps as f64;
        }
        eprintln!(
            "step {step:>3}: slowest {slow_i} -> {slow_b} ({:.2}x); mean {mean_i:.0} -> {mean_b:.0} ({:.2}x); {:.2} instructions a turn",
            slow_i as f64 / slow_b as f64,
            mean_i / mean_b,
            insns as f64 / nturns as f64
        );
    }
}

/// The header: a switch from each address's entry to its place in the blocks' straight-line
/// code, the entry of each address (its number, its place in its block and the instructions
/// from there to the block's end), and PRG ROM bytes that say the ROM is the one traced.
fn emit(prg: &[u8], blocks: &[(u64, Vec<u16>)]) {
    let mut entry = vec![0u32; 32768];
    let mut cases = String::new();
    let mut code = String::new();
    let mut id = 0u32;
    for (k, (_, b)) in blocks.iter().enumerate() {
        assert!(b.len() < 256, "a block's places and lengths fit a byte");
        for (j, &pc) in b.iter().enumerate() {
            id += 1;
            let i = (pc & 0x7fff) as usize;
            entry[i] = id | ((b.len() - j) as u32) << 16 | (j as u32) << 24;
            cases += &format!("    case {id}: goto b{k}_{j};\n");
            code += &format!(
                "b{k}_{j}: NESLE_BLOCK_INSN({j}, 0x{pc:04x}, 0x{:02x}, 0x{:02x}, 0x{:02x});\n",
                prg[i],
                prg.get(i + 1).copied().unwrap_or(0),
                prg.get(i + 2).copied().unwrap_or(0)
            );
        }
        code += &format!("    return {} - first;\n", b.len());
    }
    assert!(id < 1 << 16, "entries fit 16 bits");
    println!("// Generated by crates/nes-core/examples/block_gen.rs from a ROM: never commit.");
    println!("#pragma once");
    println!("#define NESLE_BLOCKS_PRG_LEN {}", prg.len());
    // 64 of the ROM's bytes, one in every 512, for `nes_blocks_match`.
    let check: Vec<String> = (0..64).map(|k| format!("0x{:02x}", prg[k * 512 + 7])).collect();
    println!("static __device__ const u8 nesle_blocks_check[64] = {{{}}};", check.join(","));
    let table: Vec<String> = entry.iter().map(|e| e.to_string()).collect();
    println!("static __device__ const u32 nesle_block_entry[32768] = {{{}}};", table.join(","));
    // The block path (kernels/console.cuh) defines the macro before it includes this.
    println!("NESLE_FN u32 nes_run_block(Nes& n, CpuRegs& r, u32& steps, u32 entry, u32 first, u32& how, u32& last) {{");
    println!("    switch (entry & 0xffff) {{");
    print!("{cases}");
    println!("    default: return 0;");
    println!("    }}");
    print!("{code}");
    println!("}}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_operands_the_quiet_path_can_take_are_in_blocks() {
        assert!(may_be_quiet(0x8d, 0x00, 0x02), "STA $0200: RAM");
        assert!(!may_be_quiet(0x8d, 0x00, 0x20), "STA $2000: a PPU register");
        assert!(!may_be_quiet(0x9d, 0x16, 0x40), "STA $4016,X: from the controllers' page");
        assert!(may_be_quiet(0xbd, 0x00, 0x80), "LDA $8000,X: PRG ROM");
        assert!(may_be_quiet(0x4c, 0x00, 0x60), "JMP $6000: a jump reads no operand there");
        assert!(!may_be_quiet(0x6c, 0x00, 0x60), "JMP ($6000): its pointer in PRG RAM");
        assert!(!may_be_quiet(0x00, 0, 0), "BRK");
        assert!(!may_be_quiet(0xa7, 0x10, 0), "LAX: unofficial");
        assert!(ends_block(0xd0) && ends_block(0x60) && ends_block(0x20) && !ends_block(0xc8));
    }

    #[test]
    fn a_turn_runs_its_block_while_the_trace_follows_it() {
        let blocks = vec![(0, vec![0x8000, 0x8002, 0x8004])];
        let entries: std::collections::HashMap<u16, (usize, usize)> =
            [(0x8000, (0, 0)), (0x8002, (0, 1)), (0x8004, (0, 2))].into_iter().collect();
        let sp = |pc: u32| 0xfd << 16 | pc;
        // The whole block, then an address without an entry.
        let t = [sp(0x8000), sp(0x8002), sp(0x8004), sp(0x9000)];
        assert_eq!(turns(&t, &entries, &blocks), vec![sp(0x8000), sp(0x9000)]);
        // Entered inside; then left early (a refused or diverted instruction).
        let t = [sp(0x8002), sp(0x8004), sp(0x8000), sp(0x8002), sp(0x9000), sp(0x8004)];
        assert_eq!(turns(&t, &entries, &blocks), vec![sp(0x8002), sp(0x8000), sp(0x9000), sp(0x8004)]);
    }

    #[test]
    fn the_vote_runs_each_lowest_key_once_for_every_thread_at_it() {
        let traces = vec![vec![1, 2, 3], vec![1, 3], vec![3]];
        assert_eq!(vote_rounds(&traces), 3);
        let traces = vec![vec![2, 1], vec![1, 2]];
        // 1 (second), 2 (both), 1 (first).
        assert_eq!(vote_rounds(&traces), 3);
    }
}

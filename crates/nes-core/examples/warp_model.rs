//! A host model of warp divergence under protocol B (docs/kernel-notes.md, #20): how many
//! instruction slots a warp of 32 consoles issues for one frame, with each thread at its own
//! instruction (`aligned`: the kernel's frame loop today, iteration k runs every thread's k-th
//! instruction and costs one slot per distinct opcode among them) and with the PC vote
//! (`vote`: each round runs the threads at the lowest PC, one slot per distinct opcode among
//! them). `ideal` is the longest thread alone (a warp in lockstep); `work` the instructions of
//! all 32 threads. A model, not a measurement: an opcode's slot stands for the whole
//! instruction, PPU catch-up work is not counted, and the idle-loop and `$2002`-poll
//! fast-forwards are one slot per loop (as one iteration plus the skip).
//!
//! ```text
//! cargo run --release -p nes-core --example warp_model -- [WARPS] [STEP,STEP,...] [phase|count|path]
//! ```
//! The last column, `sp-across`, runs the (stack, PC) vote over each env's 4 frames end to end,
//! as if a launch of 4 frames let a thread start its next frame while others finish theirs.
//! The last argument regroups the envs before each traced step: `phase` in order of SMB's game
//! phase, as `nesle-bench-gpu --regroup` does (OperMode, GameEngineSubroutine, player state,
//! position); `count` by the instructions of their previous frame; `path` by a hash of the
//! previous frame's instruction addresses (the last two need no knowledge of the game);
//! `frame` as `count`, and again before each of the step's other 3 frames (a batch that
//! regroups between the launches of one step); `framepc` as `frame`, keyed on the count's
//! bucket (the count >> `WARP_BUCKET`, default 8) and then the PC the env's last frame ended at
//! (envs whose frame ran over, e.g. in a long loop, grouped by where they stopped; ties in the
//! order they had, or with `WARP_TIE=id` in the envs' own order, as the device sort); `framecov`
//! as `framepc` with the coverage of the last frame (a bit for each 1 KiB of code it ran in)
//! instead of the PC; `framebucket` the count's bucket alone (ties in the order they had);
//! `frameblockpc` as `frame`, then each block's envs (16 warps) by the PC their frame ended at;
//! `frameblockpc2` the same, ties by the PC the frame started at (the last frame's end before
//! it); `frameblockpcs` the same, ties by the stack pointer the frame ended with;
//! `frameblockpccov` the same, ties by the last frame's coverage (a bit for each 1 KiB of code
//! it ran in; with `WARP_COV16=1` each 2 KiB, 16 bits); `frameblockcov` the coverage first, then
//! the PC; `frameblockpcparts` ties by the 2 KiB pieces (16 bits) of the PCs at which the
//! frame's parts began;
//! `framestale` as `frame` with each sort keyed on the count of the frame before the last (a key
//! known while the last frame still runs, docs/kernel-notes.md #169; the path hash then holds that
//! count); `countpath` and `countram` by the count, ties by the path hash or by a hash of RAM (a
//! tie-break for envs in the same state). Each traced step
//! also prints, to stderr, how many distinct previous-frame paths the envs took, and the slots
//! an env-frame of the (stack, PC) vote with 2 and 4 envs a lane (`lanes_cost`: 64 or 128 envs
//! voting in a warp of 32 threads, each thread running one of its envs a round) and with the
//! majority vote (`majority_cost`: each round the key most threads share), and for each frame
//! the slowest warp's rounds against the mean warp's (a launch lasts as long as its slowest
//! warp), the longest env's instructions against the mean env's, and the slowest warp's envs'
//! instructions and most run instructions, and how many envs' frames are over twice the mean,
//! by SMB's OperMode. `spread` and `framespread` regroup as `count` and `frame` do, except the envs
//! above 1.5 times the median count go one to a warp (`spread_order`). With `frame`, each frame
//! also prints the slowest warp when the last warps' envs are spread over a few more warps
//! (`tail_slowest`: the lanes a launch filling every SM would have spare), and with
//! `WARP_PARTS=1` (any mode) each frame's slowest and mean block when the frame runs in the
//! kernel's 12 parts (`WARP_NPARTS` for another count) with a block barrier after each
//! (`block_parts_costs`; with `WARP_ALONE=1` also the slowest block's rounds run by one thread
//! alone and by every thread left together, `slowest_block_alone`; with `WARP_SLACK=S` also
//! the same blocks when a warp may run S parts ahead of the block's slowest, `block_slack_cost`),
//! and with
//! `WARP_SPLIT=1` the frame in the kernel's 12 parts with a block barrier after each
//! (`parts_cost`) against the same frame cut in two launches with the envs regrouped between them
//! (`split_cost`; docs/kernel-notes.md, "Regrouping inside a frame"). With `frame` and
//! `framestale`, each step also prints its length with the 4 launches overlapped (a warp of the
//! next frame starting once its envs finished the last, no barrier between launches) against
//! today's barriers: the critical path (`critical_path`) and the same with at most one frame's
//! warps resident (`resident_path`).
//! `WARP_ORACLE=1` (any mode) prints for each frame its slowest warp in the order it ran against
//! orders made from the frame's own traces, which no batch knows before the frame
//! (`oracle_costs`): a bound on what any regrouping key could do.
//! `WARP_ORDERS=1` (any mode) prints for each frame its launch under other vote orders than the
//! kernel's and two bounds on any order (`order_costs`): what choosing the group that runs each
//! round differently could gain.
//! `WARP_NARROW=L` (any mode) prints for each frame the slowest warp when the last T warps' envs
//! (in the modes that sort by count, the longest in the last frame) are dealt L to a warp
//! (`narrow_lanes`): narrower warps for the long envs, a launch of more warps.
//! `WARP_LOOPS=L` keeps the second pass of every loop of up to L instructions out of the traces
//! (by default only loops of 1 and 3, as the kernels' fast-forwards run them): a bound on what
//! running any tight loop at once would save.
//! `WARP_START=FILE` starts every env from a nes-core save state instead (e.g. the Python env's
//! World 1-1 start, `EnvState.console`), and `WARP_BUTTONS=FILE` presses recorded buttons instead
//! of random ones: one byte per env and step, step-major (steps 0 to the last listed, by envs;
//! env `i` the `i`-th env of the first step, whichever slot regrouping moves it to), such as a
//! trained agent's. `WARP_RESETS=FILE` (with `WARP_START`; the same shape, 1 where the recorded
//! run restarted an env after that step) restarts those envs from the start state, as training
//! does at each episode's end (bench/agent_buttons.py writes all three files).
//! Super Mario Bros. from the first frame of World 1-1 (the benchmark's start), WARPS x 32 envs
//! (default 16) with SIMPLE_MOVEMENT actions from a seeded generator every 4 frames; at each
//! listed step (default 3,30,100,200) the 4 frames of that step are traced. The ROM comes from
//! `$NESLE_ROM_DIR` or the nesle cache
//! (`$XDG_CACHE_HOME/nesle/roms`, default `~/.cache/nesle/roms`).

use nes_core::Console;

const WARP: usize = 32;

#[path = "common/rng.rs"]
mod rng;
use rng::{Rng, SIMPLE_MOVEMENT};
#[path = "common/blocks.rs"]
mod blocks;
#[path = "warp_model/orders.rs"]
mod orders;
#[path = "common/smb.rs"]
mod smb;
use orders::{order_costs, Flow, Ranks};

/// One executed instruction: its address and opcode.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Slot {
    pc: u16,
    op: u8,
    /// The stack pointer: lower is deeper in subroutine calls.
    sp: u8,
}

/// Runs one frame instruction by instruction and returns them, each idle or poll loop kept
/// once (a trace that ends in two passes of the same 1- or 3-instruction loop drops the second).
fn traced_frame(c: &mut Console) -> Vec<Slot> {
    traced_frame_cycles(c).0
}

/// `traced_frame`, with the CPU cycle (from the frame's start) at which each kept slot begins.
fn traced_frame_cycles(c: &mut Console) -> (Vec<Slot>, Vec<u64>) {
    let mut t: Vec<Slot> = Vec::new();
    let mut at: Vec<u64> = Vec::new();
    let start = c.bus.cycles;
    c.bus.ppu.frame_complete = false;
    while !c.bus.ppu.frame_complete {
        let pc = c.cpu.pc;
        t.push(Slot { pc, op: c.peek(pc), sp: c.cpu.s });
        at.push(c.bus.cycles - start);
        c.step();
        for &l in loop_lengths() {
            let n = t.len();
            if n >= 2 * l && t[n - 2 * l..n - l] == t[n - l..] {
                t.truncate(n - l);
                at.truncate(n - l);
            }
        }
    }
    c.bus.ppu.frame_complete = false;
    (t, at)
}

/// The loop lengths whose second pass a trace drops: 1 and 3 (the kernels' idle-loop and
/// `$2002`-poll fast-forwards), or with `WARP_LOOPS=L` every length up to L, a bound on what
/// running any tight loop at once would save.
fn loop_lengths() -> &'static [usize] {
    static L: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    L.get_or_init(|| match std::env::var("WARP_LOOPS").ok().and_then(|v| v.parse().ok()) {
        Some(l) => (1..=l).collect(),
        None => vec![1, 3],
    })
}

fn distinct_ops(ops: impl Iterator<Item = u8>) -> u64 {
    let mut seen = [false; 256];
    let mut n = 0;
    for op in ops {
        if !seen[op as usize] {
            seen[op as usize] = true;
            n += 1;
        }
    }
    n
}

/// Rounds of a vote that runs, each round, the threads whose next slot has the lowest `key`.
fn vote_cost<T: AsRef<[Slot]>, K: Ord + Copy>(traces: &[T], key: impl Fn(&Slot) -> K) -> u64 {
    let traces: Vec<&[Slot]> = traces.iter().map(AsRef::as_ref).collect();
    let mut at = vec![0usize; traces.len()];
    let mut rounds = 0;
    while let Some(low) = traces.iter().zip(&at).filter_map(|(t, &i)| t.get(i).map(&key)).min() {
        let group: Vec<usize> =
            (0..traces.len()).filter(|&j| traces[j].get(at[j]).is_some_and(|s| key(s) == low)).collect();
        rounds += distinct_ops(group.iter().map(|&j| traces[j][at[j]].op));
        for j in group {
            at[j] += 1;
        }
    }
    rounds
}

/// `vote_cost` with the (stack, PC) key, and of its rounds those in which one thread alone was
/// left running (`lone`) and those in which every thread left ran together (`together`, more
/// than one): rounds a warp could run without voting.
fn vote_cost_alone(traces: &[Vec<Slot>]) -> (u64, u64, u64) {
    let key = |s: &Slot| (s.sp as u32) << 16 | s.pc as u32;
    let mut at = vec![0usize; traces.len()];
    let (mut rounds, mut lone, mut together) = (0, 0, 0);
    while let Some(low) = traces.iter().zip(&at).filter_map(|(t, &i)| t.get(i).map(key)).min() {
        let left = (0..traces.len()).filter(|&j| at[j] < traces[j].len()).count();
        let group: Vec<usize> =
            (0..traces.len()).filter(|&j| traces[j].get(at[j]).is_some_and(|s| key(s) == low)).collect();
        rounds += 1;
        if left == 1 {
            lone += 1;
        } else if group.len() == left {
            together += 1;
        }
        for j in group {
            at[j] += 1;
        }
    }
    (rounds, lone, together)
}

/// Rounds of the (stack, PC) vote for a warp of 32 lanes each holding `traces.len() / 32` envs
/// (lane `j` the envs `j`, `j + 32`, ...): each round every lane votes the lowest key among its
/// envs, and the lanes holding the warp's lowest run one env at that key (the first).
fn lanes_cost(traces: &[Vec<Slot>], key: impl Fn(&Slot) -> u32) -> u64 {
    let mut at = vec![0usize; traces.len()];
    let mut rounds = 0;
    while let Some(low) = traces.iter().zip(&at).filter_map(|(t, &i)| t.get(i).map(&key)).min() {
        let mut ops = Vec::new();
        for lane in 0..WARP {
            let pick =
                (lane..traces.len()).step_by(WARP).find(|&j| traces[j].get(at[j]).is_some_and(|s| key(s) == low));
            if let Some(j) = pick {
                ops.push(traces[j][at[j]].op);
                at[j] += 1;
            }
        }
        rounds += distinct_ops(ops.into_iter());
    }
    rounds
}

/// Rounds of a vote that runs, each round, the threads at the key most of them share (ties: the
/// lowest key): the warp's fullest instruction now, at the risk of leaving a lone thread behind.
fn majority_cost(traces: &[Vec<Slot>], key: impl Fn(&Slot) -> u32) -> u64 {
    let mut at = vec![0usize; traces.len()];
    let mut rounds = 0;
    loop {
        let keys: Vec<u32> = traces.iter().zip(&at).filter_map(|(t, &i)| t.get(i).map(&key)).collect();
        let Some(pick) =
            keys.iter().copied().max_by_key(|&k| (keys.iter().filter(|&&o| o == k).count(), std::cmp::Reverse(k)))
        else {
            break;
        };
        let group: Vec<usize> =
            (0..traces.len()).filter(|&j| traces[j].get(at[j]).is_some_and(|s| key(s) == pick)).collect();
        rounds += distinct_ops(group.iter().map(|&j| traces[j][at[j]].op));
        for j in group {
            at[j] += 1;
        }
    }
    rounds
}

/// The order `spread` regroups by: by count, as `count` does, except the outliers (a count above
/// 1.5 times the median) go one to a warp (more only when there are more of them than warps),
/// in the last lanes, so no warp holds several of the longest envs: a launch lasts as long as
/// its slowest warp, and a warp of outliers runs their different long paths one after another.
fn spread_order(counts: &[u64]) -> Vec<usize> {
    let mut by_count: Vec<usize> = (0..counts.len()).collect();
    by_count.sort_by_key(|&i| counts[i]);
    let median = counts[by_count[counts.len() / 2]];
    let (rest, outliers): (Vec<usize>, Vec<usize>) = by_count.iter().partition(|&&i| 2 * counts[i] <= 3 * median);
    let warps = counts.len().div_ceil(WARP);
    let mut order = Vec::with_capacity(counts.len());
    let mut next = rest.iter();
    for w in 0..warps {
        let own: Vec<usize> = outliers.iter().copied().skip(w).step_by(warps).collect();
        order.extend(next.by_ref().take(WARP.saturating_sub(own.len())));
        order.extend(own);
    }
    order.extend(next);
    order
}

/// The slowest warp's (stack, PC) vote rounds when the last `tail` warps' envs (the longest, in
/// a count order) are spread over `tail + spare` warps, as evenly as they go: the batch's spare
/// lanes (a launch's last block slots without an env) given to its slowest warps.
fn tail_slowest(traces: &[Vec<Slot>], tail: usize, spare: usize) -> u64 {
    let key = |s: &Slot| (s.sp as u32) << 16 | s.pc as u32;
    let cut = traces.len().saturating_sub(tail * WARP);
    let mut slowest = traces[..cut].chunks(WARP).map(|w| vote_cost(w, key)).max().unwrap_or(0);
    let rest = &traces[cut..];
    let groups = tail + spare;
    let mut from = 0;
    for g in 0..groups {
        let to = rest.len() * (g + 1) / groups;
        if to > from {
            slowest = slowest.max(vote_cost(&rest[from..to], key));
        }
        from = to;
    }
    slowest
}

/// The envs a warp of the batch's longest holds with `WARP_NARROW=L` (1, 2, 4, 8 or 16).
fn narrow_lanes() -> Option<usize> {
    static L: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *L.get_or_init(|| {
        let lanes = std::env::var("WARP_NARROW").ok()?.parse().ok();
        assert!(matches!(lanes, Some(1 | 2 | 4 | 8 | 16)), "WARP_NARROW is 1, 2, 4, 8 or 16 envs a warp");
        lanes
    })
}

/// The kernel's frame: `parts()` parts of equal CPU time (kernels' NESLE_PHASES) out of a frame's
/// `FRAME_CYCLES` (NES_FRAME_CYCLES), and the warps of a block (512 threads).
/// (`WARP_NPARTS` sets another count, to weigh the parts' barriers in rounds.)
fn parts() -> u64 {
    static N: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::env::var("WARP_NPARTS").ok().and_then(|v| v.parse().ok()).unwrap_or(12))
}
const FRAME_CYCLES: u64 = 29_781;
const BLOCK_WARPS: usize = 16;

/// Each env's slots in part `p` of the frame (`parts()` of equal CPU time, the last one open).
fn part_slices(traces: &[Vec<Slot>], cycles: &[Vec<u64>], p: u64) -> Vec<Vec<Slot>> {
    let part = FRAME_CYCLES / parts();
    let (lo, hi) = (p * part, if p + 1 == parts() { u64::MAX } else { (p + 1) * part });
    traces
        .iter()
        .zip(cycles)
        .map(|(t, c)| t[c.partition_point(|&x| x < lo)..c.partition_point(|&x| x < hi)].to_vec())
        .collect()
}

/// The kernel's frame in `parts()` parts of equal CPU time with a block barrier after each: a launch
/// lasts, over its blocks of 16 warps, the longest sum over parts `from..to` of the block's
/// slowest warp in that part (its (stack, PC) vote rounds over the envs' slots in the part).
fn parts_cost(traces: &[Vec<Slot>], cycles: &[Vec<u64>], from: u64, to: u64) -> u64 {
    let block = BLOCK_WARPS * WARP;
    let mut worst = 0;
    for (tb, cb) in traces.chunks(block).zip(cycles.chunks(block)) {
        let mut sum = 0;
        for p in from..to {
            let slices = part_slices(tb, cb, p);
            sum += slices.chunks(WARP).map(|w| vote_cost(w, |s| (s.sp as u32) << 16 | s.pc as u32)).max().unwrap_or(0);
        }
        worst = worst.max(sum);
    }
    worst
}

/// The slack's count of parts (`WARP_SLACK`, default 0: the kernel's barrier after each part).
fn slack() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::env::var("WARP_SLACK").ok().and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// `parts_cost` of one block with a barrier that lets a warp run `slack()` parts ahead
/// (`blocks::block_path`).
fn block_slack_cost(tb: &[Vec<Slot>], cb: &[Vec<u64>]) -> u64 {
    let key = |s: &Slot| (s.sp as u32) << 16 | s.pc as u32;
    let mut rounds = vec![Vec::new(); tb.len().div_ceil(WARP)];
    for p in 0..parts() {
        for (w, ws) in part_slices(tb, cb, p).chunks(WARP).enumerate() {
            rounds[w].push(vote_cost(ws, key));
        }
    }
    blocks::block_path(&rounds, slack())
}

/// `parts_cost` of the whole frame for every block: the slowest block's (the launch's length) and
/// the mean block's (the SMs' mean busy time, with one block an SM), in rounds.
fn block_parts_costs(traces: &[Vec<Slot>], cycles: &[Vec<u64>]) -> (u64, f64) {
    let block = BLOCK_WARPS * WARP;
    let costs: Vec<u64> =
        traces.chunks(block).zip(cycles.chunks(block)).map(|(t, c)| parts_cost(t, c, 0, parts())).collect();
    (costs.iter().copied().max().unwrap_or(0), costs.iter().sum::<u64>() as f64 / costs.len().max(1) as f64)
}

/// The slowest block of `block_parts_costs`, its rounds split: of the sum over parts of the
/// block's slowest warp, the rounds that warp ran with one thread alone left and with every
/// thread left together (`vote_cost_alone`).
fn slowest_block_alone(traces: &[Vec<Slot>], cycles: &[Vec<u64>]) -> (u64, u64, u64) {
    let block = BLOCK_WARPS * WARP;
    let mut worst = (0, 0, 0);
    for (tb, cb) in traces.chunks(block).zip(cycles.chunks(block)) {
        let mut sum = (0, 0, 0);
        for p in 0..parts() {
            let slices = part_slices(tb, cb, p);
            let top = slices.chunks(WARP).map(vote_cost_alone).max_by_key(|c| c.0).unwrap_or((0, 0, 0));
            sum = (sum.0 + top.0, sum.1 + top.1, sum.2 + top.2);
        }
        if sum.0 > worst.0 {
            worst = sum;
        }
    }
    worst
}

/// A frame cut in two launches after part `cut` of `parts()`, the envs regrouped between them by `key`
/// of their state at the cut (their trace and its index there): `parts_cost` of each launch.
fn split_cost(traces: &[Vec<Slot>], cycles: &[Vec<u64>], cut: u64, key: impl Fn(&[Slot], usize) -> u64) -> (u64, u64) {
    let at = cut * (FRAME_CYCLES / parts());
    let first = parts_cost(traces, cycles, 0, cut);
    let mut order: Vec<usize> = (0..traces.len()).collect();
    order.sort_by_key(|&i| key(&traces[i], cycles[i].partition_point(|&x| x < at)));
    let t2: Vec<Vec<Slot>> = order.iter().map(|&i| traces[i].clone()).collect();
    let c2: Vec<Vec<u64>> = order.iter().map(|&i| cycles[i].clone()).collect();
    (first, parts_cost(&t2, &c2, cut, parts()))
}

/// An env of the model: its console, its last frame's instruction count, its path field (the
/// last frame's path hash, or what a mode keys on instead) and its action generator.
type Env = (Console, u64, u64, Rng);

/// The order `mode` regroups `envs` in (a stable sort: ties keep their places), or `None` for a
/// mode that keeps them as they are. `eid`: the envs' own ids, `framepc`'s ties with `tie_by_id`;
/// `bucket`: the count's shift for the bucketed modes.
fn regroup_order(mode: &str, envs: &[Env], eid: &[usize], bucket: u32, tie_by_id: bool) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..envs.len()).collect();
    let pc = |i: usize| envs[i].0.cpu.pc;
    let hash = |bytes: &[u8]| {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
    };
    match mode {
        "phase" => order.sort_by_key(|&i| {
            let r = envs[i].0.ram();
            (r[0x770], r[0x0e], r[0x1d], r[0x6d], r[0x86])
        }),
        "count" | "frame" => order.sort_by_key(|&i| envs[i].1),
        "framepc" => order.sort_by_key(|&i| (envs[i].1 >> bucket, pc(i), if tie_by_id { eid[i] } else { 0 })),
        "framecov" => order.sort_by_key(|&i| (envs[i].1 >> bucket, envs[i].2)),
        "framebucket" => order.sort_by_key(|&i| envs[i].1 >> bucket),
        "frameblockpc" | "frameblockpc2" | "frameblockpcs" | "frameblockcov" | "frameblockpccov"
        | "frameblockpcparts" => {
            order.sort_by_key(|&i| envs[i].1);
            for b in order.chunks_mut(BLOCK_WARPS * WARP) {
                match mode {
                    // `.2` holds the PC the frame started at (main, before each frame).
                    "frameblockpc2" => b.sort_by_key(|&i| (pc(i), envs[i].2)),
                    "frameblockpcs" => b.sort_by_key(|&i| (pc(i), envs[i].0.cpu.s)),
                    // `.2` holds the last frame's coverage (`coverage`).
                    "frameblockcov" => b.sort_by_key(|&i| (envs[i].2, pc(i))),
                    "frameblockpccov" | "frameblockpcparts" => b.sort_by_key(|&i| (pc(i), envs[i].2)),
                    _ => b.sort_by_key(|&i| pc(i)),
                }
            }
        }
        "framestale" | "path" => order.sort_by_key(|&i| envs[i].2),
        "spread" | "framespread" => return Some(spread_order(&envs.iter().map(|e| e.1).collect::<Vec<_>>())),
        "countpath" => order.sort_by_key(|&i| (envs[i].1, envs[i].2)),
        "countram" => order.sort_by_key(|&i| (envs[i].1, hash(envs[i].0.ram()))),
        _ => return None,
    }
    Some(order)
}

/// A hash of a frame's path (its instructions' addresses, FNV-1a): equal for equal paths.
fn path_hash(t: &[Slot]) -> u64 {
    t.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, s| (h ^ s.pc as u64).wrapping_mul(0x100_0000_01b3))
}

/// A bound on regrouping (`WARP_ORACLE=1`): the frame's slowest warp ((stack, PC) vote rounds)
/// in the order it ran, against orders made from the frame's own traces, which no batch knows
/// before the frame: by its instruction count (identical paths side by side); by its 1 KiB
/// coverage, then the count; clustered by its code (`clustered_by_code`); by the (stack, PC) it
/// started at, then its count, over all envs and inside the as-run order's blocks. Then the
/// longest env, below which no warp holding it goes.
fn oracle_costs(traces: &[Vec<Slot>]) -> String {
    let key = |s: &Slot| (s.sp as u32) << 16 | s.pc as u32;
    let slowest = |order: &[usize]| -> u64 {
        let warp = |w: &[usize]| w.iter().map(|&i| &traces[i]).collect::<Vec<_>>();
        order.chunks(WARP).map(|w| vote_cost(&warp(w), key)).max().unwrap_or(0)
    };
    let start = |i: usize| traces[i].first().map_or(0, key);
    let count = |i: usize| (traces[i].len(), path_hash(&traces[i]));
    let as_run: Vec<usize> = (0..traces.len()).collect();
    let sorted = |by: &dyn Fn(&usize, &usize) -> std::cmp::Ordering| {
        let mut o = as_run.clone();
        o.sort_by(by);
        o
    };
    let by_count = sorted(&|&a, &b| count(a).cmp(&count(b)));
    let by_cover = sorted(&|&a, &b| (coverage(&traces[a]), count(a)).cmp(&(coverage(&traces[b]), count(b))));
    let by_start = sorted(&|&a, &b| (start(a), count(a)).cmp(&(start(b), count(b))));
    let mut in_blocks = as_run.clone();
    for b in in_blocks.chunks_mut(BLOCK_WARPS * WARP) {
        b.sort_by_key(|&i| (start(i), count(i)));
    }
    let longest = traces.iter().map(|t| t.len()).max().unwrap_or(0);
    format!(
        "slowest warp as run {}; by its own count {}; by its own coverage {}; clustered by its own code {}; \
         by start, then own count {}; as run's blocks by start, then own count {}; the longest env {longest}",
        slowest(&as_run),
        slowest(&by_count),
        slowest(&by_cover),
        slowest(&clustered_by_code(traces)),
        slowest(&by_start),
        slowest(&in_blocks)
    )
}

/// An order no batch can know before the frame: warps built greedily from the frame's own
/// traces, each seeded with the longest env left and filled with the envs whose code (the set of
/// 16-byte pieces of PRG ROM their instructions came from) is most like the seed's (Jaccard).
fn clustered_by_code(traces: &[Vec<Slot>]) -> Vec<usize> {
    let sets: Vec<[u64; 32]> = traces
        .iter()
        .map(|t| {
            let mut b = [0u64; 32];
            for s in t {
                let piece = (s.pc as usize >> 4) & 0x7ff;
                b[piece >> 6] |= 1 << (piece & 63);
            }
            b
        })
        .collect();
    let jaccard = |a: &[u64; 32], b: &[u64; 32]| {
        let and: u32 = a.iter().zip(b).map(|(p, q)| (p & q).count_ones()).sum();
        let or: u32 = a.iter().zip(b).map(|(p, q)| (p | q).count_ones()).sum();
        if or == 0 {
            1.0
        } else {
            and as f64 / or as f64
        }
    };
    let mut left: Vec<usize> = (0..traces.len()).collect();
    let mut order = Vec::with_capacity(traces.len());
    while !left.is_empty() {
        let longest = |&k: &usize| (traces[left[k]].len(), std::cmp::Reverse(left[k]));
        let at = (0..left.len()).max_by_key(longest).expect("not empty");
        let seed = left.swap_remove(at);
        // The most like the seed first (ties by index, so the order is the same every run).
        let mut like: Vec<(f64, usize)> = left.iter().map(|&i| (jaccard(&sets[seed], &sets[i]), i)).collect();
        like.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
        left = like.iter().map(|&(_, i)| i).collect();
        let take = left.len().min(WARP - 1);
        order.push(seed);
        order.extend(left.drain(..take));
    }
    order
}

/// `items` in `order` (a permutation of their indices).
fn permuted<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut old: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.iter().map(|&i| old[i].take().expect("an order is a permutation")).collect()
}

/// Per frame after a step's first, each warp's warps of the frame before (those that ran its envs
/// then), from each frame's env ids in warp order: what a warp waits for when a launch may start
/// a warp as soon as its own envs have finished the frame before (no barrier between launches).
fn warp_deps(frame_ids: &[Vec<usize>]) -> Vec<Vec<Vec<usize>>> {
    frame_ids
        .windows(2)
        .map(|pair| {
            let mut warp_of = vec![0; pair[0].len()];
            for (pos, &id) in pair[0].iter().enumerate() {
                warp_of[id] = pos / WARP;
            }
            pair[1]
                .chunks(WARP)
                .map(|w| {
                    let mut deps: Vec<usize> = w.iter().map(|&id| warp_of[id]).collect();
                    deps.sort_unstable();
                    deps.dedup();
                    deps
                })
                .collect()
        })
        .collect()
}

/// A step's length when its frames' launches overlap (`rounds` per frame and warp, `deps` from
/// `warp_deps`), with room for every warp at once: the first frame's warps start at 0 (the step
/// boundary stays a barrier, its actions change), a later frame's warp when the last of its
/// deps finishes; the step ends with its last warp (the critical path).
fn critical_path(rounds: &[Vec<u64>], deps: &[Vec<Vec<usize>>]) -> u64 {
    let mut finish = rounds[0].clone();
    for (r, d) in rounds[1..].iter().zip(deps) {
        finish = r.iter().zip(d).map(|(&r, d)| d.iter().map(|&v| finish[v]).max().unwrap_or(0) + r).collect();
    }
    finish.into_iter().max().unwrap_or(0)
}

/// `critical_path` with at most `slots` warps resident: a warp starts when its deps have finished
/// and a slot is free, the ready warps taking the freed slots in the order they became ready
/// (ties: the earlier frame, then the lower warp). An event simulation over warp finishes.
fn resident_path(rounds: &[Vec<u64>], deps: &[Vec<Vec<usize>>], slots: usize) -> u64 {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    // Per warp (frame, warp): its deps not yet finished, and the next frame's warps waiting on it.
    let mut left: Vec<Vec<usize>> = rounds.iter().map(|r| vec![0; r.len()]).collect();
    let mut waiting: Vec<Vec<Vec<usize>>> = rounds.iter().map(|r| vec![Vec::new(); r.len()]).collect();
    for (f, frame_deps) in deps.iter().enumerate() {
        for (w, d) in frame_deps.iter().enumerate() {
            left[f + 1][w] = d.len();
            for &v in d {
                waiting[f][v].push(w);
            }
        }
    }
    // (ready time, frame, warp) and (finish time, frame, warp), earliest first.
    let mut ready: BinaryHeap<Reverse<(u64, usize, usize)>> =
        (0..rounds[0].len()).map(|w| Reverse((0, 0, w))).collect();
    let mut running: BinaryHeap<Reverse<(u64, usize, usize)>> = BinaryHeap::new();
    let (mut now, mut free) = (0, slots);
    loop {
        while free > 0 {
            let Some(Reverse((_, f, w))) = ready.pop() else { break };
            running.push(Reverse((now + rounds[f][w], f, w)));
            free -= 1;
        }
        let Some(Reverse((end, f, v))) = running.pop() else { return now };
        now = end;
        free += 1;
        if f + 1 < rounds.len() {
            for &w in &waiting[f][v] {
                left[f + 1][w] -= 1;
                if left[f + 1][w] == 0 {
                    ready.push(Reverse((now, f + 1, w)));
                }
            }
        }
    }
}

/// Slots of one warp: work, ideal, aligned, then the votes: lowest PC; deepest stack, then
/// lowest PC.
fn warp_cost(traces: &[Vec<Slot>]) -> [u64; 5] {
    let work = traces.iter().map(|t| t.len() as u64).sum();
    let ideal = traces.iter().map(|t| t.len()).max().unwrap_or(0) as u64;
    let aligned = (0..ideal as usize).map(|k| distinct_ops(traces.iter().filter_map(|t| t.get(k).map(|s| s.op)))).sum();
    let vote = vote_cost(traces, |s| s.pc as u32);
    let deep = vote_cost(traces, |s| (s.sp as u32) << 16 | s.pc as u32);
    [work, ideal, aligned, vote, deep]
}

/// The 1 KiB pieces of the CPU's address space a frame ran code in, one bit each of 32 (PC >> 10
/// modulo 32: PRG ROM's 32 KiB, RAM's mirrors folded in): a coarse summary of the frame's path,
/// whose order puts envs that ran code in the same places side by side (`framecov`).
/// Whether `mode` keys on the last frame's coverage (`coverage`).
fn keys_on_coverage(mode: &str) -> bool {
    matches!(mode, "framecov" | "frameblockcov" | "frameblockpccov")
}

fn coverage(t: &[Slot]) -> u64 {
    if std::env::var_os("WARP_COV16").is_some() {
        // 16 pieces of 2 KiB: the PRG ROM window's, in the 16 bits a device key could spare.
        return t.iter().fold(0u64, |m, s| m | 1 << ((s.pc >> 11) & 15));
    }
    t.iter().fold(0u64, |m, s| m | 1 << ((s.pc >> 10) & 31))
}

/// The 2 KiB pieces (of 16) of the PCs at which the frame's 12 parts started: a coverage
/// sampled at the kernel's part ends (12 ORs a frame instead of one a round).
fn part_coverage(t: &[Slot], cycles: &[u64]) -> u64 {
    let part = FRAME_CYCLES / parts();
    (0..parts())
        .filter_map(|p| t.get(cycles.partition_point(|&x| x < p * part)))
        .fold(0u64, |m, s| m | 1 << ((s.pc >> 11) & 15))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let warps: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(16);
    let steps: Vec<usize> = args
        .get(1)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![3, 30, 100, 200]);
    // The bytes of the file an option names, if it is set.
    let file =
        |name: &str| std::env::var_os(name).map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{name}'s file: {e}")));
    let start = file("WARP_START");
    let boot = match &start {
        Some(state) => {
            let mut c = smb::power_on();
            c.load_state(state).expect("a save state of this ROM");
            c
        }
        None => smb::world_1_1(),
    };
    let n = warps * WARP;
    // Recorded buttons, and where the recorded run restarted envs (after that step); by step and env id.
    let buttons = file("WARP_BUTTONS");
    let resets = file("WARP_RESETS");
    assert!(resets.is_none() || start.is_some(), "WARP_RESETS restarts envs from WARP_START's state");
    // Each env with its previous frame's instruction count and path hash (set before traced steps).
    // Each env carries its own action generator, so that regrouping moves its actions with it
    // and every regrouping mode plays the same games (until #169 the generator stayed with the
    // slot: after a regrouping the modes' envs played different games; kernel-notes figures
    // before #169 were made that way).
    let mut envs: Vec<Env> = (0..n).map(|i| (boot.clone(), 0, 0, Rng::for_env(i))).collect();
    let regroup = args.get(2).cloned().unwrap_or_default();
    // `framepc`: the count's bucket (count >> WARP_BUCKET, default 8), then the PC the frame ended at.
    let bucket: u32 = std::env::var("WARP_BUCKET").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    // `framepc` with `WARP_TIE=id`: ties in the envs' own order (as the device sort breaks them),
    // not in the order they had (a stable sort's).
    let tie_by_id = std::env::var("WARP_TIE").is_ok_and(|v| v == "id");
    let mut eid: Vec<usize> = (0..n).collect();
    // Where each PC runs in its frame, learned from the frames traced so far (`WARP_ORDERS`).
    let mut ranks = Ranks::new();
    let mut flow = Flow::new(false);
    let mut whole_flow = Flow::new(true);
    let last = steps.iter().copied().max().unwrap_or(0);
    for (name, file) in [("WARP_BUTTONS", &buttons), ("WARP_RESETS", &resets)] {
        if let Some(b) = file {
            assert_eq!(b.len(), (last + 1) * n, "{name} must hold steps 0..={last} of {n} envs");
        }
    }
    println!("{n} envs, protocol B; slots per warp-frame (mean over warps and the step's 4 frames)");
    println!(
        "{:>5} {:>8} {:>8} {:>9} {:>8} {:>8} {:>13} {:>13} {:>9}",
        "step", "work/32", "ideal", "aligned", "vote", "vote-sp", "aligned/ideal", "aligned/vote", "sp-across"
    );
    for step in 0..=last {
        for ((c, _, _, r), &id) in envs.iter_mut().zip(&eid) {
            if step > 0 && resets.as_ref().is_some_and(|f| f[(step - 1) * n + id] != 0) {
                c.load_state(start.as_ref().expect("checked above")).expect("the start state loaded before");
            }
            let random = SIMPLE_MOVEMENT[(r.next() % 7) as usize];
            let recorded = buttons.as_ref().map(|b| b[step * n + id]);
            c.set_buttons(0, recorded.unwrap_or(random));
        }
        if !steps.contains(&step) {
            for (c, count, path, _) in envs.iter_mut() {
                if steps.contains(&(step + 1)) && regroup == "framestale" {
                    // The counts of the step's last two frames: the stale key and the last.
                    c.run_frames(2);
                    *path = traced_frame(c).len() as u64;
                    *count = traced_frame(c).len() as u64;
                    continue;
                }
                c.run_frames(3);
                if steps.contains(&(step + 1)) {
                    let start_pc = c.cpu.pc as u64;
                    let (t, at) = traced_frame_cycles(c);
                    *count = t.len() as u64;
                    *path = if keys_on_coverage(&regroup) {
                        coverage(&t)
                    } else if regroup == "frameblockpcparts" {
                        part_coverage(&t, &at)
                    } else if regroup == "frameblockpc2" {
                        start_pc
                    } else {
                        path_hash(&t)
                    };
                } else {
                    c.run_frame();
                }
            }
            continue;
        }
        if let Some(order) = regroup_order(&regroup, &envs, &eid, bucket, tie_by_id) {
            envs = permuted(std::mem::take(&mut envs), &order);
            eid = permuted(std::mem::take(&mut eid), &order);
        }
        let mut paths: Vec<u64> = envs.iter().map(|e| e.2).collect();
        paths.sort_unstable();
        paths.dedup();
        eprintln!("step {step}: {} distinct previous-frame paths among {n} envs", paths.len());
        let mut sum = [0u64; 5];
        // Rounds of 2 and 4 envs a lane (`lanes_cost`), summed over the warps.
        let mut lanes = [0u64; 2];
        let mut majority = 0u64;
        // Each env's 4 frames end to end: the (stack, PC) vote across the frame boundaries.
        let mut steps_traces: Vec<Vec<Slot>> = vec![Vec::new(); n];
        // Each env's id (its place in the step's first frame), and per frame the ids in warp
        // order and each warp's (stack, PC) vote rounds: the launches' dependencies, for the
        // cost of overlapping them.
        let mut ids: Vec<usize> = (0..n).collect();
        let mut frame_ids: Vec<Vec<usize>> = Vec::new();
        let mut frame_rounds: Vec<Vec<u64>> = Vec::new();
        for f in 0..4 {
            // Every `frame...` mode regroups before the step's other frames too.
            if f > 0 && regroup.starts_with("frame") {
                // Each env keeps its traces so far and its ids: move them all by one order.
                if let Some(order) = regroup_order(&regroup, &envs, &eid, bucket, tie_by_id) {
                    envs = permuted(std::mem::take(&mut envs), &order);
                    steps_traces = permuted(std::mem::take(&mut steps_traces), &order);
                    ids = permuted(std::mem::take(&mut ids), &order);
                    eid = permuted(std::mem::take(&mut eid), &order);
                }
            }
            if regroup == "frameblockpc2" {
                // The PC this frame starts at: the next regrouping's tie-break.
                for (c, _, start, _) in envs.iter_mut() {
                    *start = c.cpu.pc as u64;
                }
            }
            let (traces, cycles): (Vec<Vec<Slot>>, Vec<Vec<u64>>) =
                envs.iter_mut().map(|(c, _, _, _)| traced_frame_cycles(c)).unzip();
            if regroup == "frame" && std::env::var_os("WARP_SPLIT").is_some() {
                // One more launch a frame, cut at the end of part P of 12, the envs regrouped at
                // the cut by their (stack, PC) or by their instructions so far.
                let whole = parts_cost(&traces, &cycles, 0, parts());
                let mut cells = Vec::new();
                for p in [1u64, 2, 3, 4, 6] {
                    let (a, b) = split_cost(&traces, &cycles, p, |t, i| {
                        t.get(i).map_or(u64::MAX, |s| (s.sp as u64) << 16 | s.pc as u64)
                    });
                    let (_, d) = split_cost(&traces, &cycles, p, |_, i| i as u64);
                    let (_, e) = split_cost(&traces, &cycles, p, |t, _| t.len() as u64);
                    cells.push(format!("P{p}: {a} + pc {b} / so-far {d} / whole-count {e}"));
                }
                eprintln!("step {step} frame {f}: split: whole {whole}; {}", cells.join("; "));
            }
            if std::env::var_os("WARP_PARTS").is_some() {
                let (worst, mean) = block_parts_costs(&traces, &cycles);
                eprintln!("step {step} frame {f}: the frame in {} parts, blocks of {BLOCK_WARPS} warps: slowest block {worst} rounds, mean block {mean:.0}", parts());
                if std::env::var_os("WARP_SLACK").is_some() {
                    let block = BLOCK_WARPS * WARP;
                    let costs: Vec<u64> =
                        traces.chunks(block).zip(cycles.chunks(block)).map(|(t, c)| block_slack_cost(t, c)).collect();
                    let mean = costs.iter().sum::<u64>() as f64 / costs.len().max(1) as f64;
                    eprintln!("step {step} frame {f}: with a slack of {} parts: slowest block {} rounds, mean block {mean:.0}", slack(), costs.iter().max().unwrap_or(&0));
                }
                if std::env::var_os("WARP_ALONE").is_some() {
                    let (rounds, lone, together) = slowest_block_alone(&traces, &cycles);
                    eprintln!("step {step} frame {f}: the slowest block's {rounds} rounds: {lone} with one thread left alone, {together} with every thread left together");
                }
            }
            if std::env::var_os("WARP_ORDERS").is_some() {
                let orders = order_costs(&traces, &cycles, &ranks, &flow, &whole_flow);
                eprintln!("step {step} frame {f}: vote orders, by parts: {orders}");
                ranks.learn(&traces);
                flow.learn(&traces);
                whole_flow.learn(&traces);
            }
            if std::env::var_os("WARP_ORACLE").is_some() {
                eprintln!("step {step} frame {f}: {}", oracle_costs(&traces));
            }
            // The envs whose frame is over twice the mean's, by SMB's OperMode ($0770: 0 title,
            // 1 playing, 2 victory, 3 game over): the long frames that set a launch's length.
            let mean_len = traces.iter().map(|t| t.len()).sum::<usize>() as f64 / n as f64;
            let mut long_by_mode = [0usize; 4];
            for ((c, _, _, _), t) in envs.iter().zip(&traces) {
                if t.len() as f64 > 2.0 * mean_len {
                    long_by_mode[(c.ram()[0x770] & 3) as usize] += 1;
                }
            }
            eprintln!("step {step} frame {f}: envs over twice the mean frame, by OperMode 0-3: {long_by_mode:?}");
            for (((_, count, stale, _), t), at) in envs.iter_mut().zip(&traces).zip(&cycles) {
                if regroup == "frameblockpcparts" {
                    *stale = part_coverage(t, at);
                }
                if regroup == "framestale" {
                    *stale = *count;
                }
                if keys_on_coverage(&regroup) {
                    *stale = coverage(t);
                }
                *count = t.len() as u64;
            }
            // The launch lasts as long as its slowest warp: that warp's (stack, PC) vote rounds
            // against the mean warp's, and the longest env's instructions against the mean env's.
            let (mut slowest, mut frame_sum) = (0u64, 0u64);
            let mut slowest_lens: Vec<usize> = Vec::new();
            let mut warp_rounds: Vec<u64> = Vec::new();
            for w in traces.chunks(WARP) {
                let cost = warp_cost(w);
                warp_rounds.push(cost[4]);
                if cost[4] > slowest {
                    slowest_lens = w.iter().map(|t| t.len()).collect();
                }
                slowest = slowest.max(cost[4]);
                frame_sum += cost[4];
                for (s, v) in sum.iter_mut().zip(cost) {
                    *s += v;
                }
            }
            let longest_trace = traces.iter().max_by_key(|t| t.len());
            let longest = longest_trace.map_or(0, |t| t.len());
            // Where the longest env spends its frame: its most run instructions (PC:opcode x runs).
            if let Some(t) = longest_trace {
                let mut runs = std::collections::HashMap::<u16, (u8, u32)>::new();
                for slot in t {
                    runs.entry(slot.pc).or_insert((slot.op, 0)).1 += 1;
                }
                let mut hot: Vec<_> = runs.into_iter().collect();
                hot.sort_by_key(|&(pc, (_, k))| (std::cmp::Reverse(k), pc));
                let hot: Vec<String> =
                    hot.iter().take(8).map(|(pc, (op, k))| format!("{pc:04x}:{op:02x}x{k}")).collect();
                eprintln!("step {step} frame {f}: the longest env's most run instructions {}", hot.join(" "));
            }
            frame_ids.push(ids.clone());
            frame_rounds.push(warp_rounds);
            let mean_warp = frame_sum as f64 / warps as f64;
            eprintln!(
                "step {step} frame {f}: slowest warp {slowest} vote-sp rounds, mean {mean_warp:.0} ({:.2}x); longest env {longest} instructions, mean {mean_len:.0} ({:.2}x)",
                slowest as f64 / mean_warp,
                longest as f64 / mean_len
            );
            eprintln!("step {step} frame {f}: the slowest warp's envs' instructions {slowest_lens:?}");
            if let Some(lanes) = narrow_lanes() {
                // The last T warps' envs (in a count order, the longest in the last frame) dealt
                // `lanes` to a warp: more warps, each holding fewer of the long envs' diverging paths.
                let tails: Vec<String> = [0, 1, 2, 4, 8, 16, 32]
                    .iter()
                    .filter(|&&t| t <= warps)
                    .map(|&t| format!("{t}:{}", tail_slowest(&traces, t, t * (WARP / lanes - 1))))
                    .collect();
                eprintln!("step {step} frame {f}: narrow {lanes}: slowest warp with the last T warps' envs {lanes} a warp (T:rounds) {}", tails.join(" "));
            }
            if regroup == "frame" {
                // The spare lanes of a launch whose blocks fill every SM (132 SMs for 128 full
                // blocks: warps / 32 spare warps) given to the slowest warps.
                let spare = (warps / 32).max(1);
                let tails: Vec<String> = [0, 1, 2, 4, 8, 16]
                    .iter()
                    .filter(|&&t| t <= warps)
                    .map(|&t| format!("{t}:{}", tail_slowest(&traces, t, spare)))
                    .collect();
                eprintln!(
                    "step {step} frame {f}: slowest warp with the last T warps over T + {spare} (T:rounds) {}",
                    tails.join(" ")
                );
            }
            for w in traces.chunks(WARP) {
                majority += majority_cost(w, |s| (s.sp as u32) << 16 | s.pc as u32);
            }
            for (k, l) in lanes.iter_mut().enumerate() {
                for w in traces.chunks(WARP << (k + 1)) {
                    *l += lanes_cost(w, |s| (s.sp as u32) << 16 | s.pc as u32);
                }
            }
            for (all, t) in steps_traces.iter_mut().zip(traces) {
                all.extend(t);
            }
        }
        // Slots an env-frame with one env a lane, over slots an env-frame with 2 / 4 a lane.
        let per_env = sum[4] as f64 / (4 * n) as f64;
        eprintln!(
            "step {step}: vote-sp {:.1} slots/env-frame; 2 envs a lane {:.1} ({:.2}x); 4 envs a lane {:.1} ({:.2}x)",
            per_env,
            lanes[0] as f64 / (4 * n) as f64,
            per_env / (lanes[0] as f64 / (4 * n) as f64),
            lanes[1] as f64 / (4 * n) as f64,
            per_env / (lanes[1] as f64 / (4 * n) as f64)
        );
        eprintln!(
            "step {step}: the majority vote {:.1} slots/env-frame ({:.2}x the (stack, PC) vote)",
            majority as f64 / (4 * n) as f64,
            per_env / (majority as f64 / (4 * n) as f64)
        );
        if regroup == "frame" || regroup == "framestale" {
            // The step with its 4 launches overlapped (a warp starts once its envs finished the
            // frame before) against today's barriers (the sum of each launch's slowest warp):
            // unbounded, then with one frame's warps resident at most (all envs resident, as
            // 65,536 envs fill an H200), a later frame's warp taking a slot an earlier one frees.
            // That many slots never hold a warp back: a warp runs only envs done with the frame
            // before and not yet with its own, so an env is in one running warp at most.
            let barrier: u64 = frame_rounds.iter().map(|r| r.iter().copied().max().unwrap_or(0)).sum();
            let deps = warp_deps(&frame_ids);
            let path = critical_path(&frame_rounds, &deps);
            let resident = resident_path(&frame_rounds, &deps, warps);
            eprintln!(
                "step {step}: overlapped launches: barriers {barrier} rounds; critical path {path} ({:.3}x); {warps} warps resident {resident} ({:.3}x)",
                barrier as f64 / path as f64,
                barrier as f64 / resident as f64
            );
        }
        let across: u64 = steps_traces.chunks(WARP).map(|w| vote_cost(w, |s| (s.sp as u32) << 16 | s.pc as u32)).sum();
        let k = (4 * warps) as f64;
        let [work, ideal, aligned, vote, deep] = sum.map(|s| s as f64 / k);
        println!(
            "{step:>5} {:>8.0} {ideal:>8.0} {aligned:>9.0} {vote:>8.0} {deep:>8.0} {:>13.2} {:>13.2} {:>9.0}",
            work / WARP as f64,
            aligned / ideal,
            aligned / vote,
            across as f64 / k
        );
    }
}

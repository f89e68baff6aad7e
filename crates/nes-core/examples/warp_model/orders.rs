//! The warp model's vote orders other than the kernel's lowest (stack, PC), and two bounds on
//! any order (`WARP_ORDERS=1`; docs/kernel-notes.md, "The vote's order, against hindsight"). A
//! module of examples/warp_model.rs, which runs `order_costs` on each traced frame.

use super::{parts, Slot, FRAME_CYCLES, WARP};

/// Rounds of a vote that orders the threads by `order` (of an env and its place in its trace),
/// then by (stack, PC), and runs, each round, every thread at the lowest one's (stack, PC).
fn ordered_cost<K: Ord>(traces: &[&[Slot]], order: impl Fn(usize, usize) -> K) -> u64 {
    let mut at = vec![0usize; traces.len()];
    let mut rounds = 0;
    let key = |j: usize, i: usize| (order(j, i), traces[j][i].sp, traces[j][i].pc);
    let lowest = |at: &[usize]| (0..traces.len()).filter(|&j| at[j] < traces[j].len()).min_by_key(|&j| key(j, at[j]));
    while let Some(j) = lowest(&at) {
        rounds += 1;
        let chosen = traces[j][at[j]];
        run_group(traces, &mut at, chosen);
    }
    rounds
}

/// One round: every thread whose next slot is at `chosen`'s (stack, PC) runs it.
fn run_group(traces: &[&[Slot]], at: &mut [usize], chosen: Slot) {
    for (t, i) in traces.iter().zip(at.iter_mut()) {
        if t.get(*i).is_some_and(|s| (s.sp, s.pc) == (chosen.sp, chosen.pc)) {
            *i += 1;
        }
    }
}

/// Rounds of the (stack, PC) vote, except that a thread whose last instruction jumped back (a
/// lower PC at the same stack depth: a loop's back edge) votes as if still at the jump, after the
/// threads there: a loop's threads meet at its back edge before any starts the next pass. A
/// round whose threads are at different PCs costs a round a PC.
fn held_cost(traces: &[&[Slot]]) -> u64 {
    let key = |t: &[Slot], i: usize| match i.checked_sub(1).map(|j| t[j]) {
        Some(prev) if prev.sp == t[i].sp && t[i].pc < prev.pc => (t[i].sp, prev.pc, true),
        _ => (t[i].sp, t[i].pc, false),
    };
    let mut at = vec![0usize; traces.len()];
    let mut rounds = 0;
    while let Some(low) = traces.iter().zip(&at).filter(|(t, &i)| i < t.len()).map(|(t, &i)| key(t, i)).min() {
        let mut pcs: Vec<u16> = Vec::new();
        for (t, i) in traces.iter().zip(at.iter_mut()) {
            if *i < t.len() && key(t, *i) == low {
                if !pcs.contains(&t[*i].pc) {
                    pcs.push(t[*i].pc);
                }
                *i += 1;
            }
        }
        rounds += pcs.len() as u64;
    }
    rounds
}

/// Rounds of the (stack, PC) vote with aging: a thread that has waited `patience` rounds since it
/// last ran votes ahead of every other (the aged among themselves by (stack, PC)), so a thread
/// left behind at a higher key goes on to where the others are instead of waiting out their code.
fn aged_cost(traces: &[&[Slot]], patience: u64) -> u64 {
    let mut at = vec![0usize; traces.len()];
    let mut waited = vec![0u64; traces.len()];
    let mut rounds = 0;
    let key = |j: usize, at: &[usize], waited: &[u64]| traces[j].get(at[j]).map(|s| (waited[j] < patience, s.sp, s.pc));
    while let Some((_, sp, pc)) = (0..traces.len()).filter_map(|j| key(j, &at, &waited)).min() {
        rounds += 1;
        for j in 0..traces.len() {
            match traces[j].get(at[j]) {
                Some(s) if (s.sp, s.pc) == (sp, pc) => {
                    at[j] += 1;
                    waited[j] = 0;
                }
                Some(_) => waited[j] += 1,
                None => {}
            }
        }
    }
    rounds
}

/// Each PC's mean place in the frames traced so far: the instructions run before it in its
/// frame, averaged over its runs. A vote by it runs first the threads at code the frames reach
/// early, so the others wait where those will arrive later, whatever the addresses.
pub(crate) struct Ranks {
    sum: Vec<f64>,
    runs: Vec<u32>,
}

impl Ranks {
    pub(crate) fn new() -> Self {
        Ranks { sum: vec![0.0; 1 << 16], runs: vec![0; 1 << 16] }
    }

    pub(crate) fn learn(&mut self, traces: &[Vec<Slot>]) {
        for t in traces {
            for (i, s) in t.iter().enumerate() {
                self.sum[s.pc as usize] += i as f64;
                self.runs[s.pc as usize] += 1;
            }
        }
    }

    /// A PC not seen yet ranks first: its thread runs until it reaches known code.
    fn rank(&self, pc: u16) -> u32 {
        let n = self.runs[pc as usize];
        if n == 0 {
            0
        } else {
            (self.sum[pc as usize] / n as f64) as u32
        }
    }
}

/// The code's order as the frames traced so far ran it, for a vote by it (thread frontiers): a
/// reverse post-order of the control flow seen inside subroutines (a call is an edge past it, to
/// the instruction after the JSR), from every place code was entered (frame starts, call and
/// interrupt targets). Code a path reaches later orders after it, loops aside, whatever the
/// addresses, where the lowest PC assumes that later code lies at higher addresses.
pub(crate) struct Flow {
    succ: std::collections::BTreeMap<u16, std::collections::BTreeSet<u16>>,
    entries: std::collections::BTreeSet<u16>,
    order: Vec<u32>,
    /// Whether the flow goes into calls and back (JSR to the subroutine, RTS to the caller) too.
    through_calls: bool,
}

impl Flow {
    pub(crate) fn new(through_calls: bool) -> Self {
        Flow { succ: Default::default(), entries: Default::default(), order: vec![0; 1 << 16], through_calls }
    }

    pub(crate) fn learn(&mut self, traces: &[Vec<Slot>]) {
        for t in traces {
            if let Some(s) = t.first() {
                self.entries.insert(s.pc);
            }
            for w in t.windows(2) {
                let (a, b) = (w[0], w[1]);
                let moved = b.sp as i32 - a.sp as i32;
                match a.op {
                    0x20 => {
                        self.entries.insert(b.pc);
                        self.succ.entry(a.pc).or_default().insert(a.pc.wrapping_add(3));
                        if self.through_calls {
                            self.succ.entry(a.pc).or_default().insert(b.pc);
                        }
                    }
                    0x60 | 0x40 if self.through_calls => {
                        self.succ.entry(a.pc).or_default().insert(b.pc);
                    }
                    0x60 | 0x40 | 0x00 => {}
                    _ if moved.abs() <= 1 => {
                        self.succ.entry(a.pc).or_default().insert(b.pc);
                    }
                    // An interrupt taken after the instruction.
                    _ => {
                        self.entries.insert(b.pc);
                    }
                }
            }
        }
        // Post-order by an explicit stack, entries and successors by address; unseen code ranks first.
        let mut post: Vec<u16> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &root in &self.entries {
            if !seen.insert(root) {
                continue;
            }
            // Each node with its successors left to visit, the lowest address popped first.
            let successors = |n: u16| -> Vec<u16> {
                self.succ.get(&n).map(|m| m.iter().rev().copied().collect()).unwrap_or_default()
            };
            let mut stack: Vec<(u16, Vec<u16>)> = vec![(root, successors(root))];
            while let Some((node, next)) = stack.last_mut() {
                if let Some(n) = next.pop() {
                    if seen.insert(n) {
                        stack.push((n, successors(n)));
                    }
                } else {
                    post.push(*node);
                    stack.pop();
                }
            }
        }
        self.order = vec![0; 1 << 16];
        for (i, &pc) in post.iter().rev().enumerate() {
            self.order[pc as usize] = i as u32 + 1;
        }
    }
}

/// The longest common subsequence's length, 64 cells at once (Hyyro's bit-parallel form of the
/// Allison-Dix recurrence: a zero bit of `v` is a match that lengthens it).
fn lcs(a: &[u32], b: &[u32]) -> usize {
    let words = a.len().div_ceil(64);
    let mut masks: std::collections::HashMap<u32, Vec<u64>> = std::collections::HashMap::new();
    for (i, &c) in a.iter().enumerate() {
        masks.entry(c).or_insert_with(|| vec![0; words])[i / 64] |= 1 << (i % 64);
    }
    let mut v = vec![!0u64; words];
    for c in b {
        let Some(m) = masks.get(c) else { continue };
        let mut carry = false;
        for (v, &m) in v.iter_mut().zip(m) {
            let (sum, c1) = v.overflowing_add(*v & m);
            let (sum, c2) = sum.overflowing_add(carry as u64);
            carry = c1 || c2;
            *v = sum | (*v & !m);
        }
    }
    let ones: usize = v.iter().map(|w| w.count_ones() as usize).sum::<usize>() - (words * 64 - a.len());
    a.len() - ones
}

fn sp_pc_keys(traces: &[&[Slot]]) -> Vec<Vec<u32>> {
    traces.iter().map(|t| t.iter().map(|s| (s.sp as u32) << 16 | s.pc as u32).collect()).collect()
}

/// The fewest rounds any vote order could take for a warp is the shortest common supersequence
/// of its envs' (stack, PC) traces (a round runs every thread whose next key is the one chosen),
/// so at least that of any two of them, `|a| + |b| - LCS(a, b)`. Returns that pairwise bound.
fn pairwise_bound(traces: &[&[Slot]]) -> u64 {
    let keys = sp_pc_keys(traces);
    let mut bound = keys.iter().map(|k| k.len() as u64).max().unwrap_or(0);
    for (i, a) in keys.iter().enumerate() {
        for b in &keys[i + 1..] {
            bound = bound.max((a.len() + b.len() - lcs(a, b)) as u64);
        }
    }
    bound
}

/// A vote order made with hindsight of the warp's traces: a common supersequence of its envs'
/// (stack, PC) keys, built by merging each env's keys, the longest first, into the supersequence
/// so far along a longest common subsequence (progressive alignment). Returns the rounds of that
/// schedule (each key a round, in which every env whose next key it is goes on).
fn merged_supersequence(traces: &[&[Slot]]) -> u64 {
    let mut keys = sp_pc_keys(traces);
    keys.sort_by_key(|k| std::cmp::Reverse(k.len()));
    let mut merged: Vec<u32> = Vec::new();
    for t in &keys {
        // d[i * w + j]: the longest common subsequence of merged[i..] and t[j..].
        let (n, m, w) = (merged.len(), t.len(), t.len() + 1);
        let mut d = vec![0u16; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                let (skip_mine, skip_theirs) = (d[(i + 1) * w + j], d[i * w + j + 1]);
                d[i * w + j] = if merged[i] == t[j] { d[(i + 1) * w + j + 1] + 1 } else { skip_mine.max(skip_theirs) };
            }
        }
        let mut out = Vec::with_capacity(n + m);
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && merged[i] == t[j] {
                out.push(merged[i]);
                (i, j) = (i + 1, j + 1);
            } else if j == m || (i < n && d[(i + 1) * w + j] >= d[i * w + j + 1]) {
                out.push(merged[i]);
                i += 1;
            } else {
                out.push(t[j]);
                j += 1;
            }
        }
        merged = out;
    }
    let mut at = vec![0usize; keys.len()];
    let mut rounds = 0;
    for k in merged {
        let mut ran = false;
        for (t, i) in keys.iter().zip(at.iter_mut()) {
            if t.get(*i) == Some(&k) {
                *i += 1;
                ran = true;
            }
        }
        rounds += ran as u64;
    }
    rounds
}

/// Each slot's place in the program as a call path: the addresses of the calls (JSR, BRK) and of
/// the instructions interrupted (an NMI or IRQ taken after them) that the env is inside,
/// outermost first, then its PC. A call is left when the stack rises above where it put its
/// return address, by RTS, RTI or pulls (SMB's jump tables pull a JSR's address and jump). A
/// frame that starts inside an interrupt handler starts below an unknown interrupted place,
/// taken as after any place not yet interrupted (`0xffff`).
fn call_paths(t: &[Slot]) -> Vec<Vec<u16>> {
    // Each call's address and the stack pointer inside it.
    let mut path: Vec<(u16, u8)> = match t.first() {
        Some(s) if s.sp <= 0xfc => vec![(0xffff, s.sp)],
        _ => Vec::new(),
    };
    let mut out = Vec::with_capacity(t.len());
    for (i, s) in t.iter().enumerate() {
        out.push(path.iter().map(|&(at, _)| at).chain([s.pc]).collect());
        let Some(next) = t.get(i + 1) else { break };
        // The stack's change the instruction makes by itself; 3 more down is an interrupt taken after it.
        let own: i32 = match s.op {
            0x20 => -2,
            0x60 => 2,
            0x40 => 3,
            0x48 | 0x08 => -1,
            0x68 | 0x28 => 1,
            0x00 => -3,
            _ => 0,
        };
        let after = (s.sp as i32 + own) as u8;
        while path.last().is_some_and(|&(_, inside)| after > inside) {
            path.pop();
        }
        if matches!(s.op, 0x20 | 0x00) {
            path.push((s.pc, after));
        }
        if s.op != 0x9a && next.sp as i32 - s.sp as i32 == own - 3 {
            path.push((s.pc, next.sp));
        }
    }
    out
}

/// Rounds of a vote by call path (`call_paths`): each round the threads at the (stack, PC) of the
/// lowest path run. A thread whose path is a prefix of another's (at the call the other made,
/// or not yet interrupted) runs first; at the first level where two paths differ, the lower
/// address runs first, as the lowest PC does inside one subroutine.
fn path_cost(traces: &[&[Slot]]) -> u64 {
    let keys: Vec<Vec<Vec<u16>>> = traces.iter().map(|t| call_paths(t)).collect();
    // Equal paths (a push apart) go by the env's place in the warp, not by the stack.
    ordered_cost(traces, |j, i| (&keys[j][i], j))
}

/// Rounds of the (stack, PC) vote, except that a thread at the call (or the interrupted place)
/// another thread is inside, by `call_paths`, runs first: it is behind that thread on one path.
fn behind_cost(traces: &[&[Slot]]) -> u64 {
    let keys: Vec<Vec<Vec<u16>>> = traces.iter().map(|t| call_paths(t)).collect();
    let mut at = vec![0usize; traces.len()];
    let mut rounds = 0;
    let live = |at: &[usize]| (0..traces.len()).filter(|&j| at[j] < traces[j].len()).collect::<Vec<_>>();
    loop {
        let running = live(&at);
        let behind = |j: usize| {
            let mine = &keys[j][at[j]];
            running.iter().any(|&k| k != j && keys[k][at[k]].len() > mine.len() && keys[k][at[k]].starts_with(mine))
        };
        let key = |j: usize| (!behind(j), traces[j][at[j]].sp, traces[j][at[j]].pc);
        let Some(j) = running.iter().copied().min_by_key(|&j| key(j)) else { break };
        rounds += 1;
        let chosen = traces[j][at[j]];
        run_group(traces, &mut at, chosen);
    }
    rounds
}

/// A warp's rounds in one part, from its envs' slots and clocks there.
type PartCost<'a> = dyn Fn(&[&[Slot]], &[&[u64]]) -> u64 + 'a;

/// `WARP_ORDERS=1`: each frame's launch under other vote orders than the kernel's lowest (stack,
/// PC), and two bounds on any order. A launch here is its slowest warp, each warp's rounds summed
/// over the frame's parts (the kernel's barriers, each warp on its own as #187's slack lets it).
/// The orders: the CPU cycle first, or its bucket of 2^B cycles; the frame's first instruction
/// first; held at back edges (`held_cost`); by the subroutine calls made so far, or their
/// bucket of 2^B; by call path (`path_cost`), or a thread behind another's call first
/// (`behind_cost`); one instruction ahead, at jumps or everywhere; aged (`aged_cost`); by the
/// PCs' learned places (`Ranks`, from the frames traced before), after the stack or alone; by
/// the code's flow (`Flow`, from the frames traced before) after the stack, or through calls
/// alone or after the stack. Then the kernel order's slowest warp with hindsight (each part
/// `merged_supersequence`'s order or the vote's, the shorter), the launch with every warp so (an
/// order no vote knows as it runs, but one a warp could take), and the largest pairwise bound
/// (`pairwise_bound`) over the warps, below which no order takes the launch.
pub(crate) fn order_costs(
    traces: &[Vec<Slot>],
    cycles: &[Vec<u64>],
    ranks: &Ranks,
    flow: &Flow,
    whole_flow: &Flow,
) -> String {
    let part = FRAME_CYCLES / parts();
    // Warp `w`'s rounds under `cost`, part by part.
    let warp_parts = |w: usize, cost: &PartCost| -> u64 {
        let (tw, cw) = (&traces[w * WARP..(w + 1) * WARP], &cycles[w * WARP..(w + 1) * WARP]);
        (0..parts())
            .map(|p| {
                let (lo, hi) = (p * part, if p + 1 == parts() { u64::MAX } else { (p + 1) * part });
                let cut = |c: &[u64]| c.partition_point(|&x| x < lo)..c.partition_point(|&x| x < hi);
                let ts: Vec<&[Slot]> = tw.iter().zip(cw).map(|(t, c)| &t[cut(c)]).collect();
                let cs: Vec<&[u64]> = cw.iter().map(|c| &c[cut(c)]).collect();
                cost(&ts, &cs)
            })
            .sum()
    };
    let warps = traces.len() / WARP;
    let launch = |cost: &PartCost| (0..warps).map(|w| (warp_parts(w, cost), w)).max().unwrap_or((0, 0));
    let (base, slowest) = launch(&|t, _| ordered_cost(t, |_, _| ()));
    let mut cells = vec![format!("(stack, PC) {base}")];
    let mut add = |name: &str, rounds: u64| {
        cells.push(format!("{name} {rounds} ({:.3}x)", rounds as f64 / base.max(1) as f64));
    };
    add("cycle", launch(&|t, c| ordered_cost(t, |j, i| c[j][i])).0);
    for b in [8u32, 10] {
        add(&format!("cycle>>{b}"), launch(&|t, c| ordered_cost(t, |j, i| c[j][i] >> b)).0);
    }
    add("first", launch(&|t, _| ordered_cost(t, |_, i| i > 0)).0);
    add("held", launch(&|t, _| held_cost(t)).0);
    // The subroutine calls (JSR) a thread made so far in the part, a clock that loops do not wind.
    let by_calls = |t: &[&[Slot]], shift: u32| {
        let so_far =
            |t: &[Slot]| t.iter().scan(0, |n, s| Some(std::mem::replace(n, *n + (s.op == 0x20) as u64))).collect();
        let calls: Vec<Vec<u64>> = t.iter().map(|t| so_far(t)).collect();
        ordered_cost(t, |j, i| calls[j][i] >> shift)
    };
    for shift in [0u32, 2] {
        add(&format!("calls>>{shift}"), launch(&|t, _| by_calls(t, shift)).0);
    }
    add("call path", launch(&|t, _| path_cost(t)).0);
    add("behind first", launch(&|t, _| behind_cost(t)).0);
    // Looking one instruction ahead: a thread at a JMP or JSR (or at any instruction) votes the
    // (stack, PC) it goes to, so one about to jump into code that others run joins them first.
    let ahead = |t: &[&[Slot]], every: bool| {
        let next = |t: &[Slot], i: usize| {
            let n = if every || matches!(t[i].op, 0x4c | 0x20) { t.get(i + 1).unwrap_or(&t[i]) } else { &t[i] };
            (n.sp, n.pc)
        };
        ordered_cost(t, |j, i| next(t[j], i))
    };
    add("jumps ahead", launch(&|t, _| ahead(t, false)).0);
    add("all ahead", launch(&|t, _| ahead(t, true)).0);
    for patience in [64u64, 256, 1024] {
        add(&format!("aged {patience}"), launch(&|t, _| aged_cost(t, patience)).0);
    }
    add("(stack, rank)", launch(&|t, _| ordered_cost(t, |j, i| (t[j][i].sp, ranks.rank(t[j][i].pc)))).0);
    add("rank", launch(&|t, _| ordered_cost(t, |j, i| (ranks.rank(t[j][i].pc), t[j][i].pc))).0);
    add("(stack, flow)", launch(&|t, _| ordered_cost(t, |j, i| (t[j][i].sp, flow.order[t[j][i].pc as usize]))).0);
    let through = |pc: u16| whole_flow.order[pc as usize];
    add("flow through calls", launch(&|t, _| ordered_cost(t, |j, i| through(t[j][i].pc))).0);
    add("(stack, flow through calls)", launch(&|t, _| ordered_cost(t, |j, i| (t[j][i].sp, through(t[j][i].pc)))).0);
    // Per warp, its rounds with hindsight and its pairwise bound, on as many threads as the
    // machine has.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut bounds = vec![(0u64, 0u64); warps];
    let per = warps.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (k, b) in bounds.chunks_mut(per).enumerate() {
            let warp_parts = &warp_parts;
            s.spawn(move || {
                for (i, b) in b.iter_mut().enumerate() {
                    // Hindsight part by part: the merged order, or the vote's where that is shorter.
                    let best = |t: &[&[Slot]], _: &[&[u64]]| merged_supersequence(t).min(ordered_cost(t, |_, _| ()));
                    *b = (warp_parts(k * per + i, &best), warp_parts(k * per + i, &|t, _| pairwise_bound(t)));
                }
            });
        }
    });
    add("its slowest warp with hindsight", bounds[slowest].0);
    add("with hindsight", bounds.iter().map(|b| b.0).max().unwrap_or(0));
    add("no order below", bounds.iter().map(|b| b.1).max().unwrap_or(0));
    cells.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vote_cost;

    /// A small generator, so the cases are the same on every run.
    fn keys(seed: &mut u64, len: usize, alphabet: u64) -> Vec<u32> {
        (0..len)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                (*seed % alphabet) as u32
            })
            .collect()
    }

    fn lcs_by_table(a: &[u32], b: &[u32]) -> usize {
        let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in 0..a.len() {
            for j in 0..b.len() {
                d[i + 1][j + 1] = if a[i] == b[j] { d[i][j] + 1 } else { d[i][j + 1].max(d[i + 1][j]) };
            }
        }
        d[a.len()][b.len()]
    }

    #[test]
    fn the_bit_parallel_lcs_agrees_with_the_table() {
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        // Lengths across the 64-bit word edges, alphabets from one key to many.
        for case in 0..600 {
            let (la, lb) = ((case * 7) % 200, (case * 13) % 190);
            let alphabet = 1 + (case as u64 % 12);
            let (a, b) = (keys(&mut seed, la, alphabet), keys(&mut seed, lb, alphabet));
            assert_eq!(lcs(&a, &b), lcs_by_table(&a, &b), "case {case}: {la} x {lb} over {alphabet} keys");
        }
    }

    fn slots(keys: &[u32]) -> Vec<Slot> {
        keys.iter().map(|&k| Slot { pc: k as u16, op: 0xea, sp: 0xfd }).collect()
    }

    #[test]
    fn hindsight_lies_between_the_pairwise_bound_and_the_vote() {
        let mut seed = 12345;
        for case in 0..40 {
            // A shared body with a few envs' own detours, as diverged envs run.
            let body = keys(&mut seed, 60, 40);
            let traces: Vec<Vec<Slot>> = (0..8)
                .map(|e| {
                    let mut t = body.clone();
                    let at = (case * 5 + e * 11) % t.len();
                    t.splice(at..at, keys(&mut seed, e % 4 * 5, 40).into_iter().map(|k| k + 100));
                    slots(&t)
                })
                .collect();
            let refs: Vec<&[Slot]> = traces.iter().map(Vec::as_slice).collect();
            let vote = vote_cost(&refs, |s| (s.sp, s.pc));
            let (merged, bound) = (merged_supersequence(&refs), pairwise_bound(&refs));
            assert!(bound <= merged, "case {case}: bound {bound} above hindsight {merged}");
            assert!(bound <= vote, "case {case}: bound {bound} above the vote {vote}");
            assert!(bound >= traces.iter().map(|t| t.len() as u64).max().unwrap());
            // For two envs both are exact: the shortest common supersequence.
            assert_eq!(merged_supersequence(&refs[..2]), pairwise_bound(&refs[..2]), "case {case}");
        }
        // Two envs on unrelated paths: hindsight is their shortest common supersequence.
        for case in 0..40 {
            let pair = [slots(&keys(&mut seed, 30 + case, 4)), slots(&keys(&mut seed, 50, 4))];
            let refs: Vec<&[Slot]> = pair.iter().map(Vec::as_slice).collect();
            assert_eq!(merged_supersequence(&refs), pairwise_bound(&refs), "pair {case}");
        }
        // Envs on one path take its length, however the order is made.
        let same = vec![slots(&[5, 3, 9, 3, 1]); 4];
        let refs: Vec<&[Slot]> = same.iter().map(Vec::as_slice).collect();
        assert_eq!((merged_supersequence(&refs), pairwise_bound(&refs)), (5, 5));
    }

    #[test]
    fn the_flow_orders_code_as_it_runs_not_by_address() {
        let slot = |pc: u16, op: u8| Slot { pc, op, sp: 0xfd };
        // $9000 jumps back to $8000, which loops on itself (a BNE back) and goes on to $8004.
        let t = vec![
            slot(0x9000, 0xea),
            slot(0x9001, 0x4c),
            slot(0x8000, 0xea),
            slot(0x8001, 0xd0),
            slot(0x8000, 0xea),
            slot(0x8001, 0xd0),
            slot(0x8003, 0xea),
        ];
        let mut flow = Flow::new(false);
        flow.learn(&[t]);
        let at = |pc: u16| flow.order[pc as usize];
        assert!(0 < at(0x9000) && at(0x9000) < at(0x9001), "code in the order it ran");
        assert!(at(0x9001) < at(0x8000), "the jump's target orders after it");
        assert!(at(0x8000) < at(0x8001) && at(0x8001) < at(0x8003), "a loop's body before its exit");
        assert_eq!(at(0x8002), 0, "code never run ranks first");
    }

    #[test]
    fn a_call_path_follows_calls_returns_pulls_and_interrupts() {
        let slot = |pc: u16, op: u8, sp: u8| Slot { pc, op, sp };
        let t = [
            slot(0x8000, 0x20, 0xff), // JSR $9000
            slot(0x9000, 0x20, 0xfd), // JSR $A000
            slot(0xa000, 0x68, 0xfb), // PLA, PLA: a jump table drops the call's address
            slot(0xa001, 0x68, 0xfc),
            slot(0xa002, 0xea, 0xfd), // NOP, then an NMI is taken
            slot(0xc000, 0x40, 0xfa), // RTI
            slot(0xa003, 0x60, 0xfd), // RTS
            slot(0x8003, 0xea, 0xff),
        ];
        let want: [&[u16]; 8] = [
            &[0x8000],
            &[0x8000, 0x9000],
            &[0x8000, 0x9000, 0xa000],
            &[0x8000, 0xa001], // the first pull leaves the call
            &[0x8000, 0xa002],
            &[0x8000, 0xa002, 0xc000],
            &[0x8000, 0xa003],
            &[0x8003],
        ];
        assert_eq!(call_paths(&t), want.map(<[u16]>::to_vec));
    }
}

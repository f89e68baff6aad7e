//! What the warp models share: a block's critical path over its frame's parts.

/// A block's critical path in rounds, from each warp's rounds in each part (`rounds[w][p]`): a
/// warp starts part p once it has finished part p - 1 and every warp of the block has finished
/// part p - 1 - `slack` (0: a barrier after each part, as the kernel; 1: one part of slack,
/// docs/kernel-notes.md #187). A round is a unit of time whatever the other warps do.
pub fn block_path(rounds: &[Vec<u64>], slack: usize) -> u64 {
    let parts = rounds.first().map_or(0, |r| r.len());
    let mut finish = vec![vec![0u64; parts]; rounds.len()];
    let mut all = vec![0u64; parts];
    for p in 0..parts {
        for (w, r) in rounds.iter().enumerate() {
            let own = if p > 0 { finish[w][p - 1] } else { 0 };
            let gate = if p > slack { all[p - 1 - slack] } else { 0 };
            finish[w][p] = own.max(gate) + r[p];
        }
        all[p] = finish.iter().map(|f| f[p]).max().unwrap_or(0);
    }
    all.last().copied().unwrap_or(0)
}

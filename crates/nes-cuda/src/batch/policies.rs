//! When a batch sorts its envs on the device, and when it draws its pictures line by line
//! rather than while running: two small policies of [`super::Batch`], each fed what the
//! GPU's last work found and never waiting for it.

/// When a batch with [`draw_lines`](crate::BatchConfig::draw_lines) draws line by line: in
/// windows of `LINES_WINDOW` drawn steps, after each of which it reads how many frames the
/// renderer left to a redraw; when more than half were, the next `LINES_PAUSE` drawn steps draw
/// while running.
/// A frame redrawn costs about as much as one drawn while running, plus the undrawn run and the
/// renderer (an H200, a test ROM whose every frame is redrawn, 16,384 envs: 79k env-steps/s line
/// by line, 97k drawing while running or with this policy; kernel-notes #80). The pictures are
/// the same either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinesPolicy {
    /// Drawn steps in the current window (line by line).
    window: u32,
    /// Drawn steps left to draw while running.
    paused: u32,
    /// Whether the last drawn step was drawn line by line.
    pub last_by_lines: bool,
    /// Drawn steps so far: line by line, while running.
    pub by_lines: u64,
    pub while_running: u64,
}

/// Drawn steps between two reads of the redraw count (each read waits for the queued work).
pub const LINES_WINDOW: u32 = 16;
/// Drawn steps drawn while running after a window with most frames redrawn.
pub const LINES_PAUSE: u32 = 256;

impl LinesPolicy {
    /// Whether the next drawn step is drawn line by line.
    pub fn by_lines_now(&self) -> bool {
        self.paused == 0
    }

    /// Records a drawn step (`by_lines_now` said how); true when a window just ended, so the
    /// redraw count is due ([`LinesPolicy::window_ended`]).
    pub fn drawn(&mut self) -> bool {
        self.last_by_lines = self.paused == 0;
        if self.paused > 0 {
            self.paused -= 1;
            self.while_running += 1;
            return false;
        }
        self.by_lines += 1;
        self.window += 1;
        self.window == LINES_WINDOW
    }

    /// The frames redrawn in the window that just ended, of `n_envs` envs.
    pub fn window_ended(&mut self, redrawn: u64, n_envs: usize) {
        self.window = 0;
        if redrawn * 2 > n_envs as u64 * LINES_WINDOW as u64 {
            self.paused = LINES_PAUSE;
        }
    }
}

/// When a batch that regroups on the device sorts (kernel-notes #153). A sort whose order is the
/// one before (every count equal, as when all envs play in lockstep, protocol A) says the next
/// sorts would change nothing either: the batch then skips the sorts of the next `calm` steps,
/// `calm` doubling up to `SORT_CALM_MAX` while sorts keep leaving the order as it was; a sort that
/// moves an env makes it sort every step again. The batch learns what a sort found without
/// waiting for it: from a word copied to pinned host memory, read once the copy's event has
/// completed (until then it sorts as usual). Results are the same in any order; only the speed
/// changes (the sorts cost protocol A 2.8% on an H200, kernel-notes "What regrouping costs
/// protocol A").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SortPolicy {
    /// Steps to skip after each sort that left the order as it was, and those left to skip now.
    calm: u32,
    skip: u32,
    /// Steps whose regrouping was due: sorted, skipped.
    pub sorted: u64,
    pub skipped: u64,
}

/// The most steps a batch skips sorting after a sort that left the order as it was.
pub const SORT_CALM_MAX: u32 = 16;

impl SortPolicy {
    /// What a sort since the last call found: whether it moved an env.
    pub fn learn(&mut self, moved: bool) {
        if moved {
            (self.calm, self.skip) = (0, 0);
        } else {
            self.calm = (self.calm * 2).clamp(1, SORT_CALM_MAX);
            self.skip = self.calm;
        }
    }

    /// Whether the last sort the batch learned of left the order as it was: its envs run alike
    /// (lockstep), so the step launch takes blocks for that (launch.rs `default_step_block`) and
    /// a step that records nothing between its frames runs them in one launch (`launch_step`).
    pub fn calm(&self) -> bool {
        self.calm > 0
    }

    /// A step whose regrouping is due: whether it sorts.
    pub fn sort_now(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            self.skipped += 1;
            return false;
        }
        self.sorted += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `steps` steps with regrouping due, each sort (if it runs) answering `moved(step)`,
    /// the answer read one step later (the bench's case: the step before has finished).
    fn sorts(steps: u64, moved: impl Fn(u64) -> bool) -> (SortPolicy, Vec<bool>) {
        let mut p = SortPolicy::default();
        let mut pending = None;
        let mut ran = Vec::new();
        for step in 0..steps {
            if let Some(m) = pending.take() {
                p.learn(m);
            }
            let sorts = p.sort_now();
            if sorts {
                pending = Some(moved(step));
            }
            ran.push(sorts);
        }
        (p, ran)
    }

    #[test]
    fn sorts_that_move_nothing_are_skipped_ever_longer_and_one_that_moves_resumes_them() {
        // Lockstep: after the first sort, 1, 2, 4, 8 then 16 steps skipped between sorts.
        let (p, ran) = sorts(100, |_| false);
        let at: Vec<usize> = ran.iter().enumerate().filter(|(_, &r)| r).map(|(i, _)| i).collect();
        assert_eq!(at, [0, 2, 5, 10, 19, 36, 53, 70, 87]);
        assert_eq!((p.sorted, p.skipped), (9, 91));
        assert!(p.calm(), "lockstep: the step takes the lockstep blocks");
        // Envs that diverge: every step sorts.
        let (p, ran) = sorts(50, |_| true);
        assert!(ran.iter().all(|&r| r) && p.skipped == 0);
        assert!(!p.calm());
        // Diverging from step 40 on: the next sort moves envs, and sorting is every step again.
        let (p, ran) = sorts(100, |step| step >= 40);
        let first = (40..100).find(|&s| ran[s as usize]).unwrap();
        assert!(ran[first as usize..].iter().all(|&r| r), "sorts every step from step {first}");
        assert!(!p.calm(), "no longer in lockstep");
    }

    /// Runs `steps` drawn steps with `redrawn` frames redrawn in each window drawn line by line;
    /// returns the policy and how each drawn step was drawn (true: line by line).
    fn drive(n_envs: usize, redrawn: u64, steps: u32) -> (LinesPolicy, Vec<bool>) {
        let mut p = LinesPolicy::default();
        let mut how = Vec::new();
        for _ in 0..steps {
            how.push(p.by_lines_now());
            if p.drawn() {
                p.window_ended(redrawn, n_envs);
            }
        }
        (p, how)
    }

    #[test]
    fn a_batch_whose_frames_are_drawn_by_lines_keeps_drawing_by_lines() {
        let (p, how) = drive(64, 0, 10 * LINES_WINDOW);
        assert!(how.iter().all(|&l| l));
        assert_eq!((p.by_lines, p.while_running), (10 * LINES_WINDOW as u64, 0));
        // Half the frames redrawn is not yet most of them.
        let (_, how) = drive(64, 64 * LINES_WINDOW as u64 / 2, 10 * LINES_WINDOW);
        assert!(how.iter().all(|&l| l));
    }

    #[test]
    fn a_batch_whose_frames_are_mostly_redrawn_draws_while_running_then_tries_again() {
        let n = 64;
        let most = n as u64 * LINES_WINDOW as u64 / 2 + 1;
        let total = 2 * (LINES_WINDOW + LINES_PAUSE) + 3;
        let (p, how) = drive(n, most, total);
        let w = LINES_WINDOW as usize;
        let cycle = w + LINES_PAUSE as usize;
        for (i, &l) in how.iter().enumerate() {
            assert_eq!(l, i % cycle < w, "drawn step {i}");
        }
        assert_eq!(p.by_lines + p.while_running, total as u64);
        assert_eq!(p.while_running, 2 * LINES_PAUSE as u64);
        assert!(p.last_by_lines);
    }
}

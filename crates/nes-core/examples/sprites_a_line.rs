//! How many sprites the line renderer meets a line under protocol B (docs/kernel-notes.md, "Next,
//! from what these runs measured"): for each visible line, the sprites in range of it (at most 8,
//! the evaluation's limit) in OAM after each step's last frame, over steps 30-229. A count of
//! the workload, not a measurement of speed.
//!
//! ```text
//! cargo run --release -p nes-core --example sprites_a_line -- [ENVS]
//! ```
//! ENVS (default 16) SMB consoles from World 1-1's first frame of play, each with its own seeded
//! SIMPLE_MOVEMENT buttons, new every 4 frames, as the GPU benchmark draws them.

#[path = "common/rng.rs"]
mod rng;
use rng::{Rng, SIMPLE_MOVEMENT};
#[path = "common/smb.rs"]
mod smb;

fn main() {
    let envs: usize = std::env::args().nth(1).map_or(16, |a| a.parse().expect("ENVS: a number"));
    let mut consoles: Vec<_> = (0..envs).map(|_| smb::world_1_1()).collect();
    let mut rngs: Vec<Rng> = (0..envs).map(Rng::for_env).collect();
    let (mut lines, mut sprites, mut busy) = (0u64, 0u64, 0u64);
    for step in 0..230 {
        for (c, r) in consoles.iter_mut().zip(rngs.iter_mut()) {
            c.set_buttons(0, SIMPLE_MOVEMENT[(r.next() % 7) as usize]);
            for _ in 0..4 {
                c.run_frame();
            }
            if step < 30 {
                continue;
            }
            let f = c.to_flat();
            let height = if f.ppu_ctrl & 0x20 != 0 { 16 } else { 8 };
            // Line `line`'s evaluation picks the sprites of line + 1 (lines.cuh lines_sprite_masks).
            for line in 0..239i32 {
                let n = (0..64).filter(|k| (0..height).contains(&(line - f.ppu_oam[k * 4] as i32))).count().min(8);
                lines += 1;
                sprites += n as u64;
                busy += (n > 0) as u64;
            }
        }
    }
    println!(
        "{envs} envs, {lines} lines: {:.2} sprites a line, {:.1}% of lines with any",
        sprites as f64 / lines as f64,
        100.0 * busy as f64 / lines as f64
    );
}

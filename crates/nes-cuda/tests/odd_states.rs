//! States no game reaches, which nes-core still accepts: a Rust caller can hand any `FlatState`
//! to `Batch::load_state` or `Batch::set_bank`, and the batch then uploads it as nes-core loads
//! it (`RomImage::loadable_state`). From there the kernels (compiled as host C++) must run it as
//! nes-core does, picture included, and must not crash.
//!
//! Each case takes a running console of every supported board, changes one to four bytes of
//! randomly picked fields (registers, latches, counters, banking maps, OAM, palette; not the
//! RAM, whose odd values any game run tries), and, if nes-core accepts the result, runs both
//! sides three frames with a random pad: the kernels both drawing while they run and drawing
//! the frame after it, line by line (the GPU's default), with its 84x84 picture. Run in a debug build too (`make test` does), where
//! nes-core's overflow checks turn a sum an odd state makes overflow into a failure.

use nes_core::flat::{elem_size, first_difference, FlatState, FIELDS, FLAT_STATE_SIZE};
use nes_core::Console;
use nes_cuda::picture::{gray84, GRAY_PIXELS};
use nes_cuda::{host, RomImage, PIXELS_PER_ENV};

mod common;
use common::Rng;
#[path = "../../nes-core/tests/common/mod.rs"]
mod core_roms;
use core_roms::{tiny_rom, BOARDS};

/// Cases per board.
const CASES: usize = 400;

/// The fields a case may change: all but the memories, where every byte value is a state a game
/// can make, and the cartridge's description, which a load checks against the ROM.
fn fields() -> Vec<(&'static str, usize, usize)> {
    FIELDS
        .iter()
        .filter(|(name, ..)| {
            !matches!(*name, "cpu_ram" | "cart_prg_ram" | "cart_chr_ram" | "cart_ciram")
                && !name.starts_with("cart_header")
                && !matches!(
                    *name,
                    "cart_kind" | "cart_prg_len" | "cart_chr_len" | "cart_chr_is_ram" | "cart_prg_ram_size"
                )
        })
        .map(|&(name, ctype, count, offset)| (name, offset, count * elem_size(ctype)))
        .collect()
}

#[test]
fn odd_states_nes_core_accepts_run_identically_on_the_kernels() {
    let fields = fields();
    assert!(fields.len() > 100, "the field table lost its fields: {}", fields.len());
    let mut rng = Rng(0x2545_f491);
    let (mut accepted, mut refused) = (0, 0);
    for &(mapper, prg, chr) in BOARDS {
        let rom = tiny_rom(mapper, prg, chr);
        let image = RomImage::new(&rom).unwrap();
        let mut base = Console::new(&rom).unwrap();
        for _ in 0..20 {
            base.run_frame();
        }
        let base = base.to_flat();
        for case in 0..CASES {
            let mut bytes = [0u8; FLAT_STATE_SIZE];
            base.to_bytes(&mut bytes);
            let mut changed = Vec::new();
            for _ in 0..1 + rng.next() % 4 {
                let (name, offset, len) = fields[rng.next() as usize % fields.len()];
                let at = offset + rng.next() as usize % len;
                // Half of the changes flip the low bit alone, which keeps a flag a flag (0 or 1).
                bytes[at] ^= if rng.next() % 2 == 0 { 1 } else { 1 + (rng.next() % 255) as u8 };
                changed.push(name);
            }
            let odd = FlatState::from_bytes(&bytes);
            let Ok(loaded) = image.loadable_state(&odd) else {
                refused += 1;
                continue;
            };
            accepted += 1;
            let mut core = image.console(&odd).unwrap();
            let (mut states, mut lined) = (vec![loaded], vec![loaded]);
            let (mut pixels, mut by_lines) = (vec![0u8; PIXELS_PER_ENV], vec![0u8; PIXELS_PER_ENV]);
            let (mut gray, mut want) = (vec![0u8; GRAY_PIXELS], vec![0u8; GRAY_PIXELS]);
            for frame in 0..3 {
                let pad = rng.next() as u8;
                core.set_buttons(0, pad);
                core.run_frame();
                host::step(&mut states, &image, &[pad], 1, Some(&mut pixels[..])).unwrap();
                host::step_drawn_by_lines(&mut lined, &image, &[pad], 1, &mut by_lines, Some(&mut gray)).unwrap();
                gray84(core.pixels(), &mut want).unwrap();
                let what = format!("mapper {mapper}, case {case} (changed {changed:?}), frame {frame}");
                for (how, state, picture) in [("drawn", &states[0], &pixels), ("by lines", &lined[0], &by_lines)] {
                    if let Some((field, i)) = first_difference(&core.to_flat(), state) {
                        panic!("{what}, {how}: first differing field `{field}`[{i}]");
                    }
                    if let Some(at) = picture.iter().zip(core.pixels()).position(|(a, b)| a != b) {
                        panic!("{what}, {how}: pixel ({}, {}) differs", at % 256, at / 256);
                    }
                }
                assert!(gray == want, "{what}: the line renderer's 84x84 picture differs");
            }
        }
    }
    println!("{accepted} odd states accepted and run, {refused} refused");
    // Most single-field changes are states nes-core can be in; if nearly all were refused, this
    // test would check nothing.
    assert!(accepted > refused, "{accepted} accepted, {refused} refused");
}

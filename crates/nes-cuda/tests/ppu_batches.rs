//! The kernels' catch-up PPU against their own dot-by-dot PPU (host build): `ppu_run` takes tiles,
//! horizontal blanks and whole lines at once (kernels/ppu_batches.cuh) and must leave exactly the
//! state and pixels that ticking the same dots one by one leaves, at every batch end. The kernel
//! twin of nes-core's batch tests (crates/nes-core/src/ppu/batch_tests.rs); the whole-console
//! parity tests (parity.rs) rarely reach some of these paths' corners, such as a line run whole
//! just above the first line of sprite 0.

use nes_core::flat::{first_difference, FlatState};
use nes_core::Console;
use nes_cuda::{host, RomImage, PIXELS_PER_ENV};

mod common;
use common::Rng;

/// NROM with 16 KiB of PRG (a `JMP` to itself at every vector), 8 KiB of CHR RAM (so tests
/// write patterns) and vertical mirroring.
fn rom() -> Vec<u8> {
    let mut rom = vec![0u8; 16 + 0x4000];
    rom[0..4].copy_from_slice(b"NES\x1a");
    rom[4] = 1;
    rom[6] = 0x01;
    let prg = &mut rom[16..];
    prg[0..3].copy_from_slice(&[0x4c, 0x00, 0x80]);
    prg[0x3ffa..].copy_from_slice(&[0x00, 0x80, 0x00, 0x80, 0x00, 0x80]);
    rom
}

/// A console past the PPU's warm-up, in vertical blank.
fn warm(rom: &[u8]) -> FlatState {
    let mut c = Console::new(rom).unwrap();
    for _ in 0..3 {
        c.run_frame();
    }
    c.to_flat()
}

/// Runs `dots` dots on two copies of `state`: one ticks, the other runs batches of random
/// length (half up to `longest` dots, half up to 20); state and pixels must agree at every
/// batch end. With `writes`, a third of the batch ends also change both as a CPU write would
/// (during rendering too).
fn batches_match_ticks(
    case: usize,
    state: &FlatState,
    image: &RomImage,
    rng: &mut Rng,
    dots: u32,
    longest: u32,
    writes: Writes,
) {
    let pixels = state.ppu_render_pixels != 0;
    let (mut ticked, mut batched) = (*state, *state);
    let (mut pt, mut pb) = (vec![0u8; PIXELS_PER_ENV], vec![0u8; PIXELS_PER_ENV]);
    let mut left = dots;
    while left > 0 {
        if writes != Writes::None && rng.next() % 3 == 0 {
            let seed = rng.next() | 1;
            for s in [&mut ticked, &mut batched] {
                write_between_batches(s, writes, Rng(seed));
            }
        }
        let n = (1 + rng.next() % if rng.next() & 1 != 0 { longest } else { 20 }).min(left);
        host::ppu_run(&mut ticked, image, n, true, pixels.then_some(&mut pt[..])).unwrap();
        host::ppu_run(&mut batched, image, n, false, pixels.then_some(&mut pb[..])).unwrap();
        left -= n;
        if let Some((field, i)) = first_difference(&ticked, &batched) {
            let at = (ticked.ppu_scanline, ticked.ppu_dot);
            panic!("case {case}: `{field}`[{i}] differs after a batch of {n} ending at (line, dot) {at:?}");
        }
        assert!(pt == pb, "case {case}: pixels differ at line {}", ticked.ppu_scanline);
    }
}

/// What `batches_match_ticks` writes between batches.
#[derive(Clone, Copy, PartialEq)]
enum Writes {
    None,
    /// OAMADDR, as a `$2003` write does.
    OamAddr,
    /// `v` and `t` (a `$2006` pair), or fine X (a first `$2005` write), or a byte of the
    /// nametables or the patterns (a `$2007` write): what the tiles a line already fetched
    /// no longer show.
    Scroll,
}

/// One write of kind `writes`, drawn from `rng` (seeded alike for both copies).
fn write_between_batches(s: &mut FlatState, writes: Writes, mut rng: Rng) {
    match (writes, rng.next() % 4) {
        (Writes::OamAddr, _) => s.ppu_oam_addr = rng.next() as u8,
        (Writes::Scroll, 0) => {
            s.ppu_t = rng.next() as u16 & 0x7fff;
            s.ppu_v = s.ppu_t;
        }
        (Writes::Scroll, 1) => s.ppu_x = rng.next() as u8 & 7,
        (Writes::Scroll, 2) => s.cart_ciram[rng.next() as usize % 0x800] = rng.next() as u8,
        (Writes::Scroll, _) => s.cart_chr_ram[rng.next() as usize % 0x2000] = rng.next() as u8,
        (Writes::None, _) => {}
    }
}

#[test]
fn the_catch_up_ppu_matches_ticking_dot_by_dot() {
    // Random patterns, nametables, palette, OAM and scroll; rendering masks with and without
    // sprites, left columns and background; pixels on and off; batches up to 3,000 dots (whole
    // lines, chains of them, the frame-end catch-up) and short ones.
    let rom = rom();
    let image = RomImage::new(&rom).unwrap();
    let base = warm(&rom);
    let mut rng = Rng(0x2545_f491);
    for case in 0..12 {
        let s = random_scene(&base, &mut rng, case);
        batches_match_ticks(
            case,
            &s,
            &image,
            &mut rng,
            3 * 89_342,
            if case % 3 == 0 { 700 } else { 3000 },
            Writes::None,
        );
    }
}

#[test]
fn the_catch_up_ppu_matches_ticking_with_oamaddr_moved_between_batches() {
    // As above, with OAMADDR written at batch ends: the batches' shortcuts through the sprite
    // evaluation (runs of out-of-range sprites, the pairs after the scan is done) must see that
    // the next read no longer comes from sprite `eval_n`.
    let rom = rom();
    let image = RomImage::new(&rom).unwrap();
    let base = warm(&rom);
    let mut rng = Rng(0x3c6e_f372);
    for case in 0..8 {
        let s = random_scene(&base, &mut rng, case);
        batches_match_ticks(case, &s, &image, &mut rng, 2 * 89_342, 40, Writes::OamAddr);
    }
}

/// Asks the `$2002` bound from `s` and ticks a copy to the dot before it (at most `limit` - 1
/// dots), where bits 5-7 of the status must be as they were; then one dot more, onto the bound.
/// Returns the state there and the bound.
fn tick_through_status_bound(case: usize, s: &FlatState, image: &RomImage, limit: u32) -> (FlatState, u32) {
    let dist = host::status_bound(s, image).unwrap();
    let mut t = *s;
    if dist > 1 {
        host::ppu_run(&mut t, image, dist.min(limit) - 1, true, None).unwrap();
        let (from, at) = ((s.ppu_scanline, s.ppu_dot), (t.ppu_scanline, t.ppu_dot));
        assert_eq!(t.ppu_status & 0xe0, s.ppu_status & 0xe0, "case {case}: bound {dist} from {from:?}, at {at:?}");
    }
    host::ppu_run(&mut t, image, 1, true, None).unwrap();
    (t, dist)
}

#[test]
fn the_status_bound_holds_with_oamaddr_moved_mid_evaluation() {
    // The bound a `$2002` read trusts instead of catching the PPU up, asked after random dots of
    // random scenes with OAMADDR written at random dots (`$2003` during rendering): ticking to
    // the dot before the change it names must leave bits 5-7 as they were. Reaches the
    // overflow bound's guards (`ppu_eval_cannot_fill`: the byte an odd dot already read, an
    // OAMADDR no longer at sprite `eval_n`), which the parity runs' scenes do not.
    let rom = rom();
    let image = RomImage::new(&rom).unwrap();
    let base = warm(&rom);
    let mut rng = Rng(0x5851_f42d);
    let mut changes = 0;
    for case in 0..6 {
        let mut s = random_scene(&base, &mut rng, case);
        s.ppu_render_pixels = 0;
        // Every OAM byte a Y near lines 40-95, so the diagonal scan reads Ys in range too and
        // lines there hold 8 sprites and more.
        for b in s.ppu_oam.iter_mut() {
            *b = (40 + rng.next() % 48) as u8;
        }
        let mut left = 89_342u32;
        while left > 0 {
            let skip = (1 + rng.next() % 12).min(left);
            host::ppu_run(&mut s, &image, skip, true, None).unwrap();
            left -= skip;
            if rng.next() % 4 == 0 {
                s.ppu_oam_addr = rng.next() as u8;
            }
            // The overflow flag stays set for the rest of a frame once it rises; clearing it
            // asks the overflow bound again on every line (any status is a state it must hold
            // for).
            if rng.next() % 2 == 0 {
                s.ppu_status &= !0x20;
            }
            let (t, _) = tick_through_status_bound(case, &s, &image, 3 * 89_342);
            changes += (t.ppu_status & 0xe0 != s.ppu_status & 0xe0) as u32;
        }
    }
    // Not vacuous: besides VBL's set and clear in each case, the scenes hit and overflow on
    // the very dot a bound names.
    assert!(changes > 12, "{changes} status changes");
}

#[test]
fn the_status_bound_holds_over_the_lines_sprite_0_spans() {
    // The sprite 0 bound in closed form (kernels/ppu.cuh `ppu_dots_to_hit`): from random dots of
    // scenes where sprite 0 misses on some lines and hits on others, ticking to the dot before
    // the bound must leave bits 5-7 as they were. Most bounds reach past the next line, so the
    // scenes' hits must also land on the very dot a bound names, lines ahead.
    let rom = rom();
    let image = RomImage::new(&rom).unwrap();
    let base = warm(&rom);
    let mut rng = Rng(0x1b87_3593);
    let (mut far, mut checked) = (0, 0);
    for case in 0..12 {
        let mut s = sprite_zero_scene(&base, &mut rng, case);
        let mut left = 2 * 89_342u32;
        while left > 0 {
            let skip = (1 + rng.next() % 600).min(left);
            host::ppu_run(&mut s, &image, skip, true, None).unwrap();
            left -= skip;
            let (t, dist) = tick_through_status_bound(case, &s, &image, 89_342);
            let status = s.ppu_status & 0xe0;
            checked += 1;
            // A hit on the bound's own dot, past the next line's dot 1 (the bound before the
            // closed form went no further).
            let beyond_next_line = dist > 342 - s.ppu_dot as u32;
            far += (beyond_next_line && dist <= 89_342 && (t.ppu_status & !status & 0x40) != 0) as u32;
        }
    }
    assert!(far > 50, "{far} hits on a bound lines ahead, of {checked} bounds");
}

#[test]
fn the_catch_up_ppu_matches_ticking_where_sprite_0_misses() {
    // Lines that show sprite 0 where it misses run as lines that draw nothing
    // (`ppu_line_misses`): batches must still leave what ticking leaves, hits included, and
    // with scroll, nametable and pattern writes between batches, after which the tiles a line
    // already fetched no longer show what `v` and memory do.
    let rom = rom();
    let image = RomImage::new(&rom).unwrap();
    let base = warm(&rom);
    let mut rng = Rng(0x68e3_1da4);
    for case in 0..16 {
        let s = sprite_zero_scene(&base, &mut rng, case);
        let writes = if case % 2 == 0 { Writes::None } else { Writes::Scroll };
        batches_match_ticks(case, &s, &image, &mut rng, 2 * 89_342, if case % 4 < 2 { 120 } else { 3000 }, writes);
    }
}

#[test]
fn the_status_bound_leaves_the_closed_form_where_it_does_not_hold() {
    // Three scenes where the closed form of `ppu_dots_to_hit` and `ppu_no_overflow_through`
    // would be late, each with its event checked to come: the bound must name it or an
    // earlier dot.
    let rom = rom();
    let image = RomImage::new(&rom).unwrap();
    let mut base = warm(&rom);
    base.cart_chr_ram[0x10..0x18].fill(0xff); // tile 1: every pixel opaque
    base.cart_chr_ram[0x18..0x20].fill(0);
    base.cart_ciram[..0x800].fill(1);
    base.ppu_oam.fill(0xff);
    base.ppu_ctrl = 0;
    base.ppu_t = 0;
    base.ppu_x = 0;
    base.ppu_mask = 0x1e;
    base.ppu_render_pixels = 0;
    let tick_to = |s: &mut FlatState, at: (u16, u16)| {
        while (s.ppu_scanline, s.ppu_dot) != at {
            host::ppu_run(s, &image, 1, true, None).unwrap();
        }
    };
    // Dots until the status bit `bit` rises, ticking from `s` (at most two lines).
    let dots_to = |s: &FlatState, bit: u8| {
        let mut t = *s;
        (1..=682u32).find(|_| {
            host::ppu_run(&mut t, &image, 1, true, None).unwrap();
            t.ppu_status & bit != 0
        })
    };

    // 1. The nametable cleared (a `$2007` write) after the line fetched the tiles under sprite
    // 0 (X 8: tile 1, the previous line's prefetch): the hit comes from the shifters.
    let mut s = base;
    s.ppu_oam[..4].copy_from_slice(&[100, 1, 0, 8]);
    tick_to(&mut s, (101, 0));
    s.cart_ciram[..0x800].fill(0);
    let hit = dots_to(&s, 0x40).expect("the fetched tiles hit");
    assert_eq!(hit, 9, "pixel 8 of line 101");
    assert!(host::status_bound(&s, &image).unwrap() <= hit);
    let (mut ticked, mut batched) = (s, s);
    host::ppu_run(&mut ticked, &image, 341, true, None).unwrap();
    host::ppu_run(&mut batched, &image, 341, false, None).unwrap();
    assert_eq!(first_difference(&ticked, &batched), None, "the line run as one that misses");

    // 2. OAMADDR 1 (a `$2003` write) before line 100's evaluation: it reads bytes 1-3 and 0 of
    // OAM as sprite 0's Y, tile, attributes and X, which hit on line 101, while the real
    // sprite 0 (Y 120) shows from line 121. The overflow flag set, so that its bound (an
    // unaligned OAMADDR: this line's dot 65) does not come first.
    let mut s = base;
    s.ppu_oam[..4].copy_from_slice(&[120, 100, 1, 0]);
    tick_to(&mut s, (100, 10));
    s.ppu_oam_addr = 1;
    s.ppu_status |= 0x20;
    let hit = dots_to(&s, 0x40).expect("the misread sprite hits");
    assert_eq!(hit, 341 - 10 + 121, "pixel 120 of line 101");
    assert!(host::status_bound(&s, &image).unwrap() <= hit);

    // 3. OAMADDR 1 after line 100's horizontal blank: line 101's evaluation misreads sprite 0
    // (Y hidden, its tile byte in range) and fills with sprites 1-7, so the diagonal scan of
    // sprites 8-63 (hidden, their other bytes in range) raises the overflow flag with 7
    // sprites in range. Background only: no hit to bound it first.
    let mut s = base;
    s.ppu_mask = 0x08;
    s.ppu_oam[1] = 97;
    for k in 1..8 {
        s.ppu_oam[k * 4] = 97;
    }
    for k in 8..64 {
        s.ppu_oam[k * 4 + 1..k * 4 + 4].fill(97);
    }
    tick_to(&mut s, (100, 330));
    s.ppu_oam_addr = 1;
    let overflow = dots_to(&s, 0x20).expect("the misread evaluation overflows");
    assert!(overflow > 11 + 65, "on line 101's evaluation");
    assert!(host::status_bound(&s, &image).unwrap() <= overflow);
}

/// Sprite 0 over a random scene with up to 7 other sprites (the rest hidden): any line, an X at
/// either edge of the screen or anywhere, either flip, 8x8 or 8x16 by PPUCTRL, random scroll and
/// fine X, the left column shown or clipped for each layer; half the pattern bytes empty and a
/// quarter a single pixel, so it misses on some lines and hits on others. No picture (a line only matters for the hit).
fn sprite_zero_scene(base: &FlatState, rng: &mut Rng, case: usize) -> FlatState {
    const MASKS: [u8; 4] = [0x1e, 0x18, 0x1a, 0x1c];
    let mut s = random_scene(base, rng, case);
    for b in s.cart_chr_ram.iter_mut() {
        *b = match rng.next() % 4 {
            0 | 1 => 0,
            2 => 1 << (rng.next() % 8),
            _ => rng.next() as u8,
        };
    }
    s.ppu_oam.fill(0xff);
    for k in 0..=(rng.next() % 8) as usize {
        s.ppu_oam[k * 4] = (rng.next() % 240) as u8;
        s.ppu_oam[k * 4 + 1] = rng.next() as u8;
        s.ppu_oam[k * 4 + 2] = rng.next() as u8 & 0xe3;
        s.ppu_oam[k * 4 + 3] = match rng.next() % 4 {
            0 => (rng.next() % 12) as u8,
            1 => (244 + rng.next() % 12) as u8,
            _ => rng.next() as u8,
        };
    }
    s.ppu_mask = MASKS[case % MASKS.len()];
    s.ppu_render_pixels = 0;
    s
}

/// Random patterns, nametables, palette, OAM and scroll on `base`; the rendering mask by
/// `case`; pixels on for even cases.
fn random_scene(base: &FlatState, rng: &mut Rng, case: usize) -> FlatState {
    const MASKS: [u8; 6] = [0x1e, 0x18, 0x08, 0x10, 0x1a, 0x16];
    let mut s = *base;
    for b in s.cart_chr_ram.iter_mut() {
        *b = if rng.next() % 3 == 0 { 0 } else { rng.next() as u8 };
    }
    for b in s.cart_ciram[..0x800].iter_mut() {
        *b = rng.next() as u8;
    }
    for b in s.ppu_palette.iter_mut() {
        *b = rng.next() as u8 & 0x3f;
    }
    for b in s.ppu_oam.iter_mut() {
        *b = rng.next() as u8;
    }
    // A few sprites (sprite 0 included) clustered on some lines for overflow and hits.
    for k in 0..24 {
        s.ppu_oam[k * 4] = (40 + rng.next() % 40) as u8;
    }
    s.ppu_mask = MASKS[case % MASKS.len()];
    s.ppu_ctrl = rng.next() as u8 & 0x38;
    s.ppu_t = rng.next() as u16 & 0x7fff;
    s.ppu_x = rng.next() as u8 & 7;
    s.ppu_render_pixels = (case % 2 == 0) as u8;
    s
}

#[test]
fn a_line_run_whole_still_fetches_sprite_0_for_the_next_line_that_shows_it() {
    // Sprite 0 (opaque, tile 1) at OAM Y 100 shows from line 101, over an opaque background.
    // One batch runs lines 100 and 101 whole and line 102 to dot 50: line 100 draws nothing,
    // but its horizontal blank must still fetch sprite 0's pattern, so the hit lands on line
    // 101 as when ticking, not one line late.
    let rom = rom();
    let image = RomImage::new(&rom).unwrap();
    let mut s = warm(&rom);
    s.cart_chr_ram[0x10..0x18].fill(0xff);
    s.cart_chr_ram[0x18..0x20].fill(0);
    s.cart_ciram[..0x800].fill(0);
    for (col, row) in [(12, 12), (13, 12), (12, 13), (13, 13)] {
        s.cart_ciram[row * 32 + col] = 1;
    }
    s.ppu_oam.fill(0xff);
    s.ppu_oam[..4].copy_from_slice(&[100, 1, 0, 100]);
    s.ppu_palette[..4].copy_from_slice(&[0x0f, 0x16, 0x27, 0x30]);
    s.ppu_ctrl = 0;
    s.ppu_t = 0;
    s.ppu_x = 0;
    s.ppu_mask = 0x1e;
    s.ppu_render_pixels = 0;
    while (s.ppu_scanline, s.ppu_dot) != (99, 340) {
        host::ppu_run(&mut s, &image, 1, true, None).unwrap();
    }
    let (mut ticked, mut batched) = (s, s);
    let n = 1 + 2 * 341 + 50;
    host::ppu_run(&mut ticked, &image, n, true, None).unwrap();
    host::ppu_run(&mut batched, &image, n, false, None).unwrap();
    assert_eq!((ticked.ppu_scanline, ticked.ppu_dot), (102, 50));
    assert_ne!(ticked.ppu_status & 0x40, 0, "ticking hits on line 101");
    assert_eq!(first_difference(&ticked, &batched), None);
}

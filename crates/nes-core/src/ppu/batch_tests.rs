//! Unit tests of the catch-up: the batch paths of [`Ppu::run`] (whole tiles, sprite slots,
//! horizontal blanks, lines, sprite evaluation by span and by line) against ticking the same
//! dots one by one from the same state, every saved byte and pixel compared at each batch's end.

use super::tests::{run_to, scene, warm, write_vram};
use super::*;

/// A small xorshift generator for the batch-versus-dot comparisons below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}

fn saved(ppu: &Ppu) -> alloc::vec::Vec<u8> {
    let mut buf = alloc::vec![0u8; 1024];
    let mut w = StateWriter::new(&mut buf);
    ppu.save(&mut w);
    let len = w.len();
    buf.truncate(len);
    buf
}

#[test]
fn evaluating_a_whole_line_at_once_matches_192_single_dots() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..4000 {
        let mut ppu = Ppu::new();
        ppu.scanline = (rng.next() % 240) as u16;
        ppu.ctrl = if rng.next() & 1 != 0 { CTRL_SPRITE_16 } else { 0 };
        // Y bytes near the line, so that 0 to ~20 sprites are in range (overflow, the
        // diagonal scan); every byte may be read as a Y by the buggy scan.
        let spread = 1 + rng.next() % 120;
        for b in ppu.oam.iter_mut() {
            *b = (ppu.scanline as u32 + 256 - 16 + rng.next() % spread) as u8;
        }
        ppu.oam_addr = if case % 4 == 0 { rng.next() as u8 } else { (rng.next() as u8) & !3 & 0x0f };
        ppu.status = (rng.next() as u8) & 0xe0;
        ppu.sec_oam = [0xff; 32];
        ppu.in_range_valid = false;
        let mut dots = ppu.clone();
        for d in 65..=256 {
            dots.sprite_eval(d);
        }
        ppu.sprite_eval_line();
        assert_eq!(saved(&ppu), saved(&dots), "case {case}: line {} oamaddr {}", ppu.scanline, dots.oam_addr);
    }
}

/// A PPU on a random visible line before its sprite evaluation (dot 65): every OAM byte a Y
/// near the line (0 to ~20 sprites in range, and the buggy scan's reads too), OAMADDR 0 or,
/// one case in four, anything.
fn evaluation_scene(rng: &mut Rng, case: usize) -> Ppu {
    let mut ppu = Ppu::new();
    ppu.scanline = (rng.next() % 240) as u16;
    ppu.ctrl = if rng.next() & 1 != 0 { CTRL_SPRITE_16 } else { 0 };
    let spread = 1 + rng.next() % 120;
    for b in ppu.oam.iter_mut() {
        *b = (ppu.scanline as u32 + 256 - 16 + rng.next() % spread) as u8;
    }
    ppu.oam_addr = if case % 4 == 0 { rng.next() as u8 } else { 0 };
    ppu.sec_oam = [0xff; 32];
    ppu.in_range_valid = false;
    ppu
}

#[test]
fn the_overflow_bound_mid_evaluation_never_misses_an_overflow() {
    // `eval_cannot_fill` after every dot of random evaluations (`evaluation_scene`: any byte
    // the buggy scan or a moved OAMADDR reads may be a Y in range), with OAMADDR written after
    // random dots as a `$2003` write does: moved after an even dot, the next odd dot reads
    // some other byte than sprite `eval_n`'s Y. Whenever the bound says the line cannot
    // overflow, the rest of it run dot by dot must not set the flag.
    let mut rng = Rng(0x6a09_e667_f3bc_c909);
    let mut claims = 0;
    for case in 0..1500 {
        let mut ppu = evaluation_scene(&mut rng, case);
        for d in 65..=255u16 {
            ppu.sprite_eval(d);
            ppu.dot = d;
            if rng.next() % 5 == 0 {
                ppu.oam_addr = rng.next() as u8;
            }
            if !ppu.eval_done && ppu.status & STATUS_OVERFLOW == 0 && ppu.eval_cannot_fill() {
                claims += 1;
                let mut rest = ppu.clone();
                for x in d + 1..=256 {
                    rest.sprite_eval(x);
                }
                assert_eq!(rest.status & STATUS_OVERFLOW, 0, "case {case}: line {} dot {d}", ppu.scanline);
            }
        }
    }
    assert!(claims > 10_000, "{claims} claims");
}

#[test]
fn evaluating_spans_matches_single_dots_with_oamaddr_moved_between_them() {
    // Spans of random length over dots 65-256 (a tile's share, a run of skipped tiles) against
    // single dots, with OAMADDR sometimes written between two spans, as a `$2003` write during
    // rendering does: the spans' shortcuts (a run of out-of-range sprites, the pairs after the
    // scan is done) must see that the next read no longer comes from sprite `eval_n`.
    let mut rng = Rng(0x3c6e_f372_fe94_f82b);
    for case in 0..3000 {
        let mut ppu = evaluation_scene(&mut rng, case);
        let mut dots = ppu.clone();
        let mut d = 65u16;
        while d <= 256 {
            let to = (d + (rng.next() % 40) as u16).min(256);
            for x in d..=to {
                dots.sprite_eval(x);
            }
            ppu.sprite_eval_span(d, to);
            assert_eq!(saved(&ppu), saved(&dots), "case {case}: dots {d}..={to}");
            if rng.next() % 3 == 0 {
                let a = rng.next() as u8;
                ppu.oam_addr = a;
                dots.oam_addr = a;
            }
            d = to + 1;
        }
    }
}

#[test]
fn running_dots_in_batches_matches_ticking_them_one_by_one() {
    // Random patterns, nametables, palette, OAM and scroll; rendering masks with and without
    // sprites, left columns and background; pixels on and off. One PPU ticks, the other runs
    // batches of random length (the bus's catch-up); all saved state and pixels must agree
    // at every batch end.
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for case in 0..12 {
        let (ppu, cart) = random_scene(&mut rng, case);
        batches_match_ticks(case, ppu, cart, &mut rng, 3 * 89_342, 700, false);
    }
}

#[test]
fn running_whole_lines_in_long_batches_matches_ticking_them_one_by_one() {
    // Batches of up to several lines without pixel output (the catch-up at a frame's end):
    // whole lines run at once, and a line followed by another that draws nothing skips its
    // prefetch and sprite patterns (`line_whole`). Sprite 0 sits on some lines, so the next
    // line sometimes draws and sometimes has already hit.
    let mut rng = Rng(0x7f4a_7c15_9e37_79b9);
    for case in 0..12 {
        let (mut ppu, cart) = random_scene(&mut rng, case);
        ppu.render_pixels = false;
        batches_match_ticks(case, ppu, cart, &mut rng, 3 * 89_342, 3000, false);
    }
}

#[test]
fn a_line_run_whole_still_fetches_sprite_0_for_the_next_line_that_shows_it() {
    // Sprite 0 (opaque) at OAM Y 100 shows from line 101, over an opaque background. One batch
    // runs lines 100 and 101 whole and line 102 to dot 50: line 100 draws nothing, but its
    // horizontal blank must still fetch sprite 0's pattern, so the hit lands on line 101 (at
    // dot 101) as when ticking, not one line late.
    let (mut ppu, mut cart) = scene(&[(12, 12), (13, 12), (12, 13), (13, 13)], &[(100, 100)]);
    ppu.render_pixels = false;
    ppu.cpu_write(0x2001, 0x1e, &mut cart);
    run_to(&mut ppu, &mut cart, 99, 340);
    let mut batched = ppu.clone();
    let mut cart2 = cart.clone();
    let n = 1 + 2 * 341 + 50;
    for _ in 0..n {
        ppu.tick(&mut cart);
    }
    batched.run(n, &mut cart2);
    assert_eq!((ppu.scanline, ppu.dot), (102, 50));
    assert_ne!(ppu.status & STATUS_SPRITE0, 0, "ticking hits on line 101");
    assert_eq!(saved(&batched), saved(&ppu));
}

/// Random patterns, nametables, palette, OAM and scroll; the rendering mask by `case`; pixels
/// on for even cases.
fn random_scene(rng: &mut Rng, case: usize) -> (Ppu, Cart) {
    let (mut ppu, mut cart) = warm();
    for a in 0..0x2000u16 {
        let v = if rng.next() % 3 == 0 { 0 } else { rng.next() as u8 };
        cart.ppu_write(a, v, 0);
    }
    for a in 0x2000..0x2800u16 {
        cart.ppu_write(a, rng.next() as u8, 0);
    }
    for i in 0..32 {
        ppu.palette[i] = rng.next() as u8 & 0x3f;
    }
    for i in 0..256 {
        ppu.oam[i] = rng.next() as u8;
    }
    // A few sprites (sprite 0 included) clustered on some lines for overflow and hits.
    for s in 0..24 {
        ppu.oam[s * 4] = (40 + (rng.next() % 40)) as u8;
    }
    const MASKS: [u8; 6] = [0x1e, 0x18, 0x08, 0x10, 0x1a, 0x16];
    ppu.mask = MASKS[case % MASKS.len()];
    ppu.ctrl = (rng.next() as u8) & (CTRL_SPRITE_16 | CTRL_BG_TABLE | CTRL_SPRITE_TABLE);
    ppu.in_range_valid = false;
    ppu.t = rng.next() as u16 & 0x7fff;
    ppu.x = rng.next() as u8 & 7;
    ppu.render_pixels = case % 2 == 0;
    (ppu, cart)
}

/// Runs `dots` dots on two copies of `ppu`: one ticks, the other runs batches of random length
/// (the bus's catch-up; half of them up to `longest` dots, half up to 20); all saved state and
/// pixels must agree at every batch end. With `writes`, a third of the batch ends also write to
/// both as the CPU could (`write_between_batches`).
fn batches_match_ticks(
    case: usize,
    mut ppu: Ppu,
    mut cart: Cart,
    rng: &mut Rng,
    dots: u32,
    longest: u32,
    writes: bool,
) {
    let mut batched = ppu.clone();
    let mut cart2 = cart.clone();
    let mut left = dots;
    while left > 0 {
        if writes && rng.next() % 3 == 0 {
            let seed = rng.next() as u64 | 1;
            write_between_batches(&mut ppu, &mut cart, Rng(seed));
            write_between_batches(&mut batched, &mut cart2, Rng(seed));
        }
        let n = (1 + rng.next() % if rng.next() & 1 != 0 { longest } else { 20 }).min(left);
        for _ in 0..n {
            ppu.tick(&mut cart);
        }
        batched.run(n, &mut cart2);
        left -= n;
        assert_eq!(saved(&batched), saved(&ppu), "case {case}: at line {} dot {}", ppu.scanline, ppu.dot);
        assert!(batched.pixels[..] == ppu.pixels[..], "case {case}: pixels at line {}", ppu.scanline);
    }
}

#[test]
fn running_dots_with_rendering_off_in_batches_matches_ticking_them_one_by_one() {
    // Visible lines with rendering off run in bulk (`run` skips to the line's last dot and
    // fills the blank pixels at once): the colour is the backdrop, or the palette entry `v`
    // points at; masks without BG and sprite bits, pixels on and off, batches of random length.
    let mut rng = Rng(0x1405_7b7e_f767_814f);
    const MASKS: [u8; 4] = [0x00, 0x06, 0x01, 0xe0];
    for case in 0..8 {
        let (mut ppu, cart) = warm();
        for i in 0..32 {
            ppu.palette[i] = rng.next() as u8 & 0x3f;
        }
        ppu.mask = MASKS[case % MASKS.len()];
        ppu.v = if case % 3 == 0 { 0x3f00 | (rng.next() as u16 & 0xff) } else { rng.next() as u16 & 0x3eff };
        ppu.render_pixels = case % 2 == 0;
        batches_match_ticks(case, ppu, cart, &mut rng, 2 * 89_342, 700, false);
    }
}

#[test]
fn running_tiles_in_batches_on_an_mmc3_board_clocks_its_counter_as_ticking_does() {
    // MMC3 counts rises of PPU A12. With the background at $1000 and sprites at $0000 every
    // tile's pattern fetch raises it after the sprite fetches' low period, so the batch paths
    // (`render_tile`, whose fetches read first and then put the four addresses on the bus:
    // perf-notes #52) must show the board each address at its own dot, as ticking does.
    // Random batches against ticks over two frames, the board's state compared too.
    let mut rom = alloc::vec![0u8; 16 + 0x8000];
    rom[0..4].copy_from_slice(b"NES\x1a");
    rom[4] = 2; // 32 KiB of PRG, CHR RAM
    rom[6] = 0x40; // mapper 4
    let mut rng = Rng(0x3243_f6a8_885a_308d);
    for case in 0..4 {
        let mut cart = Cart::from_ines(&rom).unwrap();
        let mut ppu = Ppu::new();
        while ppu.warming_up {
            ppu.tick(&mut cart);
        }
        for a in 0..0x2800u16 {
            cart.ppu_write(a, rng.next() as u8, 0);
        }
        for b in ppu.oam.iter_mut() {
            *b = rng.next() as u8;
        }
        ppu.in_range_valid = false;
        // IRQ every 3 + case lines, enabled.
        for (addr, v) in [(0xc000, 3 + case as u8), (0xc001, 0), (0xe001, 0)] {
            cart.cpu_write(addr, v, 0);
        }
        ppu.ctrl = CTRL_BG_TABLE;
        ppu.mask = 0x1e;
        ppu.render_pixels = case % 2 == 0;
        let (mut batched, mut cart2) = (ppu.clone(), cart.clone());
        let mut left = 2 * 89_342u32;
        while left > 0 {
            let n = (1 + rng.next() % if rng.next() & 1 != 0 { 700 } else { 20 }).min(left);
            for _ in 0..n {
                ppu.tick(&mut cart);
            }
            batched.run(n, &mut cart2);
            left -= n;
            let at = (ppu.scanline, ppu.dot);
            assert_eq!(saved(&batched), saved(&ppu), "case {case}: the PPU at {at:?}");
            assert_eq!(saved_cart(&cart2), saved_cart(&cart), "case {case}: the board at {at:?}");
        }
    }
}

fn saved_cart(cart: &Cart) -> alloc::vec::Vec<u8> {
    let mut buf = alloc::vec![0u8; 1 << 16];
    let mut w = StateWriter::new(&mut buf);
    cart.save(&mut w);
    let len = w.len();
    buf.truncate(len);
    buf
}

/// A write the CPU could make between two catch-ups, drawn from `rng`: `v` and `t` (a `$2006`
/// pair), fine X (a first `$2005` write), or a byte of the nametables or the patterns (a
/// `$2007` write): after it the tiles a line already fetched no longer show what `v` and memory
/// do.
fn write_between_batches(ppu: &mut Ppu, cart: &mut Cart, mut rng: Rng) {
    match rng.next() % 4 {
        0 => {
            ppu.t = rng.next() as u16 & 0x7fff;
            ppu.v = ppu.t;
        }
        1 => ppu.x = rng.next() as u8 & 7,
        2 => cart.ppu_write(0x2000 + (rng.next() % 0x800) as u16, rng.next() as u8, 0),
        _ => cart.ppu_write((rng.next() % 0x2000) as u16, rng.next() as u8, 0),
    }
}

/// Sprite 0 over a random scene with up to 7 other sprites (the rest hidden): any line, an X
/// at either edge of the screen or anywhere, either flip, 8x8 or 8x16 by PPUCTRL, random scroll
/// and fine X, the left column shown or clipped for each layer; half the pattern bytes empty
/// and a quarter a single pixel, so it misses on some lines and hits on others (perf-notes
/// #50). No pixel output (a line only matters for the hit).
fn sprite_zero_scene(rng: &mut Rng, case: usize) -> (Ppu, Cart) {
    let (mut ppu, mut cart) = random_scene(rng, case);
    for a in 0..0x2000u16 {
        let v = match rng.next() % 4 {
            0 | 1 => 0,
            2 => 1u8 << (rng.next() % 8),
            _ => rng.next() as u8,
        };
        cart.ppu_write(a, v, 0);
    }
    ppu.oam.fill(0xff);
    for k in 0..=(rng.next() % 8) as usize {
        ppu.oam[k * 4] = (rng.next() % 240) as u8;
        ppu.oam[k * 4 + 1] = rng.next() as u8;
        ppu.oam[k * 4 + 2] = rng.next() as u8 & 0xe3;
        ppu.oam[k * 4 + 3] = match rng.next() % 4 {
            0 => (rng.next() % 12) as u8,
            1 => (244 + rng.next() % 12) as u8,
            _ => rng.next() as u8,
        };
    }
    ppu.in_range_valid = false;
    const MASKS: [u8; 4] = [0x1e, 0x18, 0x1a, 0x1c];
    ppu.mask = MASKS[case % MASKS.len()];
    ppu.render_pixels = false;
    (ppu, cart)
}

#[test]
fn running_lines_where_sprite_0_misses_in_batches_matches_ticking_them_with_writes_between() {
    // A line that shows sprite 0 where it misses runs as one that draws nothing
    // (`line_misses`); with scroll, nametable and pattern writes between batches the tiles a
    // line already fetched no longer show what `v` and memory do.
    let mut rng = Rng(0x68e3_1da4_b1a5_8f13);
    for case in 0..12 {
        let (ppu, cart) = sprite_zero_scene(&mut rng, case);
        let longest = if case % 4 < 2 { 120 } else { 3000 };
        batches_match_ticks(case, ppu, cart, &mut rng, 2 * 89_342, longest, case % 2 == 1);
    }
}

#[test]
fn the_status_bound_holds_on_every_dot_over_the_lines_sprite_0_spans() {
    // The sprite 0 bound in closed form (`dots_to_hit`) on scenes where it misses on some lines
    // and hits on others: every dot's answer against the first change that follows it; then,
    // asked at random dots, how often a bound past the next line lands on the hit's own dot.
    let mut rng = Rng(0x1b87_3593_cc9e_2d51);
    let (mut changes, mut far) = (0, 0);
    for case in 0..8 {
        let (mut ppu, mut cart) = sprite_zero_scene(&mut rng, case);
        changes += every_dot_bound_holds(&mut ppu, &mut cart, 89_342, |_| {});
        for _ in 0..300 {
            for _ in 0..1 + rng.next() % 600 {
                ppu.tick(&mut cart);
            }
            let (dist, d) = (ppu.dots_to_status_change(&cart), ppu.dot as u32);
            let status = ppu.status & 0xe0;
            let mut t = ppu.clone();
            let mut c = cart.clone();
            for _ in 1..dist.min(89_342) {
                t.tick(&mut c);
            }
            assert_eq!(t.status & 0xe0, status, "case {case}: bound {dist} from dot {d}");
            t.tick(&mut c);
            far += (dist > 342 - d && dist <= 89_342 && t.status & !status & STATUS_SPRITE0 != 0) as u32;
        }
    }
    // Not vacuous: besides VBL's set and clear (16), the scenes hit and overflow.
    assert!(changes > 20, "{changes} status changes");
    assert!(far > 20, "{far} hits on a bound lines ahead");
}

#[test]
fn the_status_bound_leaves_the_closed_form_where_it_does_not_hold() {
    // Three scenes where the closed form of `dots_to_hit` and `no_overflow_through` would be
    // late, each with its event checked to come: the bound must name it or an earlier dot.
    let base = || {
        let (mut ppu, mut cart) = warm();
        for a in 0..8u16 {
            cart.ppu_write(0x10 + a, 0xff, 0); // tile 1: every pixel opaque
        }
        for a in 0x2000..0x2800u16 {
            cart.ppu_write(a, 1, 0);
        }
        ppu.oam.fill(0xff);
        ppu.in_range_valid = false;
        (ppu.ctrl, ppu.t, ppu.x, ppu.mask) = (0, 0, 0, 0x1e);
        ppu.render_pixels = false; // lines that only matter for the hit
        (ppu, cart)
    };
    // Dots until a status bit of `bit` rises, ticking (at most two lines).
    let dots_to = |ppu: &Ppu, cart: &Cart, bit: u8| {
        let (mut t, mut c) = (ppu.clone(), cart.clone());
        (1..=682u32).find(|_| {
            t.tick(&mut c);
            t.status & bit != 0
        })
    };

    // 1. The nametable cleared (a `$2007` write) after the line fetched the tiles under sprite
    // 0 (X 8: tile 1, the previous line's prefetch): the hit comes from the shifters.
    let (mut ppu, mut cart) = base();
    ppu.oam[..4].copy_from_slice(&[100, 1, 0, 8]);
    run_to(&mut ppu, &mut cart, 101, 0);
    for a in 0x2000..0x2800u16 {
        cart.ppu_write(a, 0, 0);
    }
    let hit = dots_to(&ppu, &cart, STATUS_SPRITE0).expect("the fetched tiles hit");
    assert_eq!(hit, 9, "pixel 8 of line 101");
    assert!(ppu.dots_to_status_change(&cart) <= hit);
    let (mut batched, mut cart2) = (ppu.clone(), cart.clone());
    batched.run(341, &mut cart2);
    for _ in 0..341 {
        ppu.tick(&mut cart);
    }
    assert_eq!(saved(&batched), saved(&ppu), "the line run as one that misses");

    // 2. OAMADDR 1 (a `$2003` write) before line 100's evaluation: it reads bytes 1-3 and 0 of
    // OAM as sprite 0's Y, tile, attributes and X, which hit on line 101, while the real
    // sprite 0 (Y 120) shows from line 121. The overflow flag set, so that its bound (an
    // unaligned OAMADDR: this line's dot 65) does not come first.
    let (mut ppu, mut cart) = base();
    ppu.oam[..4].copy_from_slice(&[120, 100, 1, 0]);
    run_to(&mut ppu, &mut cart, 100, 10);
    ppu.oam_addr = 1;
    ppu.status |= STATUS_OVERFLOW;
    let hit = dots_to(&ppu, &cart, STATUS_SPRITE0).expect("the misread sprite hits");
    assert_eq!(hit, 341 - 10 + 121, "pixel 120 of line 101");
    assert!(ppu.dots_to_status_change(&cart) <= hit);

    // 3. OAMADDR 1 after line 100's horizontal blank: line 101's evaluation misreads sprite 0
    // (Y hidden, its tile byte in range) and fills with sprites 1-7, so the diagonal scan of
    // sprites 8-63 (hidden, their other bytes in range) raises the overflow flag with 7
    // sprites in range. Background only: no hit to bound it first.
    let (mut ppu, mut cart) = base();
    ppu.mask = 0x08;
    ppu.oam[1] = 97;
    for k in 1..8 {
        ppu.oam[k * 4] = 97;
    }
    for k in 8..64 {
        ppu.oam[k * 4 + 1..k * 4 + 4].fill(97);
    }
    run_to(&mut ppu, &mut cart, 100, 330);
    ppu.oam_addr = 1;
    let overflow = dots_to(&ppu, &cart, STATUS_OVERFLOW).expect("the misread evaluation overflows");
    assert!(overflow > 11 + 65, "on line 101's evaluation");
    assert!(ppu.dots_to_status_change(&cart) <= overflow);
}

#[test]
fn empty_lines_are_run_at_once_only_after_an_empty_line() {
    // Sprite 0 (Y 100) has only its last row opaque: it shows that row on line 108, which no
    // sprite is in range of (line 107's evaluation put it in unit 0), over a background opaque
    // on that line alone (row 4 of its tiles). A batch that runs line 107 whole must not go on
    // to run the empty lines after it at once (`skip_empty_lines`): the skipped line's hit
    // would be lost, and the sprite units the skip leaves would show sprite 0 again on the
    // next line, where the background is transparent (perf-notes #51).
    let (mut ppu, mut cart) = warm();
    for a in 0..8u16 {
        cart.ppu_write(0x10 + a, if a == 7 { 0xff } else { 0 }, 0); // tile 1: its last row
        cart.ppu_write(0x20 + a, if a == 4 { 0xff } else { 0 }, 0); // tile 2: row 4
    }
    for a in 0x2000..0x2800u16 {
        cart.ppu_write(a, 2, 0);
    }
    ppu.oam.fill(0xff);
    ppu.oam[..4].copy_from_slice(&[100, 1, 0, 80]);
    ppu.in_range_valid = false;
    (ppu.ctrl, ppu.t, ppu.x, ppu.mask) = (0, 0, 0, 0x1e);
    ppu.render_pixels = false;
    run_to(&mut ppu, &mut cart, 107, 0);
    let (mut batched, mut cart2) = (ppu.clone(), cart.clone());
    batched.run(5 * 341, &mut cart2);
    for _ in 0..5 * 341 {
        ppu.tick(&mut cart);
    }
    assert_ne!(ppu.status & STATUS_SPRITE0, 0, "ticking hits on line 108");
    assert_eq!(saved(&batched), saved(&ppu));
}

/// Asks `dots_to_status_change` on every dot of `dots` and checks each answer against the first
/// change of bits 5-7 that follows it (never late); `poke` may move OAMADDR before a dot (a
/// `$2003` write, which the bus catches the PPU up for first). Returns the changes seen.
fn every_dot_bound_holds(ppu: &mut Ppu, cart: &mut Cart, dots: u32, mut poke: impl FnMut(&mut Ppu)) -> u32 {
    let mut changes = 0;
    // The latest dot (counted from the start) before which the next change may not come.
    let mut bound = 0u64;
    for i in 0..dots as u64 {
        poke(ppu);
        bound = bound.max(i + ppu.dots_to_status_change(cart) as u64);
        let status = ppu.status & 0xe0;
        ppu.tick(cart);
        if ppu.status & 0xe0 != status {
            let (line, dot) = (ppu.scanline, ppu.dot);
            assert!(i + 1 >= bound, "status changed at line {line} dot {dot}, {} dots early", bound - i - 1);
            changes += 1;
            bound = 0;
        }
    }
    changes
}

#[test]
fn the_status_bound_holds_on_every_dot_up_to_sprite_0_s_last_column() {
    // Sprite 0 (tile 2) has only its rightmost column opaque (pixel 91 at x = 84, composed on
    // dot 92) over a solid background: the hit comes on the last dot a bound may wait for.
    let (mut ppu, mut cart) = scene(&[(10, 5), (11, 5)], &[(43, 84)]);
    write_vram(&mut ppu, &mut cart, 0x0020, &[0x01; 8]);
    ppu.cpu_write(0x2005, 0, &mut cart); // the scroll back to 0 after the `$2006` writes
    ppu.cpu_write(0x2005, 0, &mut cart);
    ppu.oam[1] = 2;
    ppu.cpu_write(0x2001, 0x1e, &mut cart);
    run_to(&mut ppu, &mut cart, 44, 91);
    assert_eq!(ppu.status & STATUS_SPRITE0, 0);
    // From dot 91 (one before the hit) on, then two more frames.
    let changes = every_dot_bound_holds(&mut ppu, &mut cart, 2 * 89_342, |_| {});
    assert!(changes >= 7, "{changes} changes: the hits, VBL set and clear, the hit clears");
}

#[test]
fn the_status_bound_holds_on_every_dot_of_random_scenes_mid_evaluation_too() {
    // Random scenes (clustered sprites: overflows and hits), OAMADDR sometimes moved in the
    // middle of an evaluation, the bound asked on every dot.
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut changes = 0;
    for case in 0..8 {
        let (mut ppu, mut cart) = random_scene(&mut rng, case);
        let mut pokes = Rng(rng.next() as u64 | 1);
        changes += every_dot_bound_holds(&mut ppu, &mut cart, 89_342, |p| {
            if pokes.next() % 4096 == 0 {
                p.oam_addr = pokes.next() as u8;
            }
        });
    }
    assert!(changes > 20, "{changes} status changes");
}

#[test]
fn status_bits_hold_for_the_predicted_dots_and_none_is_the_dot_before_vbl() {
    // The bus answers a `$2002` read without running the owed dots while fewer than
    // `dots_to_status_change` are owed: on each of those dots bits 5-7 must be as they were,
    // and none may be 241/0 (a read there suppresses VBL). Random scenes (`random_scene`), with
    // OAMADDR sometimes misaligned (a `$2003` write) to reach the diagonal overflow scan, and
    // asked at random dots too, not only where the last bound ended (a bound one dot late at
    // the end of sprite 0 or in the middle of an evaluation shows only there).
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let mut changes = 0;
    for case in 0..12 {
        let (mut ppu, mut cart) = random_scene(&mut rng, case);
        let mut left = 3 * 89_342u32;
        while left > 0 {
            if rng.next() % 2 == 0 {
                let skip = (1 + rng.next() % 16).min(left);
                for _ in 0..skip {
                    ppu.tick(&mut cart);
                }
                left -= skip;
                if left == 0 {
                    break;
                }
            }
            if rng.next() % 8 == 0 {
                ppu.oam_addr = rng.next() as u8;
            }
            let dist = ppu.dots_to_status_change(&cart);
            let status = ppu.status & 0xe0;
            for _ in 1..dist.min(left) {
                ppu.tick(&mut cart);
                let (line, dot) = (ppu.scanline, ppu.dot);
                assert_eq!(ppu.status & 0xe0, status, "case {case}: line {line} dot {dot}");
                assert!(ppu.scanline != VBLANK_LINE || ppu.dot != 0, "case {case}: 241/0 inside");
            }
            ppu.tick(&mut cart);
            changes += (ppu.status & 0xe0 != status) as u32;
            left = left.saturating_sub(dist.max(1));
        }
    }
    // The bound is not vacuous: the scenes do hit, overflow and enter VBL.
    assert!(changes > 50, "{changes} status changes");
}

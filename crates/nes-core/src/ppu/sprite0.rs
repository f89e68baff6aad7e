//! Sprite 0's hit found without running the lines before it, for the `$2002` bound.

use super::render::sprite_row_addr;
use super::*;

// Sprite 0's hit in closed form (perf-notes #50). Between two catch-ups nothing writes to the
// PPU or the mapper (each such write catches the PPU up first), so the rest of the frame's
// background and sprite units follow from the state: tile j of a line (j = (x + fine X) / 8
// for pixel x; tiles 0 and 1 are the previous line's prefetch) is fetched at `v` with coarse X
// moved on j times from the line's first tile, and line L shows sprite 0 in unit 0 when line
// L - 1's evaluation finds it in range. Whether and where sprite 0 hits on a line then follows
// from the nametable and the pattern rows under its 8 pixels, without running the line's
// tiles: the `$2002` bound sleeps over the lines where it misses, and the catch-up runs them as
// lines that draw nothing.
impl Ppu {
    /// The opaque pixels (either plane) of the background tile row fetched at `v`.
    fn bg_row_opaque(&self, cart: &Cart, v: u16) -> u32 {
        let tile = cart.nametable_peek(0x2000 | (v & 0x0fff));
        let table = if self.ctrl & CTRL_BG_TABLE != 0 { 0x1000 } else { 0 };
        let pat = table | ((tile as u16) << 4) | ((v >> 12) & 7);
        (cart.chr_peek(pat) | cart.chr_peek(pat + 8)) as u32
    }

    /// The opaque pixels of sprite 0's row on visible line `line` (from OAM: line - 1's
    /// evaluation copies it to unit 0), the leftmost in bit 7, as the horizontal blank loads it.
    fn sprite0_row_opaque(&self, cart: &Cart, line: u32) -> u32 {
        let (y, tile, attr) = (self.oam[0], self.oam[1], self.oam[2]);
        let addr = sprite_row_addr(self.ctrl, (line as u8).wrapping_sub(1).wrapping_sub(y), tile, attr, true);
        let row = cart.chr_peek(addr) | cart.chr_peek(addr + 8);
        (if attr & 0x40 != 0 { row.reverse_bits() } else { row }) as u32
    }

    /// The first pixel x (`sx ..= sx + 7`) where `row` (sprite 0's opaque pixels, the
    /// leftmost in bit 7) at X `sx` meets an opaque background pixel, on a line whose tile j is
    /// fetched at `v` moved on `j - j_v` tiles (`j_v` at most the first tile under the sprite);
    /// 256 when none. Both layers shown (the caller's test), and as `draw_pixel` has it: never
    /// pixel 255, and in the left column only where both layers show there.
    fn hit_pixel(&self, cart: &Cart, v: u16, j_v: u32, row: u32, sx: u32) -> u32 {
        let mut can = row; // bit 7 - i: pixel sx + i
        if sx >= 248 {
            can &= if sx == 255 { 0 } else { (0xff00 >> (255 - sx)) & 0xff };
        }
        if sx < 8 && self.mask & (MASK_BG_LEFT | MASK_SPRITE_LEFT) != MASK_BG_LEFT | MASK_SPRITE_LEFT {
            can &= (1 << sx) - 1;
        }
        if can == 0 {
            return 256;
        }
        let at = sx + self.x as u32;
        let vj = v_advance_x(v, (at >> 3) - j_v);
        let mut bg = self.bg_row_opaque(cart, vj) << 8;
        if at & 7 != 0 {
            bg |= self.bg_row_opaque(cart, v_increment_x(vj));
        }
        let hits = can & ((bg << (at & 7)) >> 8);
        if hits == 0 {
            256
        } else {
            sx + (hits as u8).reverse_bits().trailing_zeros()
        }
    }

    /// Whether sprite 0, in unit 0 on this visible line and able to hit, misses on all of it:
    /// from a tile boundary `dot`, with the tiles under it still to be fetched (tile 2 + dot / 8
    /// is the next; one fetched already may show what a write since has changed). Such a line
    /// can run as one that draws nothing (`line_draws`).
    pub(super) fn line_misses(&self, cart: &Cart) -> bool {
        let (sx, j_v) = (self.spr_x[0] as u32, 2 + (self.dot as u32 >> 3));
        (sx + self.x as u32) >> 3 >= j_v
            && self.hit_pixel(cart, self.v, j_v, (self.spr_lo[0] | self.spr_hi[0]) as u32, sx) == 256
    }

    /// Dots from now to the first dot on which sprite 0 may hit (both layers shown, the flag
    /// clear), for `dots_to_status_change`; `next` is its distance to the next line's dot 0,
    /// and `u32::MAX` means no hit before vertical blank. Sprite 0 may hit on this line from
    /// pixel `spr_x[0]` (dot `spr_x[0] + 1`) when unit 0 holds it, its row has an opaque pixel
    /// and its last pixel is still to come; in closed form when the tiles under it are still
    /// to be fetched. On the lines after this one, in closed form from OAM while this line's
    /// evaluation has not begun from an OAMADDR other than 0 (each horizontal blank clears it,
    /// so the later lines' evaluations start at sprite 0); else from the next line's dot 1.
    pub(super) fn dots_to_hit(&self, cart: &Cart, next: u32) -> u32 {
        const LINE: u32 = DOTS_PER_LINE as u32;
        let (line, d) = (self.scanline as u32, self.dot as u32);
        if line >= 240 {
            return next + 1; // the pre-render line
        }
        let sx = self.spr_x[0] as u32;
        let row = (self.spr_lo[0] | self.spr_hi[0]) as u32;
        if d < 257 && d < sx + 8 && self.spr_zero && row != 0 && sx < 255 {
            let j_v = 2 + (d >> 3);
            if (sx + self.x as u32) >> 3 < j_v {
                return (sx + 1).max(d + 1) - d;
            }
            let x = self.hit_pixel(cart, self.v, j_v, row, sx);
            if x < 256 {
                return x + 1 - d;
            }
        }
        if d > 64 || self.oam_addr != 0 {
            return next + 1;
        }
        // Lines from..=to show sprite 0 (evaluated in range on the line before each).
        let y = self.oam[0] as u32;
        let h = if self.ctrl & CTRL_SPRITE_16 != 0 { 16 } else { 8 };
        let (from, to) = ((y + 1).max(line + 1), (y + h).min(239));
        if from > to {
            return u32::MAX;
        }
        if from - line > 32 {
            // Far ahead: no hit before line `from` (asked again nearer).
            return (from - line) * LINE - d + 1;
        }
        // `v`'s vertical part on line `from`: a Y step at dot 256 of each line before it,
        // this one's included; its horizontal part from `t` (dot 257 of the line before).
        let mut v = self.v;
        for _ in line..from {
            v = v_increment_y(v);
        }
        for l in from..=to {
            let row = self.sprite0_row_opaque(cart, l);
            let x = self.hit_pixel(cart, (v & !0x041f) | (self.t & 0x041f), 0, row, self.oam[3] as u32);
            if x < 256 {
                return (l - line) * LINE - d + x + 1;
            }
            v = v_increment_y(v);
        }
        u32::MAX
    }

    /// Whether no line after this visible one up to line `last` can raise the overflow flag:
    /// fewer than 8 sprites in range of each (`in_range`), and their evaluations starting at
    /// OAMADDR 0 (this line's horizontal blank clears it, unless it is over).
    pub(super) fn no_overflow_through(&mut self, last: u32) -> bool {
        let line = self.scanline as u32;
        if line >= 240 || (self.dot >= 320 && self.oam_addr != 0) {
            return false;
        }
        (line + 1..=last.min(239)).all(|l| self.in_range_of(l as u16).count_ones() < 8)
    }
}

/// `v` with coarse X moved on `k` tiles (k <= 32: one wrap at most, into the other nametable).
#[inline(always)]
fn v_advance_x(v: u16, k: u32) -> u16 {
    let x = (v & 0x1f) as u32 + k;
    let v = if x >= 32 { v ^ 0x0400 } else { v };
    (v & !0x1f) | (x & 0x1f) as u16
}

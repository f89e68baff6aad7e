//! The rendering pipeline: what the 2C02 does on each dot of a visible or pre-render line
//! while rendering is enabled.
//!
//! Per line (dots):
//! * 1-256: fetch the background of tiles 2..33 (8 dots per tile: nametable at dot 1,
//!   attribute at 3, pattern low at 5, pattern high at 7, coarse X++ at 8), draw pixel
//!   `dot - 1`; on visible lines, clear secondary OAM (1-64) and evaluate sprites for the next
//!   line (65-256). Dot 256 also increments Y.
//! * 257-320: copy horizontal scroll from `t` (257), fetch the 8 sprites' patterns (garbage
//!   nametable at +0 and +2, pattern low at +4, high at +6 of each 8-dot slot); OAMADDR is
//!   held at 0. Pre-render line: copy vertical scroll from `t` on 280-304.
//! * 321-336: fetch the first two tiles of the next line; 337 and 339: garbage nametable
//!   fetches (MMC3 clocks never depend on them, but some boards do).
//!
//! A fetch is issued on the first of its two dots (when the address goes on the bus).
//!
//! `render_dot` is the reference, one dot at a time. The batch paths below (`render_tile`,
//! `sprite_slot`, `line_fast`, `hblank_fast`, and `sprite_eval_line` in sprite_eval.rs) do the
//! same work for a run of dots inside one [`Ppu::run`], reordered only where no state another
//! part reads in between is touched; the unit tests compare them against `tick` dot for dot.
//! Sprite evaluation is in sprite_eval.rs; sprite 0's hit in closed form, for the `$2002`
//! bound, in sprite0.rs.

use super::*;

/// Byte i of `SPREAD[b]` is bit 7-i of `b`: a pattern byte's 8 pixels, leftmost in byte 0.
const SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        while i < 8 {
            t[b] |= ((b as u64 >> (7 - i)) & 1) << (8 * i);
            i += 1;
        }
        b += 1;
    }
    t
};

impl Ppu {
    /// Dot 257: horizontal scroll bits of v from t, and the sprite units evaluated for the next
    /// line take over (none show on line 0, so the pre-render line loads none).
    #[inline(always)]
    fn start_hblank(&mut self, visible: bool) {
        self.v = (self.v & !0x041f) | (self.t & 0x041f);
        self.spr_line_dirty = true;
        if visible {
            self.spr_count = self.eval_count;
            self.spr_zero = self.eval_sprite0;
        } else {
            self.spr_count = 0;
            self.spr_zero = false;
        }
    }

    /// One dot of a visible line (0-239) or the pre-render line, rendering enabled.
    #[inline]
    pub(super) fn render_dot(&mut self, cart: &mut Cart) {
        let d = self.dot;
        let visible = self.scanline < 240;
        if d == 0 {
            return;
        }
        if d <= 256 {
            if d >= 2 {
                self.shift_bg();
            }
            if visible {
                self.sprite_eval(d);
                self.draw_pixel(d - 1);
            }
            self.bg_fetch(d, cart);
            if d == 256 {
                self.increment_y();
            }
        } else if d <= 320 {
            if d == 257 {
                self.start_hblank(visible);
            }
            self.oam_addr = 0;
            if !visible && (280..=304).contains(&d) {
                self.v = (self.v & !0x7be0) | (self.t & 0x7be0);
            }
            self.sprite_fetch(d, cart);
        } else if d <= 336 {
            if d >= 322 {
                self.shift_bg();
            }
            self.bg_fetch(d, cart);
        } else {
            if d == 337 {
                self.shift_bg();
                self.reload_bg();
            }
            if d == 337 || d == 339 {
                let _ = cart.ppu_read_nt(0x2000 | (self.v & 0x0fff), self.dot_clock);
            }
        }
    }

    /// Dots `dot+1 ..= dot+8` at once, the 8 dots of one background tile (dot+1 is 9, 17, ...,
    /// 249, or the prefetch tiles 321 and 329) on a rendering line: the same work as 8
    /// `render_dot`s, reordered where nothing can tell. The tile's four fetches only fill latches, which nothing reads before the next
    /// tile's reload, so they run first (each with its own dot's clock, for A12-watching
    /// boards); pixel composition and sprite evaluation then run per dot only when they have
    /// something to do.
    pub(super) fn render_tile<const EVAL: bool>(&mut self, cart: &mut Cart) {
        let d0 = self.dot + 1;
        let clock = self.dot_clock + 1;
        let visible = self.scanline < 240 && d0 < 256;
        // Dot d0: shift (not on 1 or 321), then the fetch step reloads the shifters (not on
        // 1). Pixel d0-1 is drawn between the two, but both only touch bits the pixel does not
        // read (see `draw_tile`), so the tile's 8 pixels are composed after them.
        if d0 != 321 && d0 != 1 {
            self.shift_bg();
        }
        if d0 != 1 {
            self.reload_bg();
        }
        // Without pixel output a pixel matters only for sprite 0 hit, which needs sprite unit
        // 0 (the only one tagged as sprite 0) under one of this tile's pixels d0-1 ..= d0+6.
        let draw = visible
            && (self.render_pixels
                || (self.spr_zero
                    && self.status & STATUS_SPRITE0 == 0
                    && self.mask & (MASK_BG | MASK_SPRITE) == (MASK_BG | MASK_SPRITE)
                    && (self.spr_x[0] as u16) <= d0 + 6
                    && d0 - 1 <= self.spr_x[0] as u16 + 7));
        if draw {
            self.draw_tile(d0 - 1);
        }
        // Fetches of dots d0, d0+2, d0+4, d0+6 (v and the nametable latch are fixed until
        // the coarse X increment on d0+7). Both nametable bytes lie in one 1 KiB page and both
        // pattern planes in one 1 KiB bank, each looked up once (perf-notes #52); a board that
        // watches the PPU bus sees the four addresses afterwards, in order, each with its
        // dot's clock (what it does with them changes nothing a fetch reads).
        let v = self.v;
        let nt_addr = 0x2000 | (v & 0x0fff);
        let at_addr = 0x23c0 | (v & 0x0c00) | ((v >> 4) & 0x38) | ((v >> 2) & 0x07);
        let page = cart.nametable_page(nt_addr);
        self.nt_latch = page[nt_addr as usize & 0x3ff];
        self.at_latch = (page[at_addr as usize & 0x3ff] >> (((v >> 4) & 4) | (v & 2))) & 3;
        let pat = self.bg_pattern_addr();
        let bank = cart.chr_bank(pat);
        self.pat_lo_latch = bank[pat as usize & 0x3ff];
        self.pat_hi_latch = bank[(pat as usize & 0x3ff) + 8];
        if cart.watches_ppu_bus() {
            for (i, addr) in [nt_addr, at_addr, pat, pat + 8].into_iter().enumerate() {
                cart.ppu_addr(addr, clock + 2 * i as u64);
            }
        }
        self.bg_lo <<= 7;
        self.bg_hi <<= 7;
        self.at_lo <<= 7;
        self.at_hi <<= 7;
        // Sprite evaluation touches nothing the pixels or fetches use: it runs on its own.
        if visible && EVAL {
            if d0 + 7 <= 64 {
                // Secondary OAM clear: $FF into the buffer every dot, 4 bytes per tile.
                self.eval_buffer = 0xff;
                let k = (d0 >> 3) as usize * 4;
                self.sec_oam[k..k + 4].fill(0xff);
            } else {
                self.sprite_eval_span(d0, d0 + 7);
            }
        }
        self.increment_x();
        if d0 + 7 == 256 {
            self.increment_y();
        }
        self.dot = d0 + 7;
        self.dot_clock = clock + 7;
    }

    /// How many tiles from the tile boundary `d` (< 232) of a visible line without pixel
    /// output a batch of `n` dots can run as [`Self::skip_tiles`] (perf-notes #41): tiles whose
    /// pixels cannot matter, i.e. all of them, or those before sprite 0's while its hit can
    /// still come (`line_draws`: then the tiles from `spr_x[0] - 6` to `spr_x[0] + 8` are
    /// drawn), each followed in the batch by three real tiles. A tile's
    /// pixels read what the two tiles before it fetched, and after three real tiles the
    /// shifters and latches hold nothing a skipped tile left (the last three tiles of a line
    /// always run, as in `line_fast`), so the state is exact wherever the batch ends.
    pub(super) fn quiet_tiles(&self, cart: &Cart, d: u16, n: u32) -> u32 {
        let d = d as u32;
        let mut end = 232;
        if self.line_draws(cart) {
            let first = 8 * (self.spr_x[0] as u32 >> 3) + 1; // the first tile start under sprite 0
            if d < first + 8 {
                end = if first >= d + 17 { first - 17 } else { d };
            }
        }
        if end <= d {
            return 0;
        }
        ((end - d) / 8).min((n - 24) / 8)
    }

    /// Dots `dot+1 ..= dot+8k` of a visible rendering line, k tiles from a tile boundary, none
    /// of whose pixels matters and no board watching the PPU bus (`quiet_tiles`): of each tile
    /// only coarse X and its share of the sprite evaluation remain (the secondary OAM clear on
    /// dots 1-64, the evaluation from 65 in one `sprite_eval_span`, as `render_tile::<true>`
    /// does them); its fetches and shifts, which three later tiles overwrite, are left out.
    pub(super) fn skip_tiles(&mut self, k: u32) {
        let mut d0 = self.dot + 1;
        let end = self.dot + 8 * k as u16;
        while d0 + 7 <= 64 && d0 < end {
            self.eval_buffer = 0xff;
            let at = (d0 >> 3) as usize * 4;
            self.sec_oam[at..at + 4].fill(0xff);
            d0 += 8;
        }
        if d0 < end {
            self.sprite_eval_span(d0, end);
        }
        // One coarse X increment per tile (fewer than 32: at most one wrap).
        let x = (self.v & 0x1f) + k as u16;
        if x >= 32 {
            self.v ^= 0x0400;
        }
        self.v = (self.v & !0x1f) | (x & 0x1f);
        self.dot += 8 * k as u16;
        self.dot_clock += 8 * k as u64;
    }

    /// Dots `dot+1 ..= dot+8` at once, one sprite-fetch slot (dot+1 is 257, 265, ..., 313):
    /// the same work as 8 `render_dot`s. Each fetch still runs with its own dot's clock.
    pub(super) fn sprite_slot(&mut self, cart: &mut Cart) {
        let d0 = self.dot + 1;
        let clock = self.dot_clock + 1;
        let visible = self.scanline < 240;
        if d0 == 257 {
            self.start_hblank(visible);
        }
        self.oam_addr = 0;
        // Pre-render line: vertical scroll copied from t on every dot 280-304 (idempotent).
        let vcopy = !visible && d0 + 7 >= 280 && d0 <= 304;
        if vcopy && d0 >= 280 {
            self.v = (self.v & !0x7be0) | (self.t & 0x7be0);
        }
        // Garbage nametable fetches at +0 and +2 (they matter only to A12-watching boards).
        let _ = cart.ppu_read_nt(0x2000 | (self.v & 0x0fff), clock);
        let _ = cart.ppu_read_nt(0x2000 | (self.v & 0x0fff), clock + 2);
        // Pattern low at +4, high at +6: the same address computation as `sprite_fetch`.
        let slot = ((d0 - 257) >> 3) as usize;
        let y = self.sec_oam[slot * 4];
        let attr = self.sec_oam[slot * 4 + 2];
        let used = (slot as u8) < self.spr_count;
        let tile = if used { self.sec_oam[slot * 4 + 1] } else { 0xff };
        let addr = self.sprite_pattern_addr(tile, attr, y, used);
        let mut lo = cart.ppu_read_chr(addr, clock + 4);
        let mut hi = cart.ppu_read_chr(addr + 8, clock + 6);
        if !used {
            lo = 0;
            hi = 0;
        } else if attr & 0x40 != 0 {
            lo = lo.reverse_bits();
            hi = hi.reverse_bits();
        }
        self.spr_line_dirty = true;
        self.spr_lo[slot] = lo;
        self.spr_attr[slot] = attr;
        self.spr_x[slot] = self.sec_oam[slot * 4 + 3];
        self.spr_hi[slot] = hi;
        if vcopy {
            self.v = (self.v & !0x7be0) | (self.t & 0x7be0);
        }
        self.dot = d0 + 7;
        self.dot_clock = clock + 7;
    }

    /// Whether any pixel of this line, from the tile boundary `dot` on, can still matter:
    /// output is on, or sprite 0 may hit and does not miss on all of it (`line_misses`).
    #[inline(always)]
    pub(super) fn line_draws(&self, cart: &Cart) -> bool {
        self.render_pixels
            || (self.spr_zero
                && self.status & STATUS_SPRITE0 == 0
                && self.mask & (MASK_BG | MASK_SPRITE) == (MASK_BG | MASK_SPRITE)
                && !self.line_misses(cart))
    }

    /// Dots `dot+1 ..= 256` of a rendering line (from a tile boundary at dots 0-64 of a
    /// visible line, or dot 8 of the pre-render line) when no pixel of it matters
    /// (`!line_draws`) and no board watches the PPU bus. The tiles before 233 then leave
    /// nothing behind but coarse X: every byte they fetch is overwritten in the latches by tile
    /// 249 and shifted out of the 16-bit shifters by dot 256 (tiles 233 and 241 are what the
    /// shifters hold there), so only the last three tiles run.
    pub(super) fn line_fast(&mut self, cart: &mut Cart) {
        if self.scanline < 240 {
            // Dots 1-64 fill secondary OAM with $FF (the part before `dot` already did), then
            // 65-256 evaluate the next line.
            self.sec_oam = [0xff; 32];
            self.eval_buffer = 0xff;
            self.sprite_eval_line();
        }
        let skipped = 232 - self.dot;
        // One coarse X increment per skipped tile (fewer than 32: at most one wrap).
        let x = (self.v & 0x1f) + skipped / 8;
        if x >= 32 {
            self.v ^= 0x0400;
        }
        self.v = (self.v & !0x1f) | (x & 0x1f);
        self.dot = 232;
        self.dot_clock += skipped as u64;
        for _ in 0..3 {
            self.render_tile::<false>(cart);
        }
    }

    /// Dots `dot+1 ..= 340` of a visible line and dot 0 of the next (from a tile boundary at
    /// dots 0-64) when no pixel of it matters and no board watches the PPU bus (perf-notes
    /// #38). None of the line's 32 tiles survives the prefetch at 321/329: the latches are
    /// refilled and both shifter bytes reloaded by dot 337, and dot 257 copies coarse X and
    /// the horizontal nametable from `t`, so of their work only the Y step at 256 remains,
    /// besides the sprite evaluation. When the next line draws nothing either and ends in the
    /// same batch (`next_ends_here`), the prefetch and the sprite patterns are dead too: that line's tiles 233-249 and its own prefetch (or, down
    /// a chain of such lines, the last one's) overwrite every latch and shifter, and its
    /// horizontal blank every sprite unit, before anything reads them. Line 239 always
    /// prefetches: what it leaves stays until the pre-render line.
    pub(super) fn line_whole(&mut self, cart: &mut Cart, next_ends_here: bool) {
        self.sec_oam = [0xff; 32];
        self.eval_buffer = 0xff;
        self.sprite_eval_line();
        self.increment_y();
        self.dot_clock += (256 - self.dot) as u64;
        self.dot = 256;
        let next_draws = self.render_pixels
            || (self.eval_sprite0
                && self.status & STATUS_SPRITE0 == 0
                && self.mask & (MASK_BG | MASK_SPRITE) == (MASK_BG | MASK_SPRITE));
        if !next_ends_here || next_draws || self.scanline >= 239 {
            self.hblank_fast(cart);
            return;
        }
        // `hblank_fast` without its reads: the sprite units' positions and flags, which the
        // next line's `$2002` bounds and `line_draws` read, and the prefetch's two X steps.
        self.hblank_units();
        self.increment_x();
        self.increment_x();
        self.dot = 0;
        self.scanline += 1;
        self.dot_clock += 85;
    }

    /// After a whole line with no sprite in range, scanned from OAMADDR 0 (`line_whole`, the
    /// line now at dot 0): the lines after it with none in range either, each followed by
    /// another line in the same batch and before line 239 (which always prefetches), would
    /// each take `line_whole`'s cheap path and leave everything as this one did (secondary
    /// OAM, the evaluation's state, the sprite units, OAMADDR 0: none depends on the line) but
    /// `v`, the line and the clock. Nothing draws on them (no sprite in range, and no pixel
    /// output: the caller's test). Runs them at once (perf-notes #51, the kernels' #128) and
    /// returns the dots they took.
    pub(super) fn skip_empty_lines(&mut self, n: u32) -> u32 {
        let line = self.scanline as u32;
        if line >= 239 || self.in_range_of(self.scanline) != 0 {
            return 0;
        }
        let stop = (line + 1..239).find(|&l| self.in_range[l as usize] != 0).unwrap_or(239);
        // Each line must have a whole line after it in the batch.
        let k = (stop - line).min((n / 341).saturating_sub(1));
        let h = self.t & 0x041f;
        for _ in 0..k {
            self.v = v_increment_x(v_increment_x((v_increment_y(self.v) & !0x041f) | h));
        }
        self.scanline += k as u16;
        self.dot_clock += 341 * k as u64;
        341 * k
    }

    /// The sprites in range of visible line `line` (`in_range`, rebuilt if stale).
    pub(super) fn in_range_of(&mut self, line: u16) -> u64 {
        if !self.in_range_valid {
            self.build_in_range();
        }
        self.in_range[line as usize]
    }

    /// What a horizontal blank does besides its reads: coarse X and the horizontal nametable
    /// from `t` (dot 257), the next line's sprite units from secondary OAM (all 8 positions
    /// and attributes; the pattern bytes are `hblank_fast`'s), OAMADDR cleared.
    #[inline(always)]
    fn hblank_units(&mut self) {
        self.v = (self.v & !0x041f) | (self.t & 0x041f);
        self.spr_line_dirty = true;
        self.spr_count = self.eval_count;
        self.spr_zero = self.eval_sprite0;
        self.oam_addr = 0;
        for slot in 0..8 {
            self.spr_attr[slot] = self.sec_oam[slot * 4 + 2];
            self.spr_x[slot] = self.sec_oam[slot * 4 + 3];
        }
    }

    /// Dots 257-340 of a visible line and dot 0 of the next, at once, when no board watches
    /// the PPU bus: then the garbage nametable fetches and the pattern fetches of empty sprite
    /// slots (tile $FF, loaded as transparent) have no effect, and only used slots read CHR.
    #[inline(always)] // two callers; out of line, its call cost 0.3% with pixels (perf-notes #38)
    pub(super) fn hblank_fast(&mut self, cart: &mut Cart) {
        self.hblank_units();
        for slot in 0..8 {
            let y = self.sec_oam[slot * 4];
            let attr = self.sec_oam[slot * 4 + 2];
            if slot < self.spr_count as usize {
                let tile = self.sec_oam[slot * 4 + 1];
                let addr = self.sprite_pattern_addr(tile, attr, y, true);
                let clock = self.dot_clock + 5 + slot as u64 * 8;
                let mut lo = cart.ppu_read_chr(addr, clock);
                let mut hi = cart.ppu_read_chr(addr + 8, clock + 2);
                if attr & 0x40 != 0 {
                    lo = lo.reverse_bits();
                    hi = hi.reverse_bits();
                }
                self.spr_lo[slot] = lo;
                self.spr_hi[slot] = hi;
            } else {
                self.spr_lo[slot] = 0;
                self.spr_hi[slot] = 0;
            }
        }
        self.dot = 320;
        self.dot_clock += 64;
        self.render_tile::<false>(cart);
        self.render_tile::<false>(cart);
        self.line_tail(cart);
    }

    /// Dots 337-340 of a visible line and dot 0 of the next (5 dots): the last shift and
    /// reload, two garbage nametable fetches, and the move to the next line (never a new
    /// frame: only the pre-render line ends one).
    pub(super) fn line_tail(&mut self, cart: &mut Cart) {
        let clock = self.dot_clock + 1;
        self.shift_bg();
        self.reload_bg();
        let _ = cart.ppu_read_nt(0x2000 | (self.v & 0x0fff), clock);
        let _ = cart.ppu_read_nt(0x2000 | (self.v & 0x0fff), clock + 2);
        self.dot = 0;
        self.scanline += 1;
        self.dot_clock = clock + 4;
    }

    /// Background fetch step of dots 1-256 and 321-336.
    #[inline(always)]
    fn bg_fetch(&mut self, d: u16, cart: &mut Cart) {
        // If-chains, not a `match d & 7`: the jump table it compiled to was one of the
        // costliest (mispredicted) instructions of the dot loop (perf-notes #6).
        if d & 1 == 0 {
            if d & 7 == 0 {
                self.increment_x();
            }
        } else if d & 4 == 0 {
            if d & 2 == 0 {
                // 1: nametable byte.
                if d >= 9 {
                    self.reload_bg();
                }
                self.nt_latch = cart.ppu_read_nt(0x2000 | (self.v & 0x0fff), self.dot_clock);
            } else {
                // 3: attribute byte.
                let v = self.v;
                let addr = 0x23c0 | (v & 0x0c00) | ((v >> 4) & 0x38) | ((v >> 2) & 0x07);
                let byte = cart.ppu_read_nt(addr, self.dot_clock);
                let shift = ((v >> 4) & 4) | (v & 2);
                self.at_latch = (byte >> shift) & 3;
            }
        } else {
            // 5: pattern low, 7: pattern high (8 bytes on).
            let addr = self.bg_pattern_addr() + (d & 2) * 4;
            let bits = cart.ppu_read_chr(addr, self.dot_clock);
            if d & 2 == 0 {
                self.pat_lo_latch = bits;
            } else {
                self.pat_hi_latch = bits;
            }
        }
    }

    #[inline(always)]
    fn bg_pattern_addr(&self) -> u16 {
        let table = if self.ctrl & CTRL_BG_TABLE != 0 { 0x1000 } else { 0 };
        table | ((self.nt_latch as u16) << 4) | ((self.v >> 12) & 7)
    }

    #[inline(always)]
    fn shift_bg(&mut self) {
        self.bg_lo <<= 1;
        self.bg_hi <<= 1;
        self.at_lo <<= 1;
        self.at_hi <<= 1;
    }

    /// Loads the latched tile into the low byte of the shifters.
    #[inline(always)]
    fn reload_bg(&mut self) {
        self.bg_lo = (self.bg_lo & 0xff00) | self.pat_lo_latch as u16;
        self.bg_hi = (self.bg_hi & 0xff00) | self.pat_hi_latch as u16;
        self.at_lo = (self.at_lo & 0xff00) | if self.at_latch & 1 != 0 { 0xff } else { 0 };
        self.at_hi = (self.at_hi & 0xff00) | if self.at_latch & 2 != 0 { 0xff } else { 0 };
    }

    /// Sprite pattern fetches, dots 257-320: slot `(d - 257) / 8`, garbage nametable
    /// fetches at +0/+2, pattern low at +4, high at +6. Empty slots fetch tile $FF and load
    /// transparent patterns.
    #[inline]
    fn sprite_fetch(&mut self, d: u16, cart: &mut Cart) {
        let step = (d - 257) & 7;
        let slot = ((d - 257) >> 3) as usize;
        match step {
            0 | 2 => {
                let _ = cart.ppu_read_nt(0x2000 | (self.v & 0x0fff), self.dot_clock);
            }
            4 | 6 => {
                let y = self.sec_oam[slot * 4];
                let attr = self.sec_oam[slot * 4 + 2];
                let used = (slot as u8) < self.spr_count;
                let tile = if used { self.sec_oam[slot * 4 + 1] } else { 0xff };
                let addr = self.sprite_pattern_addr(tile, attr, y, used);
                let addr = if step == 6 { addr + 8 } else { addr };
                let mut bits = cart.ppu_read_chr(addr, self.dot_clock);
                if !used {
                    bits = 0;
                } else if attr & 0x40 != 0 {
                    bits = bits.reverse_bits();
                }
                self.spr_line_dirty = true;
                if step == 4 {
                    self.spr_lo[slot] = bits;
                    self.spr_attr[slot] = attr;
                    self.spr_x[slot] = self.sec_oam[slot * 4 + 3];
                } else {
                    self.spr_hi[slot] = bits;
                }
            }
            _ => {}
        }
    }

    /// Pattern address (low plane) of a sprite row on the current line; empty slots fetch
    /// tile $FF.
    #[inline(always)]
    fn sprite_pattern_addr(&self, tile: u8, attr: u8, y: u8, used: bool) -> u16 {
        sprite_row_addr(self.ctrl, (self.scanline as u8).wrapping_sub(y), tile, attr, used)
    }

    /// Composes pixel `x` of the current line from the background shifters and the sprite
    /// line, sets sprite 0 hit, and stores the palette index.
    #[inline]
    fn draw_pixel(&mut self, x: u16) {
        let mask = self.mask;
        let check_hit = self.spr_zero
            && self.status & STATUS_SPRITE0 == 0
            && mask & (MASK_BG | MASK_SPRITE) == (MASK_BG | MASK_SPRITE);
        if !self.render_pixels && !check_hit {
            return;
        }
        let left = x < 8;
        // Background pixel: palette entry 0..15, 0 when transparent.
        let mut bg = 0u8;
        if mask & MASK_BG != 0 && (!left || mask & MASK_BG_LEFT != 0) {
            let bit = 15 - self.x as u16;
            let p = (((self.bg_hi >> bit) & 1) << 1) | ((self.bg_lo >> bit) & 1);
            if p != 0 {
                let a = (((self.at_hi >> bit) & 1) << 1) | ((self.at_lo >> bit) & 1);
                bg = ((a << 2) | p) as u8;
            }
        }
        // Sprite pixel: the line buffer already holds the first opaque sprite of each x.
        let mut spr = 0u8;
        if mask & MASK_SPRITE != 0 && (!left || mask & MASK_SPRITE_LEFT != 0) {
            if self.spr_line_dirty {
                self.build_sprite_line();
            }
            spr = self.spr_line[x as usize];
            if spr & SPR_LINE_ZERO != 0 && bg != 0 && x != 255 {
                self.status |= STATUS_SPRITE0;
            }
        }
        if !self.render_pixels {
            return;
        }
        // Entries 0..15 and 0x11..0x1F (never a multiple of 4) need no mirroring.
        let index = if spr != 0 && (bg == 0 || spr & SPR_LINE_BEHIND == 0) { 0x10 | (spr & 0x0f) } else { bg };
        let grey = 0x3f & !((mask & MASK_GREY) * 0x0f);
        self.pixels[self.scanline as usize * WIDTH + x as usize] = self.palette[index as usize] & grey;
    }

    /// The 8 pixels `x0 ..= x0+7` of a tile (`x0` a multiple of 8), from the shifters as they
    /// are after the tile's first dot (shift, then reload): the dot `x0+1+i` pixel is bit
    /// `15 - fine_x - i` of each register, since the 7 shifts still to come move that bit to
    /// `15 - fine_x`. The same composition as `draw_pixel`, for 8 pixels at once: byte i of
    /// each u64 below is pixel `x0+i` (perf-notes #26: ~50 instructions a pixel before). A
    /// sprite 0 hit sets the flag on its own pixel; setting it again later in the tile changes
    /// nothing.
    fn draw_tile(&mut self, x0: u16) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        let mask = self.mask;
        let x = x0 as usize;
        // Only the first tile can fall in the left-column clip.
        let left = x0 == 0;
        // Background palette indices 0..15, 0 where transparent; `opaque` has bit 0 set in
        // each byte whose pattern bits are not 0.
        let mut bg = 0u64;
        let mut opaque = 0u64;
        if mask & MASK_BG != 0 && (!left || mask & MASK_BG_LEFT != 0) {
            let sh = 8 - self.x as u32;
            let spread = |r: u16| SPREAD[(r >> sh) as u8 as usize];
            let p = spread(self.bg_lo) | spread(self.bg_hi) << 1;
            opaque = (p | p >> 1) & ONES;
            let a = spread(self.at_lo) << 2 | spread(self.at_hi) << 3;
            bg = p | (a & (opaque * 0x0c));
        }
        // Sprite line entries (0 = no sprite pixel).
        let mut spr = 0u64;
        if mask & MASK_SPRITE != 0 {
            if self.spr_line_dirty {
                self.build_sprite_line();
            }
            if !left || mask & MASK_SPRITE_LEFT != 0 {
                let mut b = [0u8; 8];
                b.copy_from_slice(&self.spr_line[x..x + 8]);
                spr = u64::from_le_bytes(b);
            }
        }
        if spr == 0 {
            if self.render_pixels {
                self.put_tile(x, bg);
            }
            return;
        }
        // Sprite 0 hit: a sprite-0 pixel over an opaque background pixel, never at x = 255.
        let mut hit = (spr >> 6) & opaque;
        if x == 248 {
            hit &= !(0xff << 56);
        }
        if hit != 0 {
            self.status |= STATUS_SPRITE0;
        }
        if !self.render_pixels {
            return;
        }
        // The sprite shows where it is opaque and the background is transparent or it is in
        // front: entries 0x11..0x1F, never a multiple of 4.
        let spr_opaque = (spr | spr >> 1) & ONES;
        let behind = (spr >> 5) & ONES;
        let use_spr = (spr_opaque & !(opaque & behind)) * 0xff;
        let index = (use_spr & ((spr & (ONES * 0x0f)) | (ONES * 0x10))) | (!use_spr & bg);
        self.put_tile(x, index);
    }

    /// Stores 8 palette indices (byte i of `index` for pixel `x + i`) as colours.
    #[inline(always)]
    fn put_tile(&mut self, x: usize, index: u64) {
        let grey = 0x3f & !((self.mask & MASK_GREY) * 0x0f);
        let at = self.scanline as usize * WIDTH + x;
        let out = &mut self.pixels[at..at + 8];
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.palette[(index >> (8 * i)) as usize & 0x1f] & grey;
        }
    }

    /// Flattens the 8 sprite units into one entry per x: the first opaque sprite's pixel
    /// (bits 0-1), palette (2-3), behind-background (5) and "is sprite 0" (6). 0 = none.
    /// Rebuilt lazily, whenever a unit changed since the last build.
    pub(super) fn build_sprite_line(&mut self) {
        self.spr_line_dirty = false;
        self.spr_line = [0; WIDTH];
        // Lower slots have priority: draw from the last one so they overwrite.
        let mut i = self.spr_count as usize;
        while i > 0 {
            i -= 1;
            let attr = self.spr_attr[i];
            let tag =
                ((attr & 3) << 2) | (attr & SPR_LINE_BEHIND) | if i == 0 && self.spr_zero { SPR_LINE_ZERO } else { 0 };
            let x0 = self.spr_x[i] as usize;
            let mut px = 0;
            while px < 8 && x0 + px < WIDTH {
                let bit = 7 - px;
                let p = (((self.spr_hi[i] >> bit) & 1) << 1) | ((self.spr_lo[i] >> bit) & 1);
                if p != 0 {
                    self.spr_line[x0 + px] = p | tag;
                }
                px += 1;
            }
        }
    }

    /// With rendering off the PPU shows the backdrop colour, or the palette entry `v`
    /// points at when `v` is inside the palette (the "background palette hack").
    #[inline]
    /// `blank_pixel` for the next `k` dots of a visible line with rendering off (the pixels
    /// of dots `dot+1 ..= dot+k` up to 256; neither `v` nor the palette can change meanwhile).
    pub(super) fn blank_pixels(&mut self, k: u32) {
        if !self.render_pixels {
            return;
        }
        let first = self.dot as usize; // pixel of dot `dot + 1`
        let end = (self.dot as usize + k as usize).min(WIDTH);
        if first >= end {
            return;
        }
        let index = if self.v & 0x3f00 == 0x3f00 { self.v } else { 0 };
        let colour = self.palette_read(index);
        let row = self.scanline as usize * WIDTH;
        self.pixels[row + first..row + end].fill(colour);
    }

    pub(super) fn blank_pixel(&mut self) {
        if !self.render_pixels {
            return;
        }
        let index = if self.v & 0x3f00 == 0x3f00 { self.v } else { 0 };
        let colour = self.palette_read(index);
        self.pixels[self.scanline as usize * WIDTH + (self.dot - 1) as usize] = colour;
    }
}

/// Pattern address (low plane) of row `row` (the line being fetched minus the sprite's Y) of a
/// sprite under PPUCTRL `ctrl`; empty slots fetch tile $FF.
#[inline(always)]
pub(super) fn sprite_row_addr(ctrl: u8, row: u8, tile: u8, attr: u8, used: bool) -> u16 {
    let mut row = row as u16;
    if ctrl & CTRL_SPRITE_16 != 0 {
        row &= 15;
        if attr & 0x80 != 0 && used {
            row = 15 - row;
        }
        let table = (tile as u16 & 1) << 12;
        let t = (tile as u16 & 0xfe) | (row >> 3);
        table | (t << 4) | (row & 7)
    } else {
        row &= 7;
        if attr & 0x80 != 0 && used {
            row = 7 - row;
        }
        let table = if ctrl & CTRL_SPRITE_TABLE != 0 { 0x1000 } else { 0 };
        table | ((tile as u16) << 4) | row
    }
}

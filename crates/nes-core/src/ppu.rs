//! The picture processing unit: a Ricoh 2C02 (NTSC), emulated one dot at a time.
//!
//! The 2C02 draws 262 scanlines of 341 dots per frame: 240 visible lines (0-239), one idle line
//! (240), 20 lines of vertical blank (241-260) and the pre-render line (261), which repeats the
//! visible lines' memory fetches without drawing. On odd frames with rendering on, the
//! pre-render line is one dot shorter (89,341 instead of 89,342 dots per frame).
//!
//! Everything a program can observe comes from *when* the chip does things, so this is a
//! dot-by-dot model of the real pipeline rather than a per-line renderer:
//! * the background is fetched 2 tiles ahead into 16-bit shift registers, with the fetch
//!   schedule of the real chip (nametable, attribute, pattern low, pattern high every 8 dots,
//!   coarse-X increments every 8 dots, Y at dot 256, horizontal copy at 257, vertical copy at
//!   280-304 of the pre-render line), so mid-frame writes land on the exact dot;
//! * sprite evaluation for the next line runs dot by dot over dots 65-256 (`sprite_eval.rs`), with
//!   the hardware's diagonal-scan overflow bug and the OAMADDR side effects `$2004` can see;
//! * every video-memory fetch goes through [`Cart::ppu_read`] in hardware order (garbage
//!   nametable fetches and the pattern fetches of empty sprite slots included), so boards that
//!   watch A12 (MMC3) see the real address sequence.
//!
//! Registers are the "loopy" model: `v` (current VRAM address), `t` (temporary address),
//! `x` (fine X) and `w` (first/second write toggle).
//!
//! Timing contract with the bus: each CPU cycle runs [`Ppu::tick`] twice, then the CPU's access
//! (if any), then the cycle's third tick, then the CPU samples [`Ppu::nmi`]. That split (the
//! access sees the PPU one dot before the NMI sample does) is what ppu_vbl_nmi 05-08 measure:
//! a `$2002` read on the dot VBL is set, or one dot later, reads it set and still cancels the
//! NMI; two dots later the CPU has already seen the NMI. `scanline`/`dot` name the dot last
//! processed, so a `$2002` read "at line 241, dot 0" lands just before the VBL flag is set and
//! cancels it for the frame (see `cpu_read`).
//!
//! Measured offsets pinned by test ROMs (all in this file): sprite 0 hit and overflow clear
//! at pre-render dot 0, one dot before VBL (ppu_sprite_hit 09, ppu_sprite_overflow 03); the
//! odd-frame skip is decided from PPUMASK as of pre-render dot 338 (ppu_vbl_nmi 10).
//!
//! Batches: the bus runs the PPU lazily (see `bus.rs`), so most dots arrive in batches
//! ([`Ppu::run`]) that nothing outside the PPU can look into. A batch takes whole tiles,
//! sprite-fetch slots, horizontal blanks, idle lines and sprite evaluation at once
//! (`render.rs`, `sprite_eval.rs`; sprite 0's hit in closed form in `sprite0.rs`), each exactly
//! equal to ticking its dots one by one (pinned by `running_dots_in_batches_matches_ticking_
//! them_one_by_one`); everything else still goes through [`Ppu::tick`]. Boards that watch the
//! PPU address bus (MMC3) never take the paths that skip fetches.
//!
//! Integer-only, fixed arrays, no heap, no trait objects: the CUDA kernel mirrors this code
//! (its results, not the batching: the kernel still runs dot by dot).

#[cfg(test)]
mod batch_tests;
mod render;
mod sprite0;
mod sprite_eval;
#[cfg(test)]
mod tests;

use crate::cart::Cart;
use crate::state::{Snapshot, StateError, StateReader, StateWriter};

pub const WIDTH: usize = 256;
pub const HEIGHT: usize = 240;

/// Dots per scanline, and scanlines per frame (NTSC).
pub const DOTS_PER_LINE: u16 = 341;
pub const LINES_PER_FRAME: u16 = 262;
/// The line on whose dot 1 the VBL flag is set.
pub const VBLANK_LINE: u16 = 241;
/// The pre-render line (often called -1).
pub const PRERENDER_LINE: u16 = 261;

// PPUCTRL ($2000) bits.
const CTRL_INC32: u8 = 0x04;
const CTRL_SPRITE_TABLE: u8 = 0x08;
const CTRL_BG_TABLE: u8 = 0x10;
const CTRL_SPRITE_16: u8 = 0x20;
const CTRL_NMI: u8 = 0x80;
// PPUMASK ($2001) bits.
const MASK_GREY: u8 = 0x01;
const MASK_BG_LEFT: u8 = 0x02;
const MASK_SPRITE_LEFT: u8 = 0x04;
const MASK_BG: u8 = 0x08;
const MASK_SPRITE: u8 = 0x10;
// PPUSTATUS ($2002) bits.
const STATUS_OVERFLOW: u8 = 0x20;
const STATUS_SPRITE0: u8 = 0x40;
const STATUS_VBLANK: u8 = 0x80;
// Sprite line buffer bits besides pixel (0-1) and palette (2-3).
const SPR_LINE_BEHIND: u8 = 0x20;
const SPR_LINE_ZERO: u8 = 0x40;

/// Palette RAM at power-on, as read from one real console by blargg's `power_up_palette` test.
/// Real consoles differ; any value is "correct", this one at least is a real one.
#[rustfmt::skip]
const POWER_UP_PALETTE: [u8; 32] = [
    0x09, 0x01, 0x00, 0x01, 0x00, 0x02, 0x02, 0x0D, 0x08, 0x10, 0x08, 0x24, 0x00, 0x00, 0x04, 0x2C, //
    0x09, 0x01, 0x34, 0x03, 0x00, 0x04, 0x00, 0x14, 0x08, 0x3A, 0x00, 0x02, 0x00, 0x20, 0x2C, 0x08,
];

#[derive(Clone)]
pub struct Ppu {
    /// The frame being drawn, as palette indices 0..63 (greyscale applied), row-major.
    pub pixels: [u8; WIDTH * HEIGHT],
    /// When false, pixels are not written; everything else (flags, timing, fetches) is identical.
    pub render_pixels: bool,
    /// Set when the PPU enters vertical blank (line 241, dot 1); the console clears it.
    pub frame_complete: bool,
    /// The dot last processed: line 0..=261, dot 0..=340.
    pub scanline: u16,
    pub dot: u16,
    /// Frames started since power-on, and dots ticked since power-on.
    pub frame: u64,
    pub dot_clock: u64,

    // --- CPU-visible registers ---
    ctrl: u8,
    mask: u8,
    /// Bits 7 (VBL), 6 (sprite 0 hit), 5 (overflow); the low bits read as the I/O latch.
    status: u8,
    /// Current VRAM address (15 bits: fine Y, nametable, coarse Y, coarse X).
    v: u16,
    /// Temporary VRAM address (the scroll written through $2000/$2005/$2006).
    t: u16,
    /// Fine X scroll (3 bits).
    x: u8,
    /// First/second write toggle of $2005/$2006.
    w: bool,
    oam_addr: u8,
    /// The `$2007` read buffer.
    read_buffer: u8,
    /// The PPU's I/O data latch ("PPU open bus"): the last value written or read through
    /// $2000-$2007. Write-only registers read back as this. Decay is not modelled.
    io_latch: u8,
    /// Palette RAM, 6 bits per entry; $3F10/$14/$18/$1C are stored at $3F00/$04/$08/$0C.
    palette: [u8; 32],
    oam: [u8; 256],
    /// After power-on and reset, writes to $2000/$2001/$2005/$2006 are ignored until the
    /// pre-render line (about 29,658 CPU cycles).
    warming_up: bool,
    /// A `$2002` read one dot before VBL cancels the flag (and NMI) for this frame.
    suppress_vbl: bool,
    odd_frame: bool,
    /// Latched at dot 338 of the pre-render line: this frame skips its last dot.
    skip_last_dot: bool,

    // --- background pipeline ---
    nt_latch: u8,
    at_latch: u8,
    pat_lo_latch: u8,
    pat_hi_latch: u8,
    /// Pattern shifters: bit 15 is the leftmost pixel (before fine X).
    bg_lo: u16,
    bg_hi: u16,
    /// Attribute shifters, each bit the palette bit of one pixel, same alignment.
    at_lo: u16,
    at_hi: u16,

    // --- sprites ---
    /// Secondary OAM: the up to 8 sprites found for the next line.
    sec_oam: [u8; 32],
    /// Sprite evaluation state (see `render::sprite_eval`).
    eval_buffer: u8,
    eval_sec_addr: u8,
    eval_n: u8,
    eval_m: u8,
    eval_in_range: bool,
    eval_done: bool,
    eval_overflow_count: u8,
    eval_sprite0: bool,
    eval_count: u8,
    /// The sprite output units of the line being drawn.
    spr_count: u8,
    spr_zero: bool,
    spr_lo: [u8; 8],
    spr_hi: [u8; 8],
    spr_attr: [u8; 8],
    spr_x: [u8; 8],
    /// The sprite units flattened per x (see `render::build_sprite_line`), derived state:
    /// rebuilt when `spr_line_dirty`, not saved.
    spr_line: [u8; WIDTH],
    spr_line_dirty: bool,
    /// Bit i of `in_range[line]`: sprite i's OAM Y puts it on visible line `line` (at the
    /// current sprite height). Derived from OAM Y bytes and `ctrl`, not saved: rebuilt when
    /// `!in_range_valid` (any OAM write, a sprite-size change, a load), at most about once a
    /// frame. `sprite_eval_line` jumps over out-of-range sprites with it (perf-notes #27).
    in_range: [u64; 240],
    in_range_valid: bool,
}

impl core::fmt::Debug for Ppu {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ppu")
            .field("scanline", &self.scanline)
            .field("dot", &self.dot)
            .field("frame", &self.frame)
            .field("ctrl", &format_args!("{:02x}", self.ctrl))
            .field("mask", &format_args!("{:02x}", self.mask))
            .field("status", &format_args!("{:02x}", self.status))
            .field("v", &format_args!("{:04x}", self.v))
            .field("t", &format_args!("{:04x}", self.t))
            .finish_non_exhaustive()
    }
}

impl Default for Ppu {
    fn default() -> Self {
        Self::new()
    }
}

impl Ppu {
    /// Power-on state: line 0, dot 0, registers clear, palette as on a real console.
    pub fn new() -> Ppu {
        Ppu {
            pixels: [0; WIDTH * HEIGHT],
            render_pixels: true,
            frame_complete: false,
            scanline: 0,
            dot: 0,
            frame: 0,
            dot_clock: 0,
            ctrl: 0,
            mask: 0,
            status: 0,
            v: 0,
            t: 0,
            x: 0,
            w: false,
            oam_addr: 0,
            read_buffer: 0,
            io_latch: 0,
            palette: POWER_UP_PALETTE,
            oam: [0; 256],
            warming_up: true,
            suppress_vbl: false,
            odd_frame: false,
            skip_last_dot: false,
            nt_latch: 0,
            at_latch: 0,
            pat_lo_latch: 0,
            pat_hi_latch: 0,
            bg_lo: 0,
            bg_hi: 0,
            at_lo: 0,
            at_hi: 0,
            sec_oam: [0xff; 32],
            eval_buffer: 0,
            eval_sec_addr: 0,
            eval_n: 0,
            eval_m: 0,
            eval_in_range: false,
            eval_done: false,
            eval_overflow_count: 0,
            eval_sprite0: false,
            eval_count: 0,
            spr_count: 0,
            spr_zero: false,
            spr_lo: [0; 8],
            spr_hi: [0; 8],
            spr_attr: [0; 8],
            spr_x: [0; 8],
            spr_line: [0; WIDTH],
            spr_line_dirty: true,
            in_range: [0; 240],
            in_range_valid: false,
        }
    }

    /// The reset button: PPUCTRL/PPUMASK cleared, write toggle and read buffer cleared, odd
    /// frame flag cleared, register writes ignored until the pre-render line. OAM, palette,
    /// `v`, OAMADDR and the VBL flag are kept.
    pub fn reset(&mut self) {
        self.ctrl = 0;
        self.mask = 0;
        self.w = false;
        self.t = 0;
        self.x = 0;
        self.read_buffer = 0;
        self.odd_frame = false;
        self.warming_up = true;
    }

    /// Colour emphasis bits of PPUMASK (bit 0 red, 1 green, 2 blue on NTSC), as last written.
    pub fn emphasis(&self) -> u8 {
        self.mask >> 5
    }

    /// PPUCTRL as last written (a debug view: test runners check whether NMIs are on).
    pub fn ctrl(&self) -> u8 {
        self.ctrl
    }

    /// Whether background or sprite rendering is on.
    #[inline(always)]
    fn rendering(&self) -> bool {
        self.mask & (MASK_BG | MASK_SPRITE) != 0
    }

    /// The level of the PPU's NMI output: VBL flag AND NMI enable. The CPU edge-detects it.
    #[inline]
    pub fn nmi(&self) -> bool {
        self.status & STATUS_VBLANK != 0 && self.ctrl & CTRL_NMI != 0
    }

    /// Advances exactly one dot.
    #[inline]
    pub fn tick(&mut self, cart: &mut Cart) {
        self.dot_clock += 1;
        if self.dot == 339 && self.scanline == PRERENDER_LINE && self.skip_last_dot {
            // Odd frames with rendering on skip the last dot of the pre-render line.
            self.dot = 340;
        }
        self.dot += 1;
        if self.dot == DOTS_PER_LINE {
            self.dot = 0;
            self.scanline += 1;
            if self.scanline == LINES_PER_FRAME {
                self.scanline = 0;
                self.frame += 1;
                self.odd_frame = !self.odd_frame;
            }
        }

        if self.scanline < 240 {
            if self.rendering() {
                self.render_dot(cart);
            } else if self.dot >= 1 && self.dot <= 256 {
                self.blank_pixel();
            }
        } else if self.scanline == VBLANK_LINE {
            if self.dot == 1 {
                if !self.suppress_vbl {
                    self.status |= STATUS_VBLANK;
                }
                self.suppress_vbl = false;
                self.frame_complete = true;
            }
        } else if self.scanline == PRERENDER_LINE {
            match self.dot {
                // Sprite 0 hit and overflow read as clear one dot before VBL does
                // (ppu_sprite_hit 09-timing, ppu_sprite_overflow 03-timing: 6819 vs 6820 dots).
                0 => self.status &= !(STATUS_SPRITE0 | STATUS_OVERFLOW),
                1 => {
                    self.status &= !STATUS_VBLANK;
                    self.warming_up = false;
                }
                // The skip decision sees PPUMASK as of dot 338: a $2001 write takes a few dots
                // to reach the rendering logic (ppu_vbl_nmi 10-even_odd_timing pins this).
                338 => self.skip_last_dot = self.odd_frame && self.rendering(),
                _ => {}
            }
            if self.rendering() {
                self.render_dot(cart);
            }
        }
    }

    /// Advances `n` dots, exactly as `n` calls of [`Ppu::tick`] would; the bus's lazy
    /// catch-up. Nothing outside the PPU looks in between, so spans without per-dot events run
    /// in bulk: whole background tiles of rendering lines (dots 9-256 and 321-336,
    /// `render::render_tile`; the first tile holds the pre-render line's dot 0/1 events;
    /// without pixel output, runs of tiles whose pixels cannot matter, `render::skip_tiles`),
    /// whole sprite-fetch slots (257-320, `render::sprite_slot`), and the idle lines 240-260.
    pub fn run(&mut self, mut n: u32, cart: &mut Cart) {
        while n > 0 {
            if n >= 8 && self.dot & 7 == 0 && self.rendering() && self.on_render_line() {
                let d = self.dot;
                if d <= 64 && !self.line_draws(cart) && !cart.watches_ppu_bus() {
                    if self.scanline < 240 && n >= 341 - d as u32 {
                        n -= 341 - d as u32;
                        let empty = self.oam_addr == 0 && self.in_range_of(self.scanline) == 0;
                        self.line_whole(cart, n >= 341);
                        if empty {
                            n -= self.skip_empty_lines(n);
                        }
                        continue;
                    }
                    if self.scanline < 240 && n >= 256 - d as u32
                        || d == 8 && self.scanline == PRERENDER_LINE && n >= 248
                    {
                        n -= 256 - d as u32;
                        self.line_fast(cart);
                        continue;
                    }
                }
                if d == 64 && n >= 192 && self.scanline < 240 {
                    // Dots 65-256: evaluate the next line's sprites at once, then the tiles.
                    self.sprite_eval_line();
                    for _ in 0..24 {
                        self.render_tile::<false>(cart);
                    }
                    n -= 192;
                    continue;
                }
                if !self.render_pixels && self.scanline < 240 && d < 232 && n >= 32 && !cart.watches_ppu_bus() {
                    let k = self.quiet_tiles(cart, d, n);
                    if k > 0 {
                        self.skip_tiles(k);
                        n -= 8 * k;
                        continue;
                    }
                }
                if d.wrapping_sub(8) <= 240 || d.wrapping_sub(320) <= 8 || (d == 0 && self.scanline < 240) {
                    self.render_tile::<true>(cart);
                    n -= 8;
                    continue;
                }
                if d == 256 && n >= 85 && self.scanline < 240 && !cart.watches_ppu_bus() {
                    self.hblank_fast(cart);
                    n -= 85;
                    continue;
                }
                if d.wrapping_sub(256) <= 56 {
                    self.sprite_slot(cart);
                    n -= 8;
                    continue;
                }
                if d == 336 && self.scanline < 240 {
                    self.line_tail(cart);
                    n -= 5;
                    continue;
                }
            }
            if self.scanline < 240 && self.dot < 340 && !self.rendering() {
                // A visible line with rendering off only shows one colour on dots 1-256 (the
                // backdrop, or the palette entry `v` points at; `tick`'s `blank_pixel`):
                // skip to the line's last dot, filling those pixels at once.
                let k = n.min((340 - self.dot) as u32);
                self.blank_pixels(k);
                self.dot += k as u16;
                self.dot_clock += k as u64;
                n -= k;
                continue;
            }
            if self.scanline.wrapping_sub(240) <= 20
                && self.dot < 340
                && (self.scanline != VBLANK_LINE || self.dot != 0)
            {
                // Lines 240-260 do nothing but set VBL at 241/1: skip to the line's last dot.
                let k = n.min((340 - self.dot) as u32);
                self.dot += k as u16;
                self.dot_clock += k as u64;
                n -= k;
                continue;
            }
            self.tick(cart);
            n -= 1;
        }
    }

    /// Dots from now until the next dot on which the NMI line can change by itself (VBL set
    /// at 241/1, cleared at 261/1). Never late: across the odd-frame skip it assumes the
    /// skip, so it may be one dot early, and the bus then simply asks again.
    pub(crate) fn dots_to_nmi_event(&self) -> u32 {
        const LINE: u32 = DOTS_PER_LINE as u32;
        const SET: u32 = VBLANK_LINE as u32 * LINE + 1;
        const CLEAR: u32 = PRERENDER_LINE as u32 * LINE + 1;
        const FRAME: u32 = LINES_PER_FRAME as u32 * LINE;
        let pos = self.scanline as u32 * LINE + self.dot as u32;
        if pos < SET {
            SET - pos
        } else if pos < CLEAR {
            CLEAR - pos
        } else {
            // Wrapping, as the kernel's u32 arithmetic: a state past the frame's last dot (only a
            // hand-made or corrupt one; the PPU never wraps from there) gets a far deadline and
            // stalls, instead of an overflow panic in a debug build.
            FRAME.wrapping_sub(1).wrapping_sub(pos).wrapping_add(SET)
        }
    }

    /// Dots from now until the first dot on which `$2002`'s bits 5-7 may change by
    /// themselves: never late, possibly early. Before it, a `$2002` read returns the same
    /// value whether the PPU has caught up or not, and its side effects (VBL clear, `w`, the
    /// I/O latch) touch nothing the rendering reads, so the bus answers it without running
    /// the owed dots (perf-notes #28). Bounds, the nearest wins:
    /// * VBL set/clear, and the clear of hit and overflow at 261/1: `dots_to_nmi_event`, less
    ///   one (the dot before VBL is where a read suppresses it);
    /// * sprite 0 hit (both layers shown, flag clear): `dots_to_hit`, the hit's own dot where
    ///   the pattern rows under sprite 0 give it (perf-notes #50), else the first dot it may
    ///   come on;
    /// * sprite overflow (flag clear): dots 65-256 of a visible line, unless this line's
    ///   evaluation is done or cannot fill secondary OAM (it starts aligned, OAMADDR & 3 = 0,
    ///   and fewer than 8 sprites are in range: only after 8 hits does the scan read other
    ///   bytes as Y; or, under way, too few of the sprites it has still to read are in
    ///   range: `eval_cannot_fill`); the next line's from dot 65, unless no line up to where
    ///   the other bounds fall can overflow (`no_overflow_through`).
    ///
    /// Writes that change any of this (the PPU's registers, `$2005`-`$2007` for the scroll,
    /// nametables and patterns under sprite 0 included; OAM DMA; the mapper's banks and
    /// mirroring) catch the PPU up first, so the bound holds until the next catch-up.
    pub(crate) fn dots_to_status_change(&mut self, cart: &Cart) -> u32 {
        const LINE: u32 = DOTS_PER_LINE as u32;
        // A read on the dot before VBL suppresses it, which `cpu_read` detects from the
        // PPU's own position: that dot needs the catch-up too.
        let mut dist = self.dots_to_nmi_event() - 1;
        // Lines 240-260 change nothing before 261/1; rendering off: no evaluation or hit
        // until a `$2001` write.
        if !self.rendering() || (self.scanline >= 240 && self.scanline != PRERENDER_LINE) {
            return dist;
        }
        let d = self.dot as u32;
        // Dot `dot2` of the next line (the pre-render line may skip its last dot).
        let skip = (self.scanline == PRERENDER_LINE) as u32;
        let next_line = |dot2: u32| LINE - d + dot2 - skip;
        let both = MASK_BG | MASK_SPRITE;
        if self.status & STATUS_SPRITE0 == 0 && self.mask & both == both {
            dist = dist.min(self.dots_to_hit(cart, next_line(0)));
        }
        if self.status & STATUS_OVERFLOW == 0 {
            let this_line_done = self.scanline >= 240
                || d >= 256
                || (d >= 65 && (self.eval_done || self.eval_cannot_fill()))
                || (d < 65 && self.oam_addr & 3 == 0 && self.in_range_of(self.scanline).count_ones() < 8);
            let overflow = if this_line_done { next_line(65) } else { 65u32.max(d + 1) - d };
            // Past the next line while no line up to where the bound falls can overflow.
            let last = self.scanline as u32 + (d + dist) / LINE;
            if overflow < dist && !(this_line_done && self.no_overflow_through(last)) {
                dist = overflow;
            }
        }
        dist
    }

    /// The value a `$2002` read would return now, if that read would change nothing (VBL
    /// clear, `w` clear, the I/O latch already holding the value): then a loop polling it
    /// returns the same value, with the same effects, until the status bits change
    /// (`dots_to_status_change`). `run_frame`'s poll-loop fast-forward relies on this.
    pub(crate) fn idle_status_read(&self) -> Option<u8> {
        let value = (self.status & 0xe0) | (self.io_latch & 0x1f);
        (self.status & STATUS_VBLANK == 0 && !self.w && self.io_latch == value).then_some(value)
    }

    /// Whether the PPU is on a line where rendering (when enabled) touches v and OAM.
    #[inline(always)]
    fn on_render_line(&self) -> bool {
        self.scanline < 240 || self.scanline == PRERENDER_LINE
    }

    /// A CPU read of $2000-$3FFF (mirrored every 8 bytes).
    pub fn cpu_read(&mut self, addr: u16, cart: &mut Cart) -> u8 {
        let value = match addr & 7 {
            2 => {
                let value = (self.status & 0xe0) | (self.io_latch & 0x1f);
                if self.scanline == VBLANK_LINE && self.dot == 0 {
                    // Read one dot before VBL: the flag will not be set this frame.
                    self.suppress_vbl = true;
                }
                self.status &= !STATUS_VBLANK;
                self.w = false;
                value
            }
            4 => self.read_oam_data(),
            7 => {
                let a = self.v & 0x3fff;
                let value = if a >= 0x3f00 {
                    // Palette reads are immediate; the buffer gets the nametable byte "under" it.
                    self.read_buffer = cart.ppu_read(a & 0x2fff, self.dot_clock);
                    (self.palette_read(a) & 0x3f) | (self.io_latch & 0xc0)
                } else {
                    let old = self.read_buffer;
                    self.read_buffer = cart.ppu_read(a, self.dot_clock);
                    old
                };
                self.increment_v_after_access(cart);
                value
            }
            // Write-only registers read back the I/O latch.
            _ => self.io_latch,
        };
        self.io_latch = value;
        value
    }

    /// A CPU write of $2000-$3FFF (mirrored every 8 bytes).
    pub fn cpu_write(&mut self, addr: u16, v: u8, cart: &mut Cart) {
        self.io_latch = v;
        match addr & 7 {
            0 => {
                if !self.warming_up {
                    if (self.ctrl ^ v) & CTRL_SPRITE_16 != 0 {
                        self.in_range_valid = false;
                    }
                    self.ctrl = v;
                    self.t = (self.t & !0x0c00) | ((v as u16 & 3) << 10);
                }
            }
            1 => {
                if !self.warming_up {
                    self.mask = v;
                }
            }
            2 => {}
            3 => self.oam_addr = v,
            4 => self.write_oam_data(v),
            5 => {
                if !self.warming_up {
                    if !self.w {
                        self.t = (self.t & !0x001f) | (v as u16 >> 3);
                        self.x = v & 7;
                    } else {
                        self.t = (self.t & 0x0c1f) | ((v as u16 & 7) << 12) | ((v as u16 & 0xf8) << 2);
                    }
                    self.w = !self.w;
                }
            }
            6 => {
                if !self.warming_up {
                    if !self.w {
                        self.t = (self.t & 0x00ff) | ((v as u16 & 0x3f) << 8);
                    } else {
                        self.t = (self.t & 0x7f00) | v as u16;
                        self.v = self.t;
                        // While rendering, the PPU's own fetches own the address bus.
                        if !(self.rendering() && self.on_render_line()) {
                            cart.ppu_addr(self.v & 0x3fff, self.dot_clock);
                        }
                    }
                    self.w = !self.w;
                }
            }
            _ => {
                let a = self.v & 0x3fff;
                if a >= 0x3f00 {
                    self.palette_write(a, v);
                    cart.ppu_addr(a, self.dot_clock);
                } else {
                    cart.ppu_write(a, v, self.dot_clock);
                }
                self.increment_v_after_access(cart);
            }
        }
    }

    /// After a $2007 access `v` moves on by 1 or 32; during rendering the access instead
    /// bumps coarse X and Y at once (the rendering counters are the same hardware).
    fn increment_v_after_access(&mut self, cart: &mut Cart) {
        if self.rendering() && self.on_render_line() {
            self.increment_x();
            self.increment_y();
        } else {
            let step = if self.ctrl & CTRL_INC32 != 0 { 32 } else { 1 };
            self.v = (self.v + step) & 0x7fff;
            cart.ppu_addr(self.v & 0x3fff, self.dot_clock);
        }
    }

    #[inline(always)]
    fn palette_index(addr: u16) -> usize {
        let i = addr as usize & 0x1f;
        // $3F10/$14/$18/$1C are the same cells as $3F00/$04/$08/$0C.
        if i & 0x13 == 0x10 {
            i & 0x0f
        } else {
            i
        }
    }

    #[inline(always)]
    fn palette_read(&self, addr: u16) -> u8 {
        let c = self.palette[Self::palette_index(addr)];
        if self.mask & MASK_GREY != 0 {
            c & 0x30
        } else {
            c
        }
    }

    fn palette_write(&mut self, addr: u16, v: u8) {
        self.palette[Self::palette_index(addr)] = v & 0x3f;
    }

    /// `$2004` read. Outside rendering: OAM at OAMADDR (attribute bits 2-4 read as 0, they
    /// are not stored). During rendering: the byte the sprite logic is moving right now.
    fn read_oam_data(&mut self) -> u8 {
        if self.rendering() && self.scanline < 240 {
            let d = self.dot;
            if (1..=64).contains(&d) {
                0xff
            } else if d <= 256 {
                self.eval_buffer
            } else if d <= 320 {
                let step = ((d - 257) & 7).min(3);
                self.sec_oam[(((d - 257) >> 3) * 4 + step) as usize]
            } else {
                self.sec_oam[0]
            }
        } else {
            self.oam[self.oam_addr as usize]
        }
    }

    /// `$2004` write. During rendering the write is dropped but OAMADDR's high 6 bits
    /// still increment (a glitch of the shared counter).
    fn write_oam_data(&mut self, v: u8) {
        if self.rendering() && self.on_render_line() {
            self.oam_addr = self.oam_addr.wrapping_add(4);
        } else {
            let v = if self.oam_addr & 3 == 2 { v & 0xe3 } else { v };
            self.oam[self.oam_addr as usize] = v;
            self.in_range_valid = false;
            self.oam_addr = self.oam_addr.wrapping_add(1);
        }
    }

    /// Coarse X increment, wrapping into the horizontally adjacent nametable.
    #[inline(always)]
    fn increment_x(&mut self) {
        self.v = v_increment_x(self.v);
    }

    /// Fine Y increment (`v_increment_y`).
    #[inline(always)]
    fn increment_y(&mut self) {
        self.v = v_increment_y(self.v);
    }
}

/// `v` one tile right: coarse X + 1, wrapping into the horizontally adjacent nametable.
#[inline(always)]
fn v_increment_x(v: u16) -> u16 {
    if v & 0x001f == 31 {
        (v & !0x001f) ^ 0x0400
    } else {
        v + 1
    }
}

/// `v` one line down: fine Y + 1, carrying into coarse Y (29 wraps to the vertical neighbour;
/// 31 wraps to 0 without switching, the "attribute rows" quirk).
#[inline(always)]
fn v_increment_y(v: u16) -> u16 {
    if v & 0x7000 != 0x7000 {
        return v + 0x1000;
    }
    let v = v & !0x7000;
    match (v & 0x03e0) >> 5 {
        29 => (v & !0x03e0) ^ 0x0800,
        31 => v & !0x03e0,
        y => (v & !0x03e0) | ((y + 1) << 5),
    }
}

impl Snapshot for Ppu {
    fn save(&self, w: &mut StateWriter<'_>) {
        w.bool(self.render_pixels);
        w.bool(self.frame_complete);
        w.u16(self.scanline);
        w.u16(self.dot);
        w.u64(self.frame);
        w.u64(self.dot_clock);
        w.u8(self.ctrl);
        w.u8(self.mask);
        w.u8(self.status);
        w.u16(self.v);
        w.u16(self.t);
        w.u8(self.x);
        w.bool(self.w);
        w.u8(self.oam_addr);
        w.u8(self.read_buffer);
        w.u8(self.io_latch);
        w.bytes(&self.palette);
        w.bytes(&self.oam);
        w.bool(self.warming_up);
        w.bool(self.suppress_vbl);
        w.bool(self.odd_frame);
        w.bool(self.skip_last_dot);
        w.u8(self.nt_latch);
        w.u8(self.at_latch);
        w.u8(self.pat_lo_latch);
        w.u8(self.pat_hi_latch);
        w.u16(self.bg_lo);
        w.u16(self.bg_hi);
        w.u16(self.at_lo);
        w.u16(self.at_hi);
        w.bytes(&self.sec_oam);
        w.u8(self.eval_buffer);
        w.u8(self.eval_sec_addr);
        w.u8(self.eval_n);
        w.u8(self.eval_m);
        w.bool(self.eval_in_range);
        w.bool(self.eval_done);
        w.u8(self.eval_overflow_count);
        w.bool(self.eval_sprite0);
        w.u8(self.eval_count);
        w.u8(self.spr_count);
        w.bool(self.spr_zero);
        w.bytes(&self.spr_lo);
        w.bytes(&self.spr_hi);
        w.bytes(&self.spr_attr);
        w.bytes(&self.spr_x);
    }

    fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        self.render_pixels = r.bool()?;
        self.frame_complete = r.bool()?;
        self.scanline = r.u16()?;
        self.dot = r.u16()?;
        if self.scanline >= LINES_PER_FRAME || self.dot >= DOTS_PER_LINE {
            return Err(StateError::BadField("ppu.scanline/dot"));
        }
        self.frame = r.u64()?;
        self.dot_clock = r.u64()?;
        // Bounded as `bus.cycles` is (2^60 CPU cycles, 3 dots each): past them the clocks'
        // sums would overflow.
        if self.frame >= 1 << 60 || self.dot_clock >= 1 << 62 {
            return Err(StateError::BadField("ppu.frame/dot_clock"));
        }
        self.ctrl = r.u8()?;
        self.mask = r.u8()?;
        self.status = r.u8()?;
        self.v = r.u16()? & 0x7fff;
        self.t = r.u16()? & 0x7fff;
        self.x = r.u8()? & 7;
        self.w = r.bool()?;
        self.oam_addr = r.u8()?;
        self.read_buffer = r.u8()?;
        self.io_latch = r.u8()?;
        r.bytes(&mut self.palette)?;
        for c in self.palette.iter_mut() {
            *c &= 0x3f;
        }
        r.bytes(&mut self.oam)?;
        self.warming_up = r.bool()?;
        self.suppress_vbl = r.bool()?;
        self.odd_frame = r.bool()?;
        self.skip_last_dot = r.bool()?;
        self.nt_latch = r.u8()?;
        self.at_latch = r.u8()? & 3;
        self.pat_lo_latch = r.u8()?;
        self.pat_hi_latch = r.u8()?;
        self.bg_lo = r.u16()?;
        self.bg_hi = r.u16()?;
        self.at_lo = r.u16()?;
        self.at_hi = r.u16()?;
        r.bytes(&mut self.sec_oam)?;
        self.eval_buffer = r.u8()?;
        self.eval_sec_addr = r.u8()?;
        self.eval_n = r.u8()? & 63;
        self.eval_m = r.u8()? & 3;
        self.eval_in_range = r.bool()?;
        self.eval_done = r.bool()?;
        self.eval_overflow_count = r.u8()?;
        self.eval_sprite0 = r.bool()?;
        self.eval_count = r.u8()?;
        self.spr_count = r.u8()?;
        if self.eval_count > 8 || self.spr_count > 8 || self.eval_sec_addr > 32 {
            return Err(StateError::BadField("ppu.sprite_count"));
        }
        self.spr_zero = r.bool()?;
        r.bytes(&mut self.spr_lo)?;
        r.bytes(&mut self.spr_hi)?;
        r.bytes(&mut self.spr_attr)?;
        r.bytes(&mut self.spr_x)?;
        self.spr_line_dirty = true;
        self.in_range_valid = false;
        Ok(())
    }
}

// The 2C02 PPU (nes-core ppu.rs + ppu/render.rs), function for function.
//
// The model is nes-core's: a dot-accurate pipeline with the real fetch schedule, so MMC3's A12
// counter, sprite 0 hit and mid-frame register writes land on the same dot as on the CPU side.
// The kernel draws pixels only when the env was given a pixel buffer (`n.pixels`), which the
// step entry point sets for the last frame of a frameskip; everything else (flags, timing,
// fetches, sprite 0 hit) runs identically with or without it, as nes-core's `render_pixels`.
//
// Catch-up (nes-core's "catch-up PPU", docs/kernel-notes.md "Catch-up PPU in the kernels"):
// the bus owes the PPU its dots and runs them in batches through `ppu_run` (Ppu::run), which
// takes whole tiles, sprite slots, horizontal blanks, idle lines and, when no pixel matters,
// whole lines at once (`ppu_render_tile`, `ppu_sprite_slot`, `ppu_hblank_fast`, `ppu_line_fast`,
// `ppu_sprite_eval_line`: the render.rs functions of the same names). Only what none of those
// covers goes dot by dot through `ppu_tick`. Each bulk path is exactly equal to ticking its dots
// one by one (nes-core pins that with ppu::batch_tests; here the parity test compares every frame).
//
// The parts, each including the one before it, so that the code keeps one order: ppu_state.cuh
// (register bits, predicates, OAM and palette, the line renderer's log), ppu_dots.cuh (dot by
// dot, `ppu_ticks`), ppu_batches.cuh (the batch paths), and this file (`ppu_run`, the dots to the
// next NMI or `$2002` change, the CPU's register reads and writes). The rest of the kernels
// include this file only.
#pragma once
#include "ppu_batches.cuh"

// --- ppu.rs: the catch-up entry points ---

// Advances `count` dots, exactly as `count` calls of `ppu_tick` would (Ppu::run): the bus's
// lazy catch-up. Spans without per-dot events run in bulk; everything else dot by dot.
NESLE_DEV void ppu_run(Nes& n, u32 count) {
    FlatState& s = n.st;
    bool watches = s.cart_kind == MAPPER_MMC3;  // Cart::watches_ppu_bus
    while (count > 0) {
        u16 d = s.ppu_dot;
        u16 line = s.ppu_scanline;
        if (count >= 8 && (d & 7) == 0 && ppu_rendering(s) && ppu_on_render_line(s)) {
            // From any tile boundary up to dot 64 of a visible line (nes-core perf #29: the
            // batches a `$2002` poll leaves start a few dots into the line): the whole line
            // when the batch holds it, else up to dot 256.
            if (d <= 64 && !ppu_line_draws(n) && !watches) {
                if (line < 240 && count >= 341u - d) {
                    count -= 341 - d;
                    bool empty = s.ppu_oam_addr == 0 && !ppu_line_has_sprites(n, line);
                    ppu_line_whole(n, count >= 341);
                    if (empty) count -= ppu_skip_empty_lines(n, count);
                    continue;
                }
                if ((line < 240 && count >= 256u - d) || (d == 8 && line == PPU_PRERENDER_LINE && count >= 248)) {
                    count -= 256 - d;
                    ppu_line_fast(n);
                    continue;
                }
            }
            if (d == 64 && count >= 192 && line < 240) {
                // Dots 65-256: evaluate the next line's sprites at once, then the tiles.
                ppu_sprite_eval_line(n);
                NESLE_NO_UNROLL
                for (u32 i = 0; i < 24; i++) ppu_render_tile(n, false);
                count -= 192;
                continue;
            }
            if (!ppu_drawing(n) && line < 240 && d < 232 && count >= 32 && !watches) {
                u32 k = ppu_quiet_tiles(n, d, count);
                if (k > 0) {
                    ppu_skip_tiles(n, k);
                    count -= 8 * k;
                    continue;
                }
            }
            if ((u16)(d - 8) <= 240 || (u16)(d - 320) <= 8 || (d == 0 && line < 240)) {
                ppu_render_tile(n, true);
                count -= 8;
                continue;
            }
            if (d == 256 && count >= 85 && line < 240 && !watches) {
                ppu_hblank_fast(n);
                count -= 85;
                continue;
            }
            if ((u16)(d - 256) <= 56) {
                ppu_sprite_slot(n);
                count -= 8;
                continue;
            }
            if (d == 336 && line < 240) {
                ppu_line_tail(n);
                count -= 5;
                continue;
            }
        }
        if (line < 240 && d < 340 && !ppu_rendering(s)) {
            // A visible line with rendering off only shows one colour on dots 1-256 (the
            // backdrop, or the palette entry `v` points at; ppu_tick's `ppu_blank_pixel`):
            // skip to the line's last dot, filling those pixels at once.
            u32 k = 340 - d;
            if (k > count) k = count;
            ppu_blank_pixels(n, k);
            s.ppu_dot = (u16)(d + k);
            s.ppu_dot_clock += k;
            count -= k;
            continue;
        }
        if ((u16)(line - 240) <= 20 && d < 340 && (line != PPU_VBLANK_LINE || d != 0)) {
            // Lines 240-260 do nothing but set VBL at 241/1: skip to the line's last dot.
            u32 k = 340 - d;
            if (k > count) k = count;
            s.ppu_dot = (u16)(d + k);
            s.ppu_dot_clock += k;
            count -= k;
            continue;
        }
        // Dot by dot up to the next tile boundary or the line's last dot, where a batch path
        // above may take over again, in one call (kernel-notes #99).
        u32 k = 8 - (d & 7);
        u32 line_left = d < 340 ? 340u - d : 1;
        if (k > line_left) k = line_left;
        if (k > count) k = count;
        ppu_ticks(n, k);
        count -= k;
    }
}

// Dots from now until the next dot on which the NMI line can change by itself (VBL set at
// 241/1, cleared at 261/1): Ppu::dots_to_nmi_event. Never late: across the odd-frame skip it
// assumes the skip, so it may be one dot early, and the bus then simply asks again.
NESLE_FN u32 ppu_dots_to_nmi_event(const FlatState& s) {
    const u32 line = PPU_DOTS_PER_LINE;
    const u32 set = PPU_VBLANK_LINE * line + 1;
    const u32 clear = PPU_PRERENDER_LINE * line + 1;
    const u32 frame = PPU_LINES_PER_FRAME * line;
    u32 pos = (u32)s.ppu_scanline * line + s.ppu_dot;
    if (pos < set) return set - pos;
    if (pos < clear) return clear - pos;
    return frame - 1 - pos + set;
}

// Whether fewer than 8 sprites are in range of the current line at the current sprite height
// (nes-core: `self.in_range[self.scanline].count_ones() < 8` after `build_in_range`), cached in
// `Nes::in_range_key` for one line: asked at most a few times a line by `$2002` polls.
NESLE_FN bool ppu_in_range_fewer_than_8(Nes& n) {
    const FlatState& s = n.st;
    u16 line = s.ppu_scanline;
    u16 key = (u16)(line | ((s.ppu_ctrl & CTRL_SPRITE_16) ? 0x100 : 0));
    if (n.in_range_key != key) {
        u32 height = (s.ppu_ctrl & CTRL_SPRITE_16) ? 16 : 8;
        u32 c = 0;
        if (ppu_line_has_sprites(n, line))
            for (u32 k = 0; k < 64 && c < 8; k++) c += (u32)((i32)line - (i32)s.ppu_oam[k * 4]) < height;
        n.in_range_key = key;
        n.in_range_lt8 = c < 8;
    }
    return n.in_range_lt8;
}

// Ppu::eval_cannot_fill: mid-evaluation (dots 65-255, the scan not done), whether the rest of
// the scan cannot fill secondary OAM, so the overflow flag cannot rise on this line. With no
// sprite being copied, each pair still to come reads a Y byte, of sprites `eval_n..64` in order
// as an aligned scan does (after an odd dot the pair's byte is already in `eval_buffer`; after
// an even one OAMADDR must point at sprite `eval_n`), and secondary OAM fills only if enough of
// them are in range.
NESLE_FN bool ppu_eval_cannot_fill(Nes& n) {
    const FlatState& s = n.st;
    if (s.ppu_eval_m != 0 || s.ppu_eval_in_range || s.ppu_eval_sec_addr >= 32) return false;
    u32 need = (32u - s.ppu_eval_sec_addr) / 4;
    u32 found = 0, next = s.ppu_eval_n;
    if (s.ppu_dot & 1) {
        found = ppu_sprite_in_range(s, s.ppu_eval_buffer);
        next += 1;
    } else if (s.ppu_oam_addr != (u8)(s.ppu_eval_n << 2)) {
        return false;
    }
    if (!ppu_line_has_sprites(n, s.ppu_scanline)) return found < need;
    for (u32 k = next; k < 64; k++) {
        found += ppu_sprite_in_range(s, s.ppu_oam[k * 4]);
        if (found >= need) return false;
    }
    return found < need;
}

// Dots from now to the first dot on which sprite 0 may hit (both layers shown, the flag clear),
// for `ppu_dots_to_status_change`; `next` is its distance to the next line's dot 0, and ~0 means
// no hit before vertical blank. Sprite 0 may hit on this line from pixel `spr_x[0]` (dot
// `spr_x[0] + 1`) when unit 0 holds it, its row has an opaque pixel and its last pixel is still
// to come; in closed form (`ppu_hit_pixel`) when the tiles under it are still to be fetched. On
// the lines after this one, in closed form from OAM while this line's evaluation has not begun
// from an OAMADDR other than 0 (each horizontal blank clears it, so the later lines' evaluations
// start at sprite 0); else from the next line's dot 1.
NESLE_DEV u32 ppu_dots_to_hit(Nes& n, u32 next) {
    const FlatState& s = n.st;
    u32 line = s.ppu_scanline, d = s.ppu_dot;
    if (line >= 240) return next + 1;  // the pre-render line
    u32 sx = s.ppu_spr_x[0];
    if (d < 257 && d < sx + 8 && s.ppu_spr_zero && (s.ppu_spr_lo[0] | s.ppu_spr_hi[0]) != 0 && sx < 255) {
        u32 j_v = 2 + (d >> 3);
        if (((sx + s.ppu_x) >> 3) < j_v) return (sx + 1 > d + 1 ? sx + 1 : d + 1) - d;
        u32 x = ppu_hit_pixel(n, s.ppu_v, j_v, s.ppu_spr_lo[0] | s.ppu_spr_hi[0], sx);
        if (x < 256) return x + 1 - d;
    }
    if (d > 64 || s.ppu_oam_addr != 0) return next + 1;
    // Lines from..=to show sprite 0 (evaluated in range on the line before each).
    u32 y = s.ppu_oam[0], h = (s.ppu_ctrl & CTRL_SPRITE_16) ? 16 : 8;
    u32 from = y + 1 > line + 1 ? y + 1 : line + 1, to = y + h < 239 ? y + h : 239;
    if (from > to) return ~0u;
    // Far ahead: no hit before line `from` (asked again nearer).
    if (from - line > 32) return (from - line) * PPU_DOTS_PER_LINE - d + 1;
    // `v`'s vertical part on line `from`: a Y step at dot 256 of each line before it, this one's
    // included; its horizontal part from `t` (dot 257 of the line before).
    u16 v = s.ppu_v, h_t = s.ppu_t & 0x041f;
    for (u32 l = line; l < from; l++) v = ppu_v_increment_y(v);
    for (u32 l = from; l <= to; l++) {
        u32 x = ppu_hit_pixel(n, (u16)((v & ~0x041f) | h_t), 0, ppu_sprite0_row_opaque(n, l), s.ppu_oam[3]);
        if (x < 256) return (l - line) * PPU_DOTS_PER_LINE - d + x + 1;
        v = ppu_v_increment_y(v);
    }
    return ~0u;
}

// Whether no line after this visible one up to line `last` can raise the overflow flag: fewer than
// 8 sprites in range of any of them, and their evaluations starting at OAMADDR 0 (this line's
// horizontal blank clears it, unless it is over). Counts the sprites in range of any line of
// the span, a bound on each line's count.
NESLE_DEV bool ppu_no_overflow_through(Nes& n, u32 last) {
    const FlatState& s = n.st;
    u32 line = s.ppu_scanline;
    if (line >= 240 || (s.ppu_dot >= 320 && s.ppu_oam_addr != 0)) return false;
    if (last > 239) last = 239;
    if (last <= line) return true;
    // Sprite k is in range of a line of line+1..=last when its Y lies in line+2-h..=last.
    i32 low = (i32)line + 2 - ((s.ppu_ctrl & CTRL_SPRITE_16) ? 16 : 8);
    u32 count = 0;
    for (u64 m = ppu_oam_visible(n); m != 0; m &= m - 1) {
        i32 y = s.ppu_oam[nes_ctz64(m) * 4];
        count += y >= low && y <= (i32)last;
    }
    return count < 8;
}

// Ppu::dots_to_status_change: dots from now until the first dot on which `$2002`'s bits 5-7
// may change by themselves; never late, possibly early. Before it, a `$2002` read returns the
// same value whether the PPU has caught up or not, and its side effects (VBL clear, `w`, the I/O
// latch) touch nothing the rendering reads, so `bus_read_mem` answers it without running the
// owed dots (nes-core perf-notes #28). Bounds, the nearest wins:
// * VBL set/clear, and the clear of hit and overflow at 261/1: `ppu_dots_to_nmi_event`, less
//   one (a read on the dot before VBL, 241/0, suppresses it: `ppu_cpu_read` must see it);
// * sprite 0 hit (both layers shown, flag clear): this line from pixel `spr_x[0]` (dot
//   `spr_x[0] + 1`) when unit 0 holds sprite 0, its row here has an opaque pixel and its last
//   pixel (dot `spr_x[0] + 8`) is still to come, else the next line's dot 1;
// * sprite overflow (flag clear): dots 65-256 of a visible line, unless this line's evaluation
//   is done or cannot fill secondary OAM (aligned OAMADDR and fewer than 8 sprites in range;
//   or, under way, too few of the sprites still to read in range: `ppu_eval_cannot_fill`);
//   else the next line's dot 65.
// Register writes that change any of this ($2000/$2001/$2003/$2004, OAM DMA) catch the PPU up
// first, so the bound holds until the next catch-up. Out of line: asked only by `$2002` reads
// and the poll fast-forward, and kept out of `bus_read`'s registers.
NESLE_DEV u32 ppu_dots_to_status_change(Nes& n) {
    const FlatState& s = n.st;
    u32 dist = ppu_dots_to_nmi_event(s) - 1;
    // Lines 240-260 change nothing before 261/1; rendering off: no evaluation or hit until a
    // `$2001` write.
    if (!ppu_rendering(s) || (s.ppu_scanline >= 240 && s.ppu_scanline != PPU_PRERENDER_LINE)) return dist;
    u32 d = s.ppu_dot;
    // next_line(dot2) = `next + dot2`: dot `dot2` of the next line (the pre-render line may
    // skip its last dot).
    u32 next = PPU_DOTS_PER_LINE - d - (s.ppu_scanline == PPU_PRERENDER_LINE ? 1 : 0);
    const u8 both = MASK_BG | MASK_SPRITE;
    if ((s.ppu_status & STATUS_SPRITE0) == 0 && (s.ppu_mask & both) == both) {
        u32 hit = ppu_dots_to_hit(n, next);
        if (hit < dist) dist = hit;
    }
    if ((s.ppu_status & STATUS_OVERFLOW) == 0) {
        bool this_line_done = s.ppu_scanline >= 240 || d >= 256 || (d >= 65 && (s.ppu_eval_done || ppu_eval_cannot_fill(n))) ||
                              (d < 65 && (s.ppu_oam_addr & 3) == 0 && ppu_in_range_fewer_than_8(n));
        u32 overflow = this_line_done ? next + 65 : (65 > d + 1 ? 65 : d + 1) - d;
        if (overflow < dist && this_line_done && ppu_no_overflow_through(n, s.ppu_scanline + (d + dist) / PPU_DOTS_PER_LINE))
            overflow = dist;
        if (overflow < dist) dist = overflow;
    }
    return dist;
}

// Ppu::idle_status_read: whether a `$2002` read now would change nothing (VBL clear, `w` clear,
// the I/O latch already holding the value), and the value it would return: then a loop polling
// it returns the same value, with the same effects, until the status bits change
// (`ppu_dots_to_status_change`). `nes_skip_status_poll` relies on this.
NESLE_FN bool ppu_idle_status_read(const FlatState& s, u8& value) {
    value = (u8)((s.ppu_status & 0xe0) | (s.ppu_io_latch & 0x1f));
    return (s.ppu_status & STATUS_VBLANK) == 0 && !s.ppu_w && s.ppu_io_latch == value;
}

NESLE_FN void ppu_increment_v_after_access(Nes& n) {
    FlatState& s = n.st;
    if (ppu_rendering(s) && ppu_on_render_line(s)) {
        ppu_increment_x(s);
        ppu_increment_y(s);
    } else {
        u16 step = (s.ppu_ctrl & CTRL_INC32) ? 32 : 1;
        s.ppu_v = (u16)((s.ppu_v + step) & 0x7fff);
        cart_ppu_addr(n, s.ppu_v & 0x3fff, s.ppu_dot_clock);
    }
}

NESLE_FN u8 ppu_read_oam_data(const FlatState& s) {
    if (ppu_rendering(s) && s.ppu_scanline < 240) {
        u16 d = s.ppu_dot;
        if (d >= 1 && d <= 64) return 0xff;
        if (d <= 256) return s.ppu_eval_buffer;
        if (d <= 320) {
            u16 step = (d - 257) & 7;
            if (step > 3) step = 3;
            return s.ppu_sec_oam[((d - 257) >> 3) * 4 + step];
        }
        return s.ppu_sec_oam[0];
    }
    return s.ppu_oam[s.ppu_oam_addr];
}

NESLE_FN void ppu_write_oam_data(FlatState& s, u8 v) {
    if (ppu_rendering(s) && ppu_on_render_line(s)) {
        s.ppu_oam_addr += 4;  // write dropped; the shared counter still moves
    } else {
        if ((s.ppu_oam_addr & 3) == 2) v &= PPU_OAM_ATTR_BITS;
        s.ppu_oam[s.ppu_oam_addr] = v;
        s.ppu_oam_addr += 1;
    }
}

// A CPU read of $2000-$3FFF.
NESLE_DEV u8 ppu_cpu_read(Nes& n, u16 addr) {
    FlatState& s = n.st;
#ifdef NESLE_PPU_LOG
    ppu_log(n, PPU_EVENT_READ, addr, 0, 0);
#endif
    u8 value;
    switch (addr & 7) {
        case 2:
            value = (u8)((s.ppu_status & 0xe0) | (s.ppu_io_latch & 0x1f));
            if (s.ppu_scanline == PPU_VBLANK_LINE && s.ppu_dot == 0) s.ppu_suppress_vbl = 1;
            s.ppu_status &= (u8)~STATUS_VBLANK;
            s.ppu_w = 0;
            break;
        case 4: value = ppu_read_oam_data(s); break;
        case 7: {
            u16 a = s.ppu_v & 0x3fff;
            if (a >= 0x3f00) {
                s.ppu_read_buffer = cart_ppu_read(n, a & 0x2fff, s.ppu_dot_clock);
                value = (u8)((ppu_palette_read(s, a) & 0x3f) | (s.ppu_io_latch & 0xc0));
            } else {
                u8 old = s.ppu_read_buffer;
                s.ppu_read_buffer = cart_ppu_read(n, a, s.ppu_dot_clock);
                value = old;
            }
            ppu_increment_v_after_access(n);
            if (n.line_log) lines_log_vram(n);
            break;
        }
        default: value = s.ppu_io_latch; break;
    }
    s.ppu_io_latch = value;
    return value;
}

// A CPU write of $2000-$3FFF.
NESLE_DEV void ppu_cpu_write(Nes& n, u16 addr, u8 v) {
    FlatState& s = n.st;
#ifdef NESLE_PPU_LOG
    ppu_log(n, PPU_EVENT_WRITE, addr, v, 0);
#endif
    s.ppu_io_latch = v;
    switch (addr & 7) {
        case 0:
            if (!s.ppu_warming_up) {
                s.ppu_ctrl = v;
                s.ppu_t = (u16)((s.ppu_t & ~0x0c00) | ((v & 3) << 10));
            }
            break;
        case 1:
            if (!s.ppu_warming_up) s.ppu_mask = v;
            break;
        case 2: break;
        case 3: s.ppu_oam_addr = v; break;
        case 4:
            ppu_oam_caches_stale(n);  // any write, OAM DMA included
            ppu_write_oam_data(s, v);
            break;
        case 5:
            if (!s.ppu_warming_up) {
                if (!s.ppu_w) {
                    s.ppu_t = (u16)((s.ppu_t & ~0x001f) | (v >> 3));
                    s.ppu_x = v & 7;
                } else {
                    s.ppu_t = (u16)((s.ppu_t & 0x0c1f) | ((v & 7) << 12) | ((v & 0xf8) << 2));
                }
                s.ppu_w = !s.ppu_w;
            }
            break;
        case 6:
            if (!s.ppu_warming_up) {
                if (!s.ppu_w) {
                    s.ppu_t = (u16)((s.ppu_t & 0x00ff) | ((v & 0x3f) << 8));
                } else {
                    s.ppu_t = (u16)((s.ppu_t & 0x7f00) | v);
                    s.ppu_v = s.ppu_t;
                    // While rendering, the PPU's own fetches own the address bus.
                    if (!(ppu_rendering(s) && ppu_on_render_line(s))) cart_ppu_addr(n, s.ppu_v & 0x3fff, s.ppu_dot_clock);
                }
                s.ppu_w = !s.ppu_w;
            }
            break;
        default: {
            u16 a = s.ppu_v & 0x3fff;
            if (a >= 0x3f00) {
                if (n.line_log) lines_log_palette(n, a, v);
                ppu_palette_write(s, a, v);
                cart_ppu_addr(n, a, s.ppu_dot_clock);
            } else {
                cart_ppu_write(n, a, v, s.ppu_dot_clock);
            }
            ppu_increment_v_after_access(n);
            break;
        }
    }
    if (n.line_log) lines_log_write(n, addr);
}

// 256 CPU writes of `$2004` from `src` (an OAM DMA from RAM) while the PPU stands outside the
// render lines, at once: what ppu_cpu_write(n, 0x2004, src[i]) does for i = 0..255 (the caches
// invalidated, the latch left with the last byte, each attribute byte masked, OAMADDR back where
// it started), a word at a time when OAMADDR is a multiple of 4 (kernel-notes #131). `src` is
// 4-byte aligned.
NESLE_DEV void ppu_oam_dma_writes(Nes& n, const u8* src) {
    FlatState& s = n.st;
#ifdef NESLE_PPU_LOG
    for (u32 i = 0; i < 256; i++) ppu_log(n, PPU_EVENT_WRITE, 0x2004, src[i], 0);
#endif
    ppu_oam_caches_stale(n);
    s.ppu_io_latch = src[255];
    u8 a = s.ppu_oam_addr;
    if ((a & 3) == 0) {
        // Byte 2 of each sprite's word is its attributes.
        const u32* w = (const u32*)src;
        u32* oam = ppu_words(s.ppu_oam);
        for (u32 j = 0; j < 64; j++) oam[((a >> 2) + j) & 63] = w[j] & (0xff00ffffu | PPU_OAM_ATTR_BITS << 16);
    } else {
        for (u32 i = 0; i < 256; i++) {
            u8 at = (u8)(a + i);
            s.ppu_oam[at] = (at & 3) == 2 ? (u8)(src[i] & PPU_OAM_ATTR_BITS) : src[i];
        }
    }
    if (n.line_log) lines_log_write(n, 0x2004);  // the same for each of the 256: once
}

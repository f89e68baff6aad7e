// The 2C02 dot by dot (nes-core ppu/render.rs `render_dot` and its parts, ppu.rs `Ppu::tick`):
// the reference each batch path of ppu_batches.cuh equals, and what `ppu_run` falls back to for
// the dots none of them covers. A part of ppu.cuh; include ppu.cuh.
#pragma once
#include "ppu_state.cuh"

// --- render.rs ---

NESLE_FN u16 ppu_bg_pattern_addr(const FlatState& s) {
    u16 table = (s.ppu_ctrl & CTRL_BG_TABLE) ? 0x1000 : 0;
    return (u16)(table | ((u16)s.ppu_nt_latch << 4) | ((s.ppu_v >> 12) & 7));
}

NESLE_FN void ppu_shift_bg(FlatState& s) {
    s.ppu_bg_lo <<= 1;
    s.ppu_bg_hi <<= 1;
    s.ppu_at_lo <<= 1;
    s.ppu_at_hi <<= 1;
}

NESLE_FN void ppu_reload_bg(FlatState& s) {
    s.ppu_bg_lo = (u16)((s.ppu_bg_lo & 0xff00) | s.ppu_pat_lo_latch);
    s.ppu_bg_hi = (u16)((s.ppu_bg_hi & 0xff00) | s.ppu_pat_hi_latch);
    s.ppu_at_lo = (u16)((s.ppu_at_lo & 0xff00) | ((s.ppu_at_latch & 1) ? 0xff : 0));
    s.ppu_at_hi = (u16)((s.ppu_at_hi & 0xff00) | ((s.ppu_at_latch & 2) ? 0xff : 0));
}

// The fetch of dot `d` (1-256, 321-336): on odd dots a read, the nametable byte (1), the
// attribute (3), the pattern's low (5) or high (7) plane; on dots 8k, coarse X. One copy of
// `cart_ppu_read` for the four reads, not one each (kernel-notes #102).
NESLE_FN void ppu_bg_fetch(Nes& n, u16 d) {
    FlatState& s = n.st;
    u32 phase = d & 7;
    if (phase == 0) {
        ppu_increment_x(s);
        return;
    }
    if ((phase & 1) == 0) return;
    if (phase == 1 && d >= 9) ppu_reload_bg(s);
    u16 v = s.ppu_v;
    u16 addr = phase == 1   ? (u16)(0x2000 | (v & 0x0fff))
               : phase == 3 ? (u16)(0x23c0 | (v & 0x0c00) | ((v >> 4) & 0x38) | ((v >> 2) & 0x07))
                            : (u16)(ppu_bg_pattern_addr(s) + (phase == 7 ? 8 : 0));
    u8 byte = cart_ppu_read(n, addr, s.ppu_dot_clock);
    switch (phase) {
        case 1: s.ppu_nt_latch = byte; break;
        case 3: s.ppu_at_latch = (byte >> (((v >> 4) & 4) | (v & 2))) & 3; break;
        case 5: s.ppu_pat_lo_latch = byte; break;
        default: s.ppu_pat_hi_latch = byte; break;
    }
}

NESLE_FN bool ppu_sprite_in_range(const FlatState& s, u8 y) {
    i32 height = (s.ppu_ctrl & CTRL_SPRITE_16) ? 16 : 8;
    i32 row = (i32)s.ppu_scanline - (i32)y;
    return row >= 0 && row < height;
}

// The even-dot half of sprite evaluation (with the hardware's diagonal overflow scan).
NESLE_FN void ppu_sprite_eval_write(FlatState& s) {
    if (s.ppu_eval_done) {
        s.ppu_eval_n = (s.ppu_eval_n + 1) & 63;
        if (s.ppu_eval_sec_addr >= 32) s.ppu_eval_buffer = s.ppu_sec_oam[s.ppu_eval_sec_addr & 31];
        return;
    }
    if (!s.ppu_eval_in_range && ppu_sprite_in_range(s, s.ppu_eval_buffer)) s.ppu_eval_in_range = 1;
    if (s.ppu_eval_sec_addr < 32) {
        s.ppu_sec_oam[s.ppu_eval_sec_addr] = s.ppu_eval_buffer;
        if (s.ppu_eval_in_range) {
            s.ppu_eval_m += 1;
            s.ppu_eval_sec_addr += 1;
            if (s.ppu_eval_n == 0) s.ppu_eval_sprite0 = 1;
            if ((s.ppu_eval_sec_addr & 3) == 0) {
                s.ppu_eval_in_range = 0;
                s.ppu_eval_m = 0;
                s.ppu_eval_n = (s.ppu_eval_n + 1) & 63;
                if (s.ppu_eval_n == 0) s.ppu_eval_done = 1;
            }
        } else {
            s.ppu_eval_n = (s.ppu_eval_n + 1) & 63;
            if (s.ppu_eval_n == 0) s.ppu_eval_done = 1;
        }
    } else {
        s.ppu_eval_buffer = s.ppu_sec_oam[s.ppu_eval_sec_addr & 31];
        if (s.ppu_eval_in_range) {
            s.ppu_status |= STATUS_OVERFLOW;
            s.ppu_eval_m += 1;
            if (s.ppu_eval_m == 4) {
                s.ppu_eval_n = (s.ppu_eval_n + 1) & 63;
                s.ppu_eval_m = 0;
            }
            if (s.ppu_eval_overflow_count == 0) {
                s.ppu_eval_overflow_count = 3;
            } else {
                s.ppu_eval_overflow_count -= 1;
                if (s.ppu_eval_overflow_count == 0) {
                    s.ppu_eval_done = 1;
                    s.ppu_eval_m = 0;
                }
            }
        } else {
            s.ppu_eval_n = (s.ppu_eval_n + 1) & 63;
            s.ppu_eval_m = (s.ppu_eval_m + 1) & 3;
            if (s.ppu_eval_n == 0) s.ppu_eval_done = 1;
        }
    }
}

// Sprite evaluation, one dot (1-256 of a visible line).
NESLE_FN void ppu_sprite_eval(FlatState& s, u16 d) {
    if (d <= 64) {
        s.ppu_eval_buffer = 0xff;
        if ((d & 1) == 0) s.ppu_sec_oam[(d - 1) >> 1] = 0xff;
        return;
    }
    if (d == 65) {
        s.ppu_eval_sprite0 = 0;
        s.ppu_eval_in_range = 0;
        s.ppu_eval_sec_addr = 0;
        s.ppu_eval_overflow_count = 0;
        s.ppu_eval_done = 0;
        s.ppu_eval_n = s.ppu_oam_addr >> 2;
        s.ppu_eval_m = s.ppu_oam_addr & 3;
    }
    if (d & 1) {
        s.ppu_eval_buffer = s.ppu_oam[s.ppu_oam_addr];
    } else {
        ppu_sprite_eval_write(s);
        s.ppu_oam_addr = (u8)((s.ppu_eval_n << 2) | (s.ppu_eval_m & 3));
        if (d == 256) {
            u8 c = s.ppu_eval_sec_addr >> 2;
            s.ppu_eval_count = c < 8 ? c : 8;
        }
    }
}

// The low plane's address of row `row` (the line being fetched minus the sprite's Y) of a sprite
// under PPUCTRL `ctrl`; empty slots fetch tile $FF (render.rs sprite_pattern_addr).
NESLE_FN u16 ppu_sprite_row_addr(u8 ctrl, u16 row, u8 tile, u8 attr, bool used) {
    if (ctrl & CTRL_SPRITE_16) {
        row &= 15;
        if ((attr & 0x80) && used) row = 15 - row;
        u16 table = (u16)((tile & 1) << 12);
        u16 t = (u16)((tile & 0xfe) | (row >> 3));
        return (u16)(table | (t << 4) | (row & 7));
    }
    row &= 7;
    if ((attr & 0x80) && used) row = 7 - row;
    u16 table = (ctrl & CTRL_SPRITE_TABLE) ? 0x1000 : 0;
    return (u16)(table | ((u16)tile << 4) | row);
}

// The same for a sprite at `y` on the current line.
NESLE_FN u16 ppu_sprite_pattern_addr(const FlatState& s, u8 tile, u8 attr, u8 y, bool used) {
    return ppu_sprite_row_addr(s.ppu_ctrl, (u8)((u8)s.ppu_scanline - y), tile, attr, used);
}

// Sprite pattern fetches, dots 257-320.
NESLE_FN void ppu_sprite_fetch(Nes& n, u16 d) {
    FlatState& s = n.st;
    u16 step = (d - 257) & 7;
    u32 slot = (d - 257) >> 3;
    if (step == 0 || step == 2) {
        (void)cart_ppu_read(n, 0x2000 | (s.ppu_v & 0x0fff), s.ppu_dot_clock);
    } else if (step == 4 || step == 6) {
        u8 y = s.ppu_sec_oam[slot * 4];
        u8 attr = s.ppu_sec_oam[slot * 4 + 2];
        bool used = slot < s.ppu_spr_count;
        u8 tile = used ? s.ppu_sec_oam[slot * 4 + 1] : 0xff;
        u16 addr = ppu_sprite_pattern_addr(s, tile, attr, y, used);
        if (step == 6) addr += 8;
        u8 bits = cart_ppu_read(n, addr, s.ppu_dot_clock);
        if (!used) {
            bits = 0;
        } else if (attr & 0x40) {
            bits = reverse_bits8(bits);
        }
        if (step == 4) {
            s.ppu_spr_lo[slot] = bits;
            s.ppu_spr_attr[slot] = attr;
            s.ppu_spr_x[slot] = s.ppu_sec_oam[slot * 4 + 3];
        } else {
            s.ppu_spr_hi[slot] = bits;
        }
    }
}

NESLE_FN bool ppu_drawing(const Nes& n) { return n.pixels != nullptr && n.st.ppu_render_pixels; }

// Composes pixel `x` of the current line, sets sprite 0 hit, stores the palette index.
NESLE_FN void ppu_draw_pixel(Nes& n, u16 x) {
    FlatState& s = n.st;
    u8 mask = s.ppu_mask;
    bool check_hit = s.ppu_spr_zero && (s.ppu_status & STATUS_SPRITE0) == 0 &&
                     (mask & (MASK_BG | MASK_SPRITE)) == (MASK_BG | MASK_SPRITE);
    bool draw = ppu_drawing(n);
    if (!draw && !check_hit) return;
    bool left = x < 8;
    u8 bg = 0;
    if ((mask & MASK_BG) && (!left || (mask & MASK_BG_LEFT))) {
        u16 bit = 15 - s.ppu_x;
        u16 p = (u16)((((s.ppu_bg_hi >> bit) & 1) << 1) | ((s.ppu_bg_lo >> bit) & 1));
        if (p != 0) {
            u16 a = (u16)((((s.ppu_at_hi >> bit) & 1) << 1) | ((s.ppu_at_lo >> bit) & 1));
            bg = (u8)((a << 2) | p);
        }
    }
    u8 spr = 0;
    bool spr_front = false;
    if ((mask & MASK_SPRITE) && (!left || (mask & MASK_SPRITE_LEFT))) {
        for (u32 i = 0; i < s.ppu_spr_count; i++) {
            u16 off = (u16)(x - s.ppu_spr_x[i]);
            if (off < 8) {
                u16 bit = 7 - off;
                u8 p = (u8)((((s.ppu_spr_hi[i] >> bit) & 1) << 1) | ((s.ppu_spr_lo[i] >> bit) & 1));
                if (p != 0) {
                    if (i == 0 && s.ppu_spr_zero && bg != 0 && x != 255 && (mask & MASK_BG)) {
                        s.ppu_status |= STATUS_SPRITE0;
                    }
                    spr = (u8)(0x10 | ((s.ppu_spr_attr[i] & 3) << 2) | p);
                    spr_front = (s.ppu_spr_attr[i] & 0x20) == 0;
                    break;
                }
            }
        }
    }
    if (!draw) return;
    u8 index = (spr != 0 && (bg == 0 || spr_front)) ? spr : bg;
    n.pixels[(u32)s.ppu_scanline * 256 + x] = ppu_palette_read(s, index);
}

// Rendering off: the backdrop, or the palette entry `v` points at (the palette hack).
// ppu_blank_pixel for the next `k` dots of a visible line with rendering off: the pixels of
// dots dot+1 ..= dot+k up to 256 (render.rs blank_pixels; neither `v` nor the palette can change
// meanwhile).
NESLE_FN void ppu_blank_pixels(Nes& n, u32 k) {
    if (!ppu_drawing(n)) return;
    const FlatState& s = n.st;
    u32 first = s.ppu_dot;
    u32 end = first + k < 256 ? first + k : 256;
    if (first >= end) return;
    u16 index = (s.ppu_v & 0x3f00) == 0x3f00 ? s.ppu_v : 0;
    u8 colour = ppu_palette_read(s, index);
    u8* row = n.pixels + (u32)s.ppu_scanline * 256;
    // Not unrolled: lines with rendering off are rare, and unrolled the loop was 174
    // instructions of `ppu_run`'s code (kernel-notes #92).
    NESLE_NO_UNROLL
    for (u32 x = first; x < end; x++) row[x] = colour;
}

NESLE_FN void ppu_blank_pixel(Nes& n) {
    if (!ppu_drawing(n)) return;
    const FlatState& s = n.st;
    u16 index = (s.ppu_v & 0x3f00) == 0x3f00 ? s.ppu_v : 0;
    n.pixels[(u32)s.ppu_scanline * 256 + (s.ppu_dot - 1)] = ppu_palette_read(s, index);
}

// Dot 257: horizontal scroll bits of v from t, and the sprite units evaluated for the next
// line take over (none show on line 0, so the pre-render line loads none). render.rs
// start_hblank, shared by the per-dot and bulk paths.
NESLE_FN void ppu_start_hblank(FlatState& s, bool visible) {
    s.ppu_v = (u16)((s.ppu_v & ~0x041f) | (s.ppu_t & 0x041f));
    if (visible) {
        s.ppu_spr_count = s.ppu_eval_count;
        s.ppu_spr_zero = s.ppu_eval_sprite0;
    } else {
        s.ppu_spr_count = 0;
        s.ppu_spr_zero = 0;
    }
}

// One dot of a visible line (0-239) or the pre-render line, rendering enabled.
NESLE_FN void ppu_render_dot(Nes& n) {
    FlatState& s = n.st;
    u16 d = s.ppu_dot;
    bool visible = s.ppu_scanline < 240;
    if (d == 0) return;
    if (d <= 256 || (d >= 321 && d <= 336)) {
        // The background's dots, the line's and the next line's first two tiles, in one copy
        // (kernel-notes #102): the shift from dot 2 and from 322.
        if (d >= 2 && d != 321) ppu_shift_bg(s);
        if (d <= 256 && visible) {
            ppu_sprite_eval(s, d);
            ppu_draw_pixel(n, d - 1);
        }
        ppu_bg_fetch(n, d);
        if (d == 256) ppu_increment_y(s);
    } else if (d <= 320) {
        if (d == 257) ppu_start_hblank(s, visible);
        s.ppu_oam_addr = 0;
        if (!visible && d >= 280 && d <= 304) s.ppu_v = (u16)((s.ppu_v & ~0x7be0) | (s.ppu_t & 0x7be0));
        ppu_sprite_fetch(n, d);
    } else {
        if (d == 337) {
            ppu_shift_bg(s);
            ppu_reload_bg(s);
        }
        if (d == 337 || d == 339) (void)cart_ppu_read(n, 0x2000 | (s.ppu_v & 0x0fff), s.ppu_dot_clock);
    }
}

// --- ppu.rs ---

// Advances exactly `k` dots, one at a time (Ppu::tick, k times). Out of line (14 KB of sm_90
// code, run only for the spans `ppu_run` cannot batch): kept out of `ppu_run`'s loop for the
// instruction cache (kernel-notes #19); a run of dots in one call, not a call a dot (#99).
NESLE_DEV void ppu_ticks(Nes& n, u32 k) {
    FlatState& s = n.st;
    for (; k > 0; k--) {
        s.ppu_dot_clock += 1;
        if (s.ppu_dot == 339 && s.ppu_scanline == PPU_PRERENDER_LINE && s.ppu_skip_last_dot) {
            s.ppu_dot = 340;  // odd frames with rendering on skip the last dot of the pre-render line
        }
        s.ppu_dot += 1;
        if (s.ppu_dot == PPU_DOTS_PER_LINE) {
            s.ppu_dot = 0;
            s.ppu_scanline += 1;
            if (s.ppu_scanline == PPU_LINES_PER_FRAME) {
                s.ppu_scanline = 0;
                s.ppu_frame += 1;
                s.ppu_odd_frame = !s.ppu_odd_frame;
            }
        }
        // One inlined copy of `ppu_render_dot` for the visible and pre-render lines, not two: less
        // hot code for protocol B's instruction fetches (kernel-notes #61). The pre-render line's
        // flag changes come first, as before: the dot's rendering reads PPUMASK, which they leave.
        bool visible = s.ppu_scanline < 240;
        if (s.ppu_scanline == PPU_VBLANK_LINE) {
            if (s.ppu_dot == 1) {
                if (!s.ppu_suppress_vbl) s.ppu_status |= STATUS_VBLANK;
                s.ppu_suppress_vbl = 0;
                s.ppu_frame_complete = 1;
            }
            continue;
        }
        if (s.ppu_scanline == PPU_PRERENDER_LINE) {
            switch (s.ppu_dot) {
                // Sprite 0 hit and overflow clear one dot before VBL does (6819 vs 6820 dots).
                case 0:
                    s.ppu_status &= (u8)~(STATUS_SPRITE0 | STATUS_OVERFLOW);
                    if (n.line_log) lines_log_start(n);  // drawing starts: the line renderer's record
                    break;
                case 1:
                    s.ppu_status &= (u8)~STATUS_VBLANK;
                    s.ppu_warming_up = 0;
                    break;
                // The skip decision sees PPUMASK as of dot 338.
                case 338: s.ppu_skip_last_dot = s.ppu_odd_frame && ppu_rendering(s); break;
                default: break;
            }
        } else if (!visible) {
            continue;  // the post-render line and the rest of vertical blank: nothing happens
        }
        if (ppu_rendering(s)) {
            ppu_render_dot(n);
        } else if (visible && s.ppu_dot >= 1 && s.ppu_dot <= 256) {
            ppu_blank_pixel(n);
        }
    }
}

// Advances exactly one dot (the host's dot-by-dot reference for the batch paths, host.cpp).
NESLE_FN void ppu_tick(Nes& n) { ppu_ticks(n, 1); }

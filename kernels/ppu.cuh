// The 2C02 PPU (nes-core ppu.rs + ppu/render.rs), dot by dot, function for function.
//
// The model is nes-core's: a dot-accurate pipeline with the real fetch schedule, so MMC3's A12
// counter, sprite 0 hit and mid-frame register writes land on the same dot as on the CPU side.
// The kernel draws pixels only when the env was given a pixel buffer (`n.pixels`), which the
// step entry point sets for the last frame of a frameskip; everything else (flags, timing,
// fetches, sprite 0 hit) runs identically with or without it, as nes-core's `render_pixels`.
#pragma once
#include "console_types.cuh"
#include "cart.cuh"

#define PPU_DOTS_PER_LINE 341
#define PPU_LINES_PER_FRAME 262
#define PPU_VBLANK_LINE 241
#define PPU_PRERENDER_LINE 261

#define CTRL_INC32 0x04
#define CTRL_SPRITE_TABLE 0x08
#define CTRL_BG_TABLE 0x10
#define CTRL_SPRITE_16 0x20
#define CTRL_NMI 0x80
#define MASK_GREY 0x01
#define MASK_BG_LEFT 0x02
#define MASK_SPRITE_LEFT 0x04
#define MASK_BG 0x08
#define MASK_SPRITE 0x10
#define STATUS_OVERFLOW 0x20
#define STATUS_SPRITE0 0x40
#define STATUS_VBLANK 0x80

NESLE_FN bool ppu_rendering(const FlatState& s) { return (s.ppu_mask & (MASK_BG | MASK_SPRITE)) != 0; }

// NMI output level: VBL flag AND NMI enable; the CPU edge-detects it.
NESLE_FN bool ppu_nmi(const FlatState& s) {
    return (s.ppu_status & STATUS_VBLANK) != 0 && (s.ppu_ctrl & CTRL_NMI) != 0;
}

NESLE_FN bool ppu_on_render_line(const FlatState& s) {
    return s.ppu_scanline < 240 || s.ppu_scanline == PPU_PRERENDER_LINE;
}

NESLE_FN u32 ppu_palette_index(u16 addr) {
    u32 i = addr & 0x1f;
    // $3F10/$14/$18/$1C are the same cells as $3F00/$04/$08/$0C.
    return (i & 0x13) == 0x10 ? (i & 0x0f) : i;
}

NESLE_FN u8 ppu_palette_read(const FlatState& s, u16 addr) {
    u8 c = s.ppu_palette[ppu_palette_index(addr)];
    return (s.ppu_mask & MASK_GREY) ? (u8)(c & 0x30) : c;
}

NESLE_FN void ppu_palette_write(FlatState& s, u16 addr, u8 v) { s.ppu_palette[ppu_palette_index(addr)] = v & 0x3f; }

NESLE_FN void ppu_increment_x(FlatState& s) {
    if ((s.ppu_v & 0x001f) == 31) {
        s.ppu_v = (u16)((s.ppu_v & ~0x001f) ^ 0x0400);
    } else {
        s.ppu_v += 1;
    }
}

NESLE_FN void ppu_increment_y(FlatState& s) {
    if ((s.ppu_v & 0x7000) != 0x7000) {
        s.ppu_v += 0x1000;
    } else {
        s.ppu_v &= (u16)~0x7000;
        u16 y = (s.ppu_v & 0x03e0) >> 5;
        if (y == 29) {
            y = 0;
            s.ppu_v ^= 0x0800;
        } else if (y == 31) {
            y = 0;
        } else {
            y += 1;
        }
        s.ppu_v = (u16)((s.ppu_v & ~0x03e0) | (y << 5));
    }
}

NESLE_FN u8 reverse_bits8(u8 b) {
    b = (u8)(((b & 0xf0) >> 4) | ((b & 0x0f) << 4));
    b = (u8)(((b & 0xcc) >> 2) | ((b & 0x33) << 2));
    b = (u8)(((b & 0xaa) >> 1) | ((b & 0x55) << 1));
    return b;
}

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

NESLE_FN void ppu_bg_fetch(Nes& n, u16 d) {
    FlatState& s = *n.s;
    switch (d & 7) {
        case 1:
            if (d >= 9) ppu_reload_bg(s);
            s.ppu_nt_latch = cart_ppu_read(n, 0x2000 | (s.ppu_v & 0x0fff), s.ppu_dot_clock);
            break;
        case 3: {
            u16 v = s.ppu_v;
            u16 addr = (u16)(0x23c0 | (v & 0x0c00) | ((v >> 4) & 0x38) | ((v >> 2) & 0x07));
            u8 byte = cart_ppu_read(n, addr, s.ppu_dot_clock);
            u16 shift = ((v >> 4) & 4) | (v & 2);
            s.ppu_at_latch = (byte >> shift) & 3;
            break;
        }
        case 5: s.ppu_pat_lo_latch = cart_ppu_read(n, ppu_bg_pattern_addr(s), s.ppu_dot_clock); break;
        case 7: s.ppu_pat_hi_latch = cart_ppu_read(n, ppu_bg_pattern_addr(s) + 8, s.ppu_dot_clock); break;
        case 0: ppu_increment_x(s); break;
        default: break;
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

// Sprite pattern fetches, dots 257-320.
NESLE_FN void ppu_sprite_fetch(Nes& n, u16 d) {
    FlatState& s = *n.s;
    u16 step = (d - 257) & 7;
    u32 slot = (d - 257) >> 3;
    if (step == 0 || step == 2) {
        (void)cart_ppu_read(n, 0x2000 | (s.ppu_v & 0x0fff), s.ppu_dot_clock);
    } else if (step == 4 || step == 6) {
        u8 y = s.ppu_sec_oam[slot * 4];
        u8 attr = s.ppu_sec_oam[slot * 4 + 2];
        bool used = slot < s.ppu_spr_count;
        u8 tile = used ? s.ppu_sec_oam[slot * 4 + 1] : 0xff;
        u16 row = (u8)((u8)s.ppu_scanline - y);
        u16 addr;
        if (s.ppu_ctrl & CTRL_SPRITE_16) {
            row &= 15;
            if ((attr & 0x80) && used) row = 15 - row;
            u16 table = (u16)((tile & 1) << 12);
            u16 t = (u16)((tile & 0xfe) | (row >> 3));
            addr = (u16)(table | (t << 4) | (row & 7));
        } else {
            row &= 7;
            if ((attr & 0x80) && used) row = 7 - row;
            u16 table = (s.ppu_ctrl & CTRL_SPRITE_TABLE) ? 0x1000 : 0;
            addr = (u16)(table | ((u16)tile << 4) | row);
        }
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

NESLE_FN bool ppu_drawing(const Nes& n) { return n.pixels != nullptr && n.s->ppu_render_pixels; }

// Composes pixel `x` of the current line, sets sprite 0 hit, stores the palette index.
NESLE_FN void ppu_draw_pixel(Nes& n, u16 x) {
    FlatState& s = *n.s;
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
NESLE_FN void ppu_blank_pixel(Nes& n) {
    if (!ppu_drawing(n)) return;
    const FlatState& s = *n.s;
    u16 index = (s.ppu_v & 0x3f00) == 0x3f00 ? s.ppu_v : 0;
    n.pixels[(u32)s.ppu_scanline * 256 + (s.ppu_dot - 1)] = ppu_palette_read(s, index);
}

// One dot of a visible line (0-239) or the pre-render line, rendering enabled.
NESLE_FN void ppu_render_dot(Nes& n) {
    FlatState& s = *n.s;
    u16 d = s.ppu_dot;
    bool visible = s.ppu_scanline < 240;
    if (d == 0) return;
    if (d <= 256) {
        if (d >= 2) ppu_shift_bg(s);
        if (visible) {
            ppu_sprite_eval(s, d);
            ppu_draw_pixel(n, d - 1);
        }
        ppu_bg_fetch(n, d);
        if (d == 256) ppu_increment_y(s);
    } else if (d <= 320) {
        if (d == 257) {
            s.ppu_v = (u16)((s.ppu_v & ~0x041f) | (s.ppu_t & 0x041f));
            if (visible) {
                s.ppu_spr_count = s.ppu_eval_count;
                s.ppu_spr_zero = s.ppu_eval_sprite0;
            } else {
                s.ppu_spr_count = 0;
                s.ppu_spr_zero = 0;
            }
        }
        s.ppu_oam_addr = 0;
        if (!visible && d >= 280 && d <= 304) s.ppu_v = (u16)((s.ppu_v & ~0x7be0) | (s.ppu_t & 0x7be0));
        ppu_sprite_fetch(n, d);
    } else if (d <= 336) {
        if (d >= 322) ppu_shift_bg(s);
        ppu_bg_fetch(n, d);
    } else {
        if (d == 337) {
            ppu_shift_bg(s);
            ppu_reload_bg(s);
        }
        if (d == 337 || d == 339) (void)cart_ppu_read(n, 0x2000 | (s.ppu_v & 0x0fff), s.ppu_dot_clock);
    }
}

// --- ppu.rs ---

// Advances exactly one dot.
NESLE_FN void ppu_tick(Nes& n) {
    FlatState& s = *n.s;
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
    if (s.ppu_scanline < 240) {
        if (ppu_rendering(s)) {
            ppu_render_dot(n);
        } else if (s.ppu_dot >= 1 && s.ppu_dot <= 256) {
            ppu_blank_pixel(n);
        }
    } else if (s.ppu_scanline == PPU_VBLANK_LINE) {
        if (s.ppu_dot == 1) {
            if (!s.ppu_suppress_vbl) s.ppu_status |= STATUS_VBLANK;
            s.ppu_suppress_vbl = 0;
            s.ppu_frame_complete = 1;
        }
    } else if (s.ppu_scanline == PPU_PRERENDER_LINE) {
        switch (s.ppu_dot) {
            // Sprite 0 hit and overflow clear one dot before VBL does (6819 vs 6820 dots).
            case 0: s.ppu_status &= (u8)~(STATUS_SPRITE0 | STATUS_OVERFLOW); break;
            case 1:
                s.ppu_status &= (u8)~STATUS_VBLANK;
                s.ppu_warming_up = 0;
                break;
            // The skip decision sees PPUMASK as of dot 338.
            case 338: s.ppu_skip_last_dot = s.ppu_odd_frame && ppu_rendering(s); break;
            default: break;
        }
        if (ppu_rendering(s)) ppu_render_dot(n);
    }
}

// ppu_tick as a call (bus_finish_cycle's third dot); bus_clock inlines its own two copies.
NESLE_DEV void ppu_tick_call(Nes& n) { ppu_tick(n); }

NESLE_FN void ppu_increment_v_after_access(Nes& n) {
    FlatState& s = *n.s;
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
        if ((s.ppu_oam_addr & 3) == 2) v &= 0xe3;
        s.ppu_oam[s.ppu_oam_addr] = v;
        s.ppu_oam_addr += 1;
    }
}

// A CPU read of $2000-$3FFF.
NESLE_DEV u8 ppu_cpu_read(Nes& n, u16 addr) {
    FlatState& s = *n.s;
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
            break;
        }
        default: value = s.ppu_io_latch; break;
    }
    s.ppu_io_latch = value;
    return value;
}

// A CPU write of $2000-$3FFF.
NESLE_DEV void ppu_cpu_write(Nes& n, u16 addr, u8 v) {
    FlatState& s = *n.s;
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
        case 4: ppu_write_oam_data(s, v); break;
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
                    cart_ppu_addr(n, s.ppu_v & 0x3fff, s.ppu_dot_clock);
                }
                s.ppu_w = !s.ppu_w;
            }
            break;
        default: {
            u16 a = s.ppu_v & 0x3fff;
            if (a >= 0x3f00) {
                ppu_palette_write(s, a, v);
                cart_ppu_addr(n, a, s.ppu_dot_clock);
            } else {
                cart_ppu_write(n, a, v, s.ppu_dot_clock);
            }
            ppu_increment_v_after_access(n);
            break;
        }
    }
}

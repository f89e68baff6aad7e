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
// one by one (nes-core pins that with ppu::tests; here the parity test compares every frame).
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

// The PPU's byte arrays of the state, which the layout keeps 4-byte aligned
// (crates/nes-core/src/flat.rs), as 32-bit words (in OAM and secondary OAM, one sprite's 4
// bytes): one local memory access instead of 4.
static_assert(__builtin_offsetof(FlatState, ppu_oam) % 4 == 0 && __builtin_offsetof(FlatState, ppu_sec_oam) % 4 == 0 &&
                  __builtin_offsetof(FlatState, ppu_spr_attr) % 4 == 0 && __builtin_offsetof(FlatState, ppu_spr_x) % 4 == 0,
              "the PPU's word-accessed arrays are 4-byte aligned");
NESLE_FN u32* ppu_words(u8* bytes) { return (u32*)bytes; }

// The bits of an OAM attribute byte (byte 2 of each sprite) that OAM keeps: 2-4 read back as 0.
#define PPU_OAM_ATTR_BITS 0xe3u

// OAM changed (a `$2004` write, an OAM DMA) or was loaded: the caches derived from it are stale
// (Ppu::write_oam_data's and Ppu::load's `in_range_valid = false`).
NESLE_FN void ppu_oam_caches_stale(Nes& n) {
    n.in_range_key = 0xffff;
    n.oam_visible_valid = false;
    n.sprite_lines_valid = false;
}

// Byte `k` (a constant) of each of the 4 words at `w`, packed low first: three byte permutes on
// the GPU (PRMT), shifts on the host.
NESLE_FN u32 ppu_gather_byte(const u32* w, u32 k) {
#ifdef __CUDA_ARCH__
    u32 sel = k | (k + 4) << 4;
    return __byte_perm(__byte_perm(w[0], w[1], sel), __byte_perm(w[2], w[3], sel), 0x5410);
#else
    u32 b = 8 * k;
    return (w[0] >> b & 0xff) | (w[1] >> b & 0xff) << 8 | (w[2] >> b & 0xff) << 16 | (w[3] >> b & 0xff) << 24;
#endif
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

// The line renderer's log (console_types.cuh LineLog, kernels/lines.cuh). Out of line, and only
// reached on the drawn frame (`n.line_log` set): the register functions carry just a null test.
NESLE_DEV void lines_log_start(Nes& n) {
    const FlatState& s = n.st;
    LineLog* l = n.line_log;
    l->start = s.ppu_dot_clock;
    l->t = s.ppu_t;
    l->v = s.ppu_v;
    l->x = s.ppu_x;
    l->ctrl = s.ppu_ctrl;
    l->mask = s.ppu_mask;
    l->odd = s.ppu_odd_frame;
    l->count = 0;
    l->flags |= LINES_STARTED;
}

// Appends an event with the registers as they are now; null when the log is full (the frame is
// then drawn again).
NESLE_DEV LineEvent* lines_log_event(Nes& n, u8 kind) {
    const FlatState& s = n.st;
    LineLog* l = n.line_log;
    if (l->count == LINE_EVENTS) {
        l->flags |= LINES_REDRAW;
        return nullptr;
    }
    LineEvent& e = l->events[l->count++];
    e.dot = (u32)(s.ppu_dot_clock - l->start);
    e.t = s.ppu_t;
    e.v = s.ppu_v;
    e.x = s.ppu_x;
    e.ctrl = s.ppu_ctrl;
    e.mask = s.ppu_mask;
    e.kind = kind;
    return &e;
}

// A `$2007` access moved `v` on (after it): while rendering, not modelled; else an event when
// `v` was or is in the palette (the colour a frame with rendering off shows), folded into the
// palette write it followed.
NESLE_DEV void lines_log_vram(Nes& n) {
    const FlatState& s = n.st;
    LineLog* l = n.line_log;
    if (!(l->flags & LINES_STARTED)) return;
    if (ppu_rendering(s)) {
        l->flags |= LINES_REDRAW;
        return;
    }
    u16 before = (u16)((s.ppu_v - ((s.ppu_ctrl & CTRL_INC32) ? 32 : 1)) & 0x7fff);
    if ((before & 0x3f00) != 0x3f00 && (s.ppu_v & 0x3f00) != 0x3f00) return;
    u64 dot = s.ppu_dot_clock - l->start;
    if (l->count > 0) {
        LineEvent& last = l->events[l->count - 1];
        if (last.kind == LINE_EV_PALETTE && last.dot == dot) {
            last.v = s.ppu_v;
            return;
        }
    }
    lines_log_event(n, LINE_EV_V);
}

// A CPU write of `value` to palette address `a`, before it lands.
NESLE_DEV void lines_log_palette(Nes& n, u16 a, u8 value) {
    LineLog* l = n.line_log;
    if (!(l->flags & LINES_STARTED)) return;
    u32 i = ppu_palette_index(a);
    u8 old = n.st.ppu_palette[i];
    LineEvent* e = lines_log_event(n, LINE_EV_PALETTE);
    if (!e) return;
    e->index = (u8)i;
    e->old = old;
    e->value = value & 0x3f;
}

// After a CPU write to PPU register `addr` took effect.
NESLE_DEV void lines_log_write(Nes& n, u16 addr) {
    LineLog* l = n.line_log;
    if (!(l->flags & LINES_STARTED)) return;  // before drawing starts: the state at the start covers it
    const FlatState& s = n.st;
    u32 r = addr & 7;
    if (r == 2) return;
    if (r == 7) {
        lines_log_vram(n);
        return;
    }
    if (r == 3 || r == 4) {
        l->flags |= LINES_REDRAW;
        return;
    }
    lines_log_event(n, LINE_EV_REGS);
    // The second `$2006` write moved `v`: not modelled while rendering.
    if (r == 6 && !s.ppu_w && ppu_rendering(s)) l->flags |= LINES_REDRAW;
}

// `v` one tile right (the coarse X increment after each background tile).
NESLE_FN u16 ppu_v_increment_x(u16 v) { return (v & 0x001f) == 31 ? (u16)((v & ~0x001f) ^ 0x0400) : (u16)(v + 1); }

// `v` one line down (the fine Y increment at dot 256).
NESLE_FN u16 ppu_v_increment_y(u16 v) {
    if ((v & 0x7000) != 0x7000) return (u16)(v + 0x1000);
    v &= (u16)~0x7000;
    u16 y = (v & 0x03e0) >> 5;
    if (y == 29) {
        y = 0;
        v ^= 0x0800;
    } else if (y == 31) {
        y = 0;
    } else {
        y += 1;
    }
    return (u16)((v & ~0x03e0) | (y << 5));
}

NESLE_FN void ppu_increment_x(FlatState& s) { s.ppu_v = ppu_v_increment_x(s.ppu_v); }

NESLE_FN void ppu_increment_y(FlatState& s) { s.ppu_v = ppu_v_increment_y(s.ppu_v); }

NESLE_FN u8 reverse_bits8(u8 b) {
#if defined(__CUDA_ARCH__)
    return (u8)(__brev((u32)b) >> 24);  // the GPU reverses a word in one instruction (kernel-notes #155)
#else
    b = (u8)(((b & 0xf0) >> 4) | ((b & 0x0f) << 4));
    b = (u8)(((b & 0xcc) >> 2) | ((b & 0x33) << 2));
    b = (u8)(((b & 0xaa) >> 1) | ((b & 0x55) << 1));
    return b;
#endif
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

// --- render.rs: the batch paths of ppu_run ---
//
// Each does the work of a run of `ppu_render_dot` calls at once, reordered only where nothing
// another part reads in between is touched (nes-core's reasoning, in render.rs, applies line
// for line). Fetches keep their own dot's clock so MMC3's A12 filter sees the same times.

// The PPU's rendering fetch of a nametable byte (cart.rs Cart::ppu_read_nt): the caller knows
// it is not CHR, so no range test.
NESLE_FN u8 ppu_read_nt(Nes& n, u16 addr, u64 dot) {
    cart_ppu_addr(n, addr, dot);
    return n.st.cart_ciram[cart_nametable_offset(n.st, addr)];
}

// The PPU's rendering fetch of a pattern byte (cart.rs Cart::ppu_read_chr).
NESLE_FN u8 ppu_read_chr(Nes& n, u16 addr, u64 dot) {
    cart_ppu_addr(n, addr, dot);
    const FlatState& s = n.st;
    u32 off = cart_chr_offset(s, addr);
    return s.cart_chr_is_ram ? s.cart_chr_ram[off] : n.chr[off];
}

// Whether any pixel of this line can still matter: output is on, or sprite 0 may hit
// (render.rs line_draws).
NESLE_FN bool ppu_line_draws(const Nes& n) {
    const FlatState& s = n.st;
    return ppu_drawing(n) || (s.ppu_spr_zero && (s.ppu_status & STATUS_SPRITE0) == 0 &&
                              (s.ppu_mask & (MASK_BG | MASK_SPRITE)) == (MASK_BG | MASK_SPRITE));
}

// 8 bytes at `p`: one store on the GPU, where tiles start at multiples of 8 in an aligned
// allocation; any alignment on the host, whose picture buffers are plain byte vectors.
NESLE_FN void nes_store8(u8* p, u64 v) {
#ifdef __CUDA_ARCH__
    *(u64*)p = v;
#else
    __builtin_memcpy(p, &v, 8);
#endif
}

// Four pixels of a tile of one attribute, pixel i in byte i: bit 3-i of the nibbles `lo` and
// `hi` (the pattern bits) picks one of the colours c0-c3, each repeated in every byte. The
// multiply moves bit 3-i to bit 8i+3; its four partial products never overlap.
NESLE_FN u32 ppu_four_pixels(u32 lo, u32 hi, u32 c0, u32 c1, u32 c2, u32 c3) {
    u32 mlo = ((((lo & 0xf) * 0x08040201u) >> 3) & 0x01010101u) * 0xffu;
    u32 mhi = ((((hi & 0xf) * 0x08040201u) >> 3) & 0x01010101u) * 0xffu;
    return (c0 & ~(mlo | mhi)) | (c1 & mlo & ~mhi) | (c2 & ~mlo & mhi) | (c3 & mlo & mhi);
}

// The 8 pixels x0 ..= x0+7 of a tile (render.rs draw_tile), from the shifters as they are after
// the tile's first dot (shift, then reload): pixel x0+i is bit 15 - fine_x - i of each register,
// since the 7 shifts still to come move that bit to 15 - fine_x. The same composition as
// `ppu_draw_pixel`. Tiles start at multiples of 8, so only the first is in the left column.
// nes-core looks sprites up in a 256-entry line buffer; here the sprite units that overlap the
// tile's columns are found once per tile (usually none) and only those are scanned per pixel,
// in unit order: the same first-opaque-unit-wins result, without 256 bytes of local memory per
// thread. The 8 bytes go out as one store (this once raised the registers from 114 to 138 on
// sm_90; the kernel's register cap now bounds that, kernel-notes #25, #28). Out of line: drawn only with
// pixel output or near sprite 0, so `ppu_render_tile` stays small (kernel-notes #19).
NESLE_DEV void ppu_draw_tile(Nes& n, u16 x0) {
    FlatState& s = n.st;
    u8 mask = s.ppu_mask;
    bool left = x0 == 0;
    bool show_bg = (mask & MASK_BG) && (!left || (mask & MASK_BG_LEFT));
    bool show_spr = (mask & MASK_SPRITE) && (!left || (mask & MASK_SPRITE_LEFT));
    u32 near = 0;
    if (show_spr) {
        for (u32 i = 0; i < s.ppu_spr_count; i++) {
            u32 sx = s.ppu_spr_x[i];
            if (sx <= (u32)x0 + 7 && (u32)x0 <= sx + 7) near |= 1u << i;
        }
    }
    bool draw = ppu_drawing(n);
    if (!draw && !near) return;  // no output, and no sprite here to hit
    // One byte of each shifter: bit 7-i is pixel x0+i.
    u32 sh = 8 - s.ppu_x;
    u32 plo = show_bg ? (u32)s.ppu_bg_lo >> sh : 0;
    u32 phi = show_bg ? (u32)s.ppu_bg_hi >> sh : 0;
    u32 alo = (u32)s.ppu_at_lo >> sh;
    u32 ahi = (u32)s.ppu_at_hi >> sh;
    // Entries 0-15 and sprite entries 0x11-0x1F (never a multiple of 4) need no mirroring.
    u8 grey = (mask & MASK_GREY) ? 0x30 : 0x3f;
    u8* row = draw ? n.pixels + (u32)s.ppu_scanline * 256 + x0 : nullptr;
    u64 out = 0;  // the 8 pixels, pixel i in byte i, stored at once (kernel-notes #28)
    u32 alo8 = alo & 0xff, ahi8 = ahi & 0xff;
    if (!near && (alo8 == 0 || alo8 == 0xff) && (ahi8 == 0 || ahi8 == 0xff)) {
        // No sprite here and one attribute under all 8 pixels (fine X 0, or two tiles alike):
        // each pixel is one of the tile's 4 colours.
        // Four pixels a 32-bit word (kernel-notes #62), each colour in every byte.
        u32 base = ((ahi8 & 1) << 3) | ((alo8 & 1) << 2);
        u32 c0 = (s.ppu_palette[0] & grey) * 0x01010101u, c1 = (s.ppu_palette[base | 1] & grey) * 0x01010101u;
        u32 c2 = (s.ppu_palette[base | 2] & grey) * 0x01010101u, c3 = (s.ppu_palette[base | 3] & grey) * 0x01010101u;
        out = ppu_four_pixels(plo >> 4, phi >> 4, c0, c1, c2, c3) | (u64)ppu_four_pixels(plo, phi, c0, c1, c2, c3) << 32;
        nes_store8(row, out);
        return;
    }
    for (u32 i = 0; i < 8; i++) {
        u32 bit = 7 - i;
        u32 p = (((phi >> bit) & 1) << 1) | ((plo >> bit) & 1);
        u32 bg = p == 0 ? 0 : ((((ahi >> bit) & 1) << 3) | (((alo >> bit) & 1) << 2) | p);
        u32 index = bg;
        if (near) {
            u16 x = (u16)(x0 + i);
            for (u32 j = 0; j < s.ppu_spr_count; j++) {
                if (!((near >> j) & 1)) continue;
                u16 off = (u16)(x - s.ppu_spr_x[j]);
                if (off >= 8) continue;
                u16 b = 7 - off;
                u32 sp = (((s.ppu_spr_hi[j] >> b) & 1) << 1) | ((s.ppu_spr_lo[j] >> b) & 1);
                if (sp != 0) {
                    if (j == 0 && s.ppu_spr_zero && bg != 0 && x != 255) s.ppu_status |= STATUS_SPRITE0;
                    u8 attr = s.ppu_spr_attr[j];
                    if (bg == 0 || (attr & 0x20) == 0) index = 0x10 | ((attr & 3) << 2) | sp;
                    break;
                }
            }
        }
        out |= (u64)(s.ppu_palette[index] & grey) << (8 * i);
    }
    if (draw) nes_store8(row, out);
}

NESLE_DEV void ppu_sprite_eval_span(Nes& nes, u16 from, u16 to);  // below, with the line map

// Dots dot+1 ..= dot+8 at once, the 8 dots of one background tile (dot+1 is 1 on a visible
// line, 9, 17, ..., 249, or the prefetch tiles 321 and 329) on a rendering line (render.rs
// render_tile; `eval` is its EVAL parameter: false when `ppu_sprite_eval_line` already did the
// line's sprite evaluation). The four fetches only fill latches, which nothing reads before
// the next tile's reload, so they run after the pixels, each with its own dot's clock.
NESLE_DEV void ppu_render_tile(Nes& n, bool eval) {
    FlatState& s = n.st;
    u16 d0 = s.ppu_dot + 1;
    u64 clock = s.ppu_dot_clock + 1;
    bool visible = s.ppu_scanline < 240 && d0 < 256;
    // Dot d0: shift (not on 1 or 321), then the fetch step reloads (not on 1). Pixel d0-1 sits
    // between the two but reads neither's bits, so the 8 pixels are composed after them.
    if (d0 != 321 && d0 != 1) ppu_shift_bg(s);
    if (d0 != 1) ppu_reload_bg(s);
    // Without pixel output a pixel matters only for sprite 0 hit, which needs sprite unit 0
    // under one of this tile's pixels d0-1 ..= d0+6.
    bool draw = visible && (ppu_drawing(n) || (s.ppu_spr_zero && (s.ppu_status & STATUS_SPRITE0) == 0 &&
                                               (s.ppu_mask & (MASK_BG | MASK_SPRITE)) == (MASK_BG | MASK_SPRITE) &&
                                               (u16)s.ppu_spr_x[0] <= d0 + 6 && d0 - 1 <= (u16)s.ppu_spr_x[0] + 7));
    if (draw) ppu_draw_tile(n, d0 - 1);
    // Fetches of dots d0, d0+2, d0+4, d0+6 (v and the nametable latch hold until d0+7), as
    // ppu_read_nt/ppu_read_chr do them, each mapping looked up once (kernel-notes #29): both
    // nametable reads lie in one table, both pattern reads in one 1 KiB CHR bank, and only
    // MMC3 watches the addresses (A12), in the same order and on the same dots.
    u16 v = s.ppu_v;
    bool watch = s.cart_kind == MAPPER_MMC3;
    u16 nt_addr = (u16)(0x2000 | (v & 0x0fff));
    u16 at_addr = (u16)(0x23c0 | (v & 0x0c00) | ((v >> 4) & 0x38) | ((v >> 2) & 0x07));
    const u8* table = s.cart_ciram + (cart_nametable_offset(s, nt_addr) & ~0x3ffu);
    if (watch) mmc3_watch_a12(s, nt_addr, clock);
    s.ppu_nt_latch = table[nt_addr & 0x3ff];
    if (watch) mmc3_watch_a12(s, at_addr, clock + 2);
    s.ppu_at_latch = (table[at_addr & 0x3ff] >> (((v >> 4) & 4) | (v & 2))) & 3;
    u16 pat = ppu_bg_pattern_addr(s);
    const u8* bank = (s.cart_chr_is_ram ? s.cart_chr_ram : n.chr) + cart_chr_offset(s, pat);
    if (watch) mmc3_watch_a12(s, pat, clock + 4);
    s.ppu_pat_lo_latch = bank[0];
    if (watch) mmc3_watch_a12(s, pat + 8, clock + 6);
    s.ppu_pat_hi_latch = bank[8];
    s.ppu_bg_lo <<= 7;
    s.ppu_bg_hi <<= 7;
    s.ppu_at_lo <<= 7;
    s.ppu_at_hi <<= 7;
    // Sprite evaluation touches nothing the pixels or fetches use: it runs on its own.
    if (visible && eval) {
        if (d0 + 7 <= 64) {
            // Secondary OAM clear: $FF into the buffer every dot, 4 bytes per tile.
            s.ppu_eval_buffer = 0xff;
            ppu_words(s.ppu_sec_oam)[d0 >> 3] = 0xffffffffu;
        } else {
            ppu_sprite_eval_span(n, d0, d0 + 7);
        }
    }
    ppu_increment_x(s);
    if (d0 + 7 == 256) ppu_increment_y(s);
    s.ppu_dot = d0 + 7;
    s.ppu_dot_clock = clock + 7;
}

// Dots dot+1 ..= dot+8 at once, one sprite-fetch slot (dot+1 is 257, 265, ..., 313): the same
// work as 8 `ppu_render_dot`s (render.rs sprite_slot).
NESLE_DEV void ppu_sprite_slot(Nes& n) {
    FlatState& s = n.st;
    u16 d0 = s.ppu_dot + 1;
    u64 clock = s.ppu_dot_clock + 1;
    bool visible = s.ppu_scanline < 240;
    if (d0 == 257) ppu_start_hblank(s, visible);
    s.ppu_oam_addr = 0;
    // Pre-render line: vertical scroll copied from t on every dot 280-304 (idempotent).
    bool vcopy = !visible && d0 + 7 >= 280 && d0 <= 304;
    if (vcopy && d0 >= 280) s.ppu_v = (u16)((s.ppu_v & ~0x7be0) | (s.ppu_t & 0x7be0));
    // Garbage nametable fetches at +0 and +2 (they matter only to A12-watching boards).
    (void)ppu_read_nt(n, 0x2000 | (s.ppu_v & 0x0fff), clock);
    (void)ppu_read_nt(n, 0x2000 | (s.ppu_v & 0x0fff), clock + 2);
    u32 slot = (d0 - 257) >> 3;
    u8 y = s.ppu_sec_oam[slot * 4];
    u8 attr = s.ppu_sec_oam[slot * 4 + 2];
    bool used = slot < s.ppu_spr_count;
    u8 tile = used ? s.ppu_sec_oam[slot * 4 + 1] : 0xff;
    u16 addr = ppu_sprite_pattern_addr(s, tile, attr, y, used);
    u8 lo = ppu_read_chr(n, addr, clock + 4);
    u8 hi = ppu_read_chr(n, addr + 8, clock + 6);
    if (!used) {
        lo = 0;
        hi = 0;
    } else if (attr & 0x40) {
        lo = reverse_bits8(lo);
        hi = reverse_bits8(hi);
    }
    s.ppu_spr_lo[slot] = lo;
    s.ppu_spr_attr[slot] = attr;
    s.ppu_spr_x[slot] = s.ppu_sec_oam[slot * 4 + 3];
    s.ppu_spr_hi[slot] = hi;
    if (vcopy) s.ppu_v = (u16)((s.ppu_v & ~0x7be0) | (s.ppu_t & 0x7be0));
    s.ppu_dot = d0 + 7;
    s.ppu_dot_clock = clock + 7;
}

// Rebuilds `Nes::oam_visible`. Out of line: once a frame at most (after OAM DMA), and its loop,
// unrolled 64 times, was 400 instructions in each of the sprite evaluation's hot functions
// (kernel-notes #92).
NESLE_DEV void ppu_rebuild_oam_visible(Nes& n) {
    u64 m = 0;
    for (u32 k = 0; k < 64; k++) m |= (u64)(n.st.ppu_oam[k * 4] < 240) << k;
    n.oam_visible = m;
    n.oam_visible_valid = true;
}

// `Nes::oam_visible`, rebuilt if an OAM write made it stale.
NESLE_FN u64 ppu_oam_visible(Nes& n) {
    if (!n.oam_visible_valid) ppu_rebuild_oam_visible(n);
    return n.oam_visible;
}

// Whether some sprite is in range of visible line `line` (`Nes::sprite_lines`), rebuilt from the
// visible sprites when OAM or the sprite height changed: sprite k covers lines Y ..= Y + h - 1.
NESLE_DEV void ppu_build_sprite_lines(Nes& n, bool tall) {
    u32 h = tall ? 16 : 8;
    for (u32 i = 0; i < 8; i++) n.sprite_lines[i] = 0;
    for (u64 m = ppu_oam_visible(n); m != 0; m &= m - 1) {
        u32 y = n.st.ppu_oam[nes_ctz64(m) * 4];
        u64 run = ((1ull << h) - 1) << (y & 31);  // up to 47 bits: two words at most
        n.sprite_lines[y >> 5] |= (u32)run;
        if ((y >> 5) < 7) n.sprite_lines[(y >> 5) + 1] |= (u32)(run >> 32);
    }
    n.sprite_lines_tall = tall;
    n.sprite_lines_valid = true;
}

NESLE_FN bool ppu_line_has_sprites(Nes& n, u32 line) {
    bool tall = (n.st.ppu_ctrl & CTRL_SPRITE_16) != 0;
    if (!n.sprite_lines_valid || n.sprite_lines_tall != tall) ppu_build_sprite_lines(n, tall);
    return (n.sprite_lines[line >> 5] >> (line & 31)) & 1;
}

// Sprite evaluation of dots 65-256 of a visible line at once (render.rs sprite_eval_line): the
// same state machine as 192 `ppu_sprite_eval` calls, one iteration per read/write pair, in
// locals. Runs of out-of-range sprites (room left, nothing in range, byte index 0) are scanned
// in a tight loop; once the scan is done the remaining pairs are computed in closed form.
// Called for visible lines only (0-239): a sprite with Y >= 240 is never in range there.
NESLE_DEV void ppu_sprite_eval_line(Nes& nes) {
    FlatState& s = nes.st;
    i32 height = (s.ppu_ctrl & CTRL_SPRITE_16) ? 16 : 8;
    i32 line = s.ppu_scanline;
    u8 oam_addr = s.ppu_oam_addr;
    if (oam_addr == 0) {
        // The usual case, the scan from sprite 0 with fewer than 8 sprites in range, in closed
        // form: each in-range sprite's 4 bytes go to the next slot; the runs between them leave
        // only the Y bytes the copies overwrite, and the run after the last the Y of sprite 63
        // (unless it is the last copied) in the next slot. That takes 64 + 3c of the 96 pairs;
        // the rest read Y at n = 0, 1, ... with secondary OAM not full (kernel-notes #41).
        u64 in_range = 0;
        u32 c = 0;
        u64 cand = ppu_line_has_sprites(nes, line) ? ppu_oam_visible(nes) : 0;
        for (; cand != 0 && c < 8; cand &= cand - 1) {
            u32 b = nes_ctz64(cand);
            if ((u32)(line - (i32)s.ppu_oam[b * 4]) < (u32)height) {
                in_range |= 1ull << b;
                c += 1;
            }
        }
        if (c < 8) {
            u32 j = 0;
            for (u64 m = in_range; m != 0; m &= m - 1, j++) {
                u32 b = nes_ctz64(m);
                ppu_words(s.ppu_sec_oam)[j] = ppu_words(s.ppu_oam)[b];
            }
            if (!(in_range >> 63)) s.ppu_sec_oam[4 * c] = s.ppu_oam[63 * 4];
            u32 r = 32 - 3 * c;  // pairs left once the scan wraps
            s.ppu_oam_addr = (u8)(r << 2);
            s.ppu_eval_buffer = s.ppu_oam[(r - 1) * 4];
            s.ppu_eval_sec_addr = (u8)(4 * c);
            s.ppu_eval_n = (u8)r;
            s.ppu_eval_m = 0;
            s.ppu_eval_in_range = 0;
            s.ppu_eval_done = 1;
            s.ppu_eval_overflow_count = 0;
            s.ppu_eval_sprite0 = (u8)(in_range & 1);
            s.ppu_eval_count = (u8)c;
            return;
        }
    }
    u8 n = oam_addr >> 2;
    u8 m = oam_addr & 3;
    u8 sec_addr = 0;
    bool in_range = false;
    bool done = false;
    u8 overflow_count = 0;
    bool sprite0 = false;
    bool overflow = false;
    u8 buffer = 0;
    u32 pair = 0;
    while (pair < 96) {
        if (done) {
            // Each remaining pair: read OAM at (n, m), then n += 1.
            u32 r = 96 - pair;
            u8 last_n = (u8)((n + r - 1) & 63);
            n = (u8)((n + r) & 63);
            buffer = sec_addr >= 32 ? s.ppu_sec_oam[sec_addr & 31] : s.ppu_oam[(last_n << 2) | (m & 3)];
            oam_addr = (u8)((n << 2) | (m & 3));
            break;
        }
        if (!in_range && sec_addr < 32 && m == 0) {
            // A run of out-of-range sprites: each pair reads Y at (n, 0), writes it to
            // secondary OAM (without advancing), and moves n on.
            u32 start = n;
            u32 limit = start + (96 - pair);
            if (limit > 64) limit = 64;
            // The first in-range sprite in [start, limit), found among the visible ones (none
            // on a line no sprite covers).
            u64 cand = ppu_line_has_sprites(nes, line) ? ppu_oam_visible(nes) & (~0ull << start) : 0;
            if (limit < 64) cand &= (1ull << limit) - 1;
            u32 k = limit;
            for (; cand != 0; cand &= cand - 1) {
                u32 b = nes_ctz64(cand);
                if ((u32)(line - (i32)s.ppu_oam[b * 4]) < (u32)height) {
                    k = b;
                    break;
                }
            }
            if (k > start) {
                buffer = s.ppu_oam[(k - 1) * 4];
                s.ppu_sec_oam[sec_addr] = buffer;
                pair += k - start;
                n = (u8)(k & 63);
                done = n == 0;
                oam_addr = (u8)(n << 2);
                continue;
            }
        }
        buffer = s.ppu_oam[oam_addr];
        if (!in_range) {
            i32 row = line - (i32)buffer;
            in_range = row >= 0 && row < height;
        }
        if (sec_addr < 32) {
            s.ppu_sec_oam[sec_addr] = buffer;
            if (in_range) {
                m += 1;
                sec_addr += 1;
                if (n == 0) sprite0 = true;
                if ((sec_addr & 3) == 0) {
                    in_range = false;
                    m = 0;
                    n = (n + 1) & 63;
                    done = n == 0;
                }
            } else {
                n = (n + 1) & 63;
                done = n == 0;
            }
        } else {
            buffer = s.ppu_sec_oam[sec_addr & 31];
            if (in_range) {
                overflow = true;
                m += 1;
                if (m == 4) {
                    n = (n + 1) & 63;
                    m = 0;
                }
                if (overflow_count == 0) {
                    overflow_count = 3;
                } else {
                    overflow_count -= 1;
                    if (overflow_count == 0) {
                        done = true;
                        m = 0;
                    }
                }
            } else {
                n = (n + 1) & 63;
                m = (m + 1) & 3;
                done = n == 0;
            }
        }
        oam_addr = (u8)((n << 2) | (m & 3));
        pair += 1;
    }
    s.ppu_oam_addr = oam_addr;
    s.ppu_eval_buffer = buffer;
    s.ppu_eval_sec_addr = sec_addr;
    s.ppu_eval_n = n;
    s.ppu_eval_m = m;
    s.ppu_eval_in_range = in_range;
    s.ppu_eval_done = done;
    s.ppu_eval_overflow_count = overflow_count;
    s.ppu_eval_sprite0 = sprite0;
    u8 c = sec_addr >> 2;
    s.ppu_eval_count = c < 8 ? c : 8;
    if (overflow) s.ppu_status |= STATUS_OVERFLOW;
}

// Dots `from` ..= `to` (within 65-255) of a visible line's sprite evaluation, exactly as
// `ppu_sprite_eval` dot by dot (kernel-notes #37): where a pair (an odd dot's read, the even
// dot's write) starts with no sprite being copied, the scan reading sprite `eval_n`'s Y through
// OAMADDR and secondary OAM not full, the pairs up to the next sprite in range of the line (or
// the wrap to sprite 0, or the span's end) only move on: each read Y goes to the same
// secondary OAM byte, so the last one is what stays, in `eval_buffer` too.
NESLE_DEV void ppu_sprite_eval_span(Nes& nes, u16 from, u16 to) {
    FlatState& s = nes.st;
    u16 d = from;
    u16 last = to < 255 ? to : 255;  // dot 256 also counts the line's sprites
    while (d <= to) {
        u32 n = s.ppu_eval_n;
        if ((d & 1) && d > 65 && d < last && s.ppu_eval_done &&
            s.ppu_oam_addr == (u8)((n << 2) | (s.ppu_eval_m & 3))) {
            // The scan is done: each pair re-reads OAM at (n, m) and moves n on (its write half
            // reads secondary OAM once full), so the span's pairs run at once (#42).
            u32 k = (u32)(last - d + 1) / 2;
            u32 m = s.ppu_eval_m & 3;
            s.ppu_eval_buffer = s.ppu_eval_sec_addr >= 32 ? s.ppu_sec_oam[s.ppu_eval_sec_addr & 31]
                                                          : s.ppu_oam[(((n + k - 1) & 63) << 2) | m];
            n = (n + k) & 63;
            s.ppu_eval_n = (u8)n;
            s.ppu_oam_addr = (u8)((n << 2) | m);
            d = (u16)(d + 2 * k);
            continue;
        }
        if ((d & 1) && d > 65 && d < to && !s.ppu_eval_done && s.ppu_eval_m == 0 && !s.ppu_eval_in_range &&
            s.ppu_eval_sec_addr < 32 && s.ppu_oam_addr == (u8)(n << 2)) {
            u32 pairs = (u32)(to - d + 1) / 2;
            if (pairs > 64 - n) pairs = 64 - n;
            u32 q = pairs;
            if (ppu_line_has_sprites(nes, s.ppu_scanline)) {
                u64 cand = ppu_oam_visible(nes) & (~0ull << n);
                if (n + pairs < 64) cand &= (1ull << (n + pairs)) - 1;
                for (; cand != 0; cand &= cand - 1) {
                    u32 b = nes_ctz64(cand);
                    if (ppu_sprite_in_range(s, s.ppu_oam[b * 4])) {
                        q = b - n;
                        break;
                    }
                }
            }
            if (q > 0) {
                s.ppu_eval_buffer = s.ppu_oam[(n + q - 1) * 4];
                s.ppu_sec_oam[s.ppu_eval_sec_addr] = s.ppu_eval_buffer;
                n = (n + q) & 63;
                s.ppu_eval_n = (u8)n;
                s.ppu_eval_done = n == 0;
                s.ppu_oam_addr = (u8)(n << 2);
                d = (u16)(d + 2 * q);
                continue;
            }
        }
        ppu_sprite_eval(s, d);
        d += 1;
    }
}

// How many tiles from the tile boundary `d` (< 232) of a visible line without pixel output a
// batch of `count` dots can run as `ppu_skip_tiles` (kernel-notes #36): tiles whose pixels
// cannot matter, i.e. all of them, or those before sprite 0's when its hit can still come
// (`ppu_line_draws`: then the tiles from `spr_x[0]` - 6 to `spr_x[0]` + 8 are drawn), each
// followed in the batch by three real tiles. A tile's pixels read what the two tiles before it
// fetched, and after three real tiles the shifters and latches hold nothing a skipped tile
// left (the last three tiles of a line always run, as in `ppu_line_fast`), so the state is
// exact wherever the batch ends.
NESLE_FN u32 ppu_quiet_tiles(const Nes& n, u16 d, u32 count) {
    u32 end = 232;
    if (ppu_line_draws(n)) {
        u32 first = 8 * (n.st.ppu_spr_x[0] >> 3) + 1;  // the first tile start under sprite 0
        if (d < first + 8) end = first >= d + 17u ? first - 17 : d;
    }
    if (end <= d) return 0;
    u32 k = (end - d) / 8, fit = (count - 24) / 8;
    return k < fit ? k : fit;
}

// Dots dot+1 ..= dot+8k of a visible rendering line, k tiles from a tile boundary, none of
// whose pixels matters and no board watching the PPU bus (`ppu_quiet_tiles`): of each tile
// only coarse X and its share of the sprite evaluation remain (the secondary OAM clear on dots
// 1-64, the evaluation from 65 in one `ppu_sprite_eval_span`, as `ppu_render_tile` with `eval`
// does them); its fetches and shifts, which three later tiles overwrite, are left out.
NESLE_DEV void ppu_skip_tiles(Nes& n, u32 k) {
    FlatState& s = n.st;
    u16 d0 = s.ppu_dot + 1, end = (u16)(s.ppu_dot + 8 * k);
    for (; d0 + 7 <= 64 && d0 < end; d0 += 8) {
        s.ppu_eval_buffer = 0xff;
        ppu_words(s.ppu_sec_oam)[d0 >> 3] = 0xffffffffu;
    }
    if (d0 < end) ppu_sprite_eval_span(n, d0, end);
    // One coarse X increment a tile (fewer than 32: at most one wrap).
    u16 x = (u16)((s.ppu_v & 0x1f) + k);
    if (x >= 32) s.ppu_v ^= 0x0400;
    s.ppu_v = (u16)((s.ppu_v & ~0x1f) | (x & 0x1f));
    s.ppu_dot = (u16)(s.ppu_dot + 8 * k);
    s.ppu_dot_clock += 8 * k;
}

// Dots dot+1 ..= 256 of a rendering line (from a tile boundary at dots 0-64 of a visible line,
// or dot 8 of the pre-render line) when no pixel of it matters and no board watches the PPU bus (render.rs
// line_fast). The tiles before 233 then leave nothing behind but coarse X: every byte they fetch
// is overwritten in the latches by tile 249 and shifted out of the 16-bit shifters by dot 256,
// so only the last three tiles run.
NESLE_DEV void ppu_line_fast(Nes& n) {
    FlatState& s = n.st;
    if (s.ppu_scanline < 240) {
        // Dots 1-64 fill secondary OAM with $FF (the part before `dot` already did), then
        // 65-256 evaluate the next line.
        for (u32 i = 0; i < 8; i++) ppu_words(s.ppu_sec_oam)[i] = 0xffffffffu;
        s.ppu_eval_buffer = 0xff;
        ppu_sprite_eval_line(n);
    }
    u16 skipped = 232 - s.ppu_dot;
    // One coarse X increment per skipped tile (fewer than 32: at most one wrap).
    u16 x = (u16)((s.ppu_v & 0x1f) + skipped / 8);
    if (x >= 32) s.ppu_v ^= 0x0400;
    s.ppu_v = (u16)((s.ppu_v & ~0x1f) | (x & 0x1f));
    s.ppu_dot = 232;
    s.ppu_dot_clock += skipped;
    for (u32 i = 0; i < 3; i++) ppu_render_tile(n, false);
}

// Dots 337-340 of a visible line and dot 0 of the next (5 dots): the last shift and reload,
// two garbage nametable fetches, the move to the next line (never a new frame: only the
// pre-render line ends one). render.rs line_tail.
NESLE_FN void ppu_line_tail(Nes& n) {
    FlatState& s = n.st;
    u64 clock = s.ppu_dot_clock + 1;
    ppu_shift_bg(s);
    ppu_reload_bg(s);
    (void)ppu_read_nt(n, 0x2000 | (s.ppu_v & 0x0fff), clock);
    (void)ppu_read_nt(n, 0x2000 | (s.ppu_v & 0x0fff), clock + 2);
    s.ppu_dot = 0;
    s.ppu_scanline += 1;
    s.ppu_dot_clock = clock + 4;
}

// What a horizontal blank does besides its reads (render.rs hblank_units): coarse X and the
// horizontal nametable from `t` (dot 257), the next line's sprite units from secondary OAM (all
// 8 positions and attributes; the pattern bytes are ppu_hblank_fast's), OAMADDR cleared.
NESLE_FN void ppu_hblank_units(FlatState& s) {
    s.ppu_v = (u16)((s.ppu_v & ~0x041f) | (s.ppu_t & 0x041f));
    s.ppu_spr_count = s.ppu_eval_count;
    s.ppu_spr_zero = s.ppu_eval_sprite0;
    s.ppu_oam_addr = 0;
    // Slot k of secondary OAM is one word (Y, tile, attributes, X); byte k of the sprite units'
    // words is slot k's: bytes 2 and 3 of each slot, gathered by byte permutes.
    const u32* sec = ppu_words(s.ppu_sec_oam);
    for (u32 h = 0; h < 2; h++) {
        const u32* w = sec + 4 * h;
        ppu_words(s.ppu_spr_attr)[h] = ppu_gather_byte(w, 2);
        ppu_words(s.ppu_spr_x)[h] = ppu_gather_byte(w, 3);
    }
}

// Dots 257-340 of a visible line and dot 0 of the next, at once, when no board watches the PPU
// bus (render.rs hblank_fast): the garbage nametable fetches and the pattern fetches of empty
// sprite slots (tile $FF, loaded as transparent) then have no effect, so only used slots read.
NESLE_DEV void ppu_hblank_fast(Nes& n) {
    FlatState& s = n.st;
    ppu_hblank_units(s);
    for (u32 slot = 0; slot < 8; slot++) {
        u8 y = s.ppu_sec_oam[slot * 4];
        u8 attr = s.ppu_sec_oam[slot * 4 + 2];
        if (slot < s.ppu_spr_count) {
            u8 tile = s.ppu_sec_oam[slot * 4 + 1];
            u16 addr = ppu_sprite_pattern_addr(s, tile, attr, y, true);
            u64 clock = s.ppu_dot_clock + 5 + slot * 8;
            u8 lo = ppu_read_chr(n, addr, clock);
            u8 hi = ppu_read_chr(n, addr + 8, clock + 2);
            if (attr & 0x40) {
                lo = reverse_bits8(lo);
                hi = reverse_bits8(hi);
            }
            s.ppu_spr_lo[slot] = lo;
            s.ppu_spr_hi[slot] = hi;
        } else {
            s.ppu_spr_lo[slot] = 0;
            s.ppu_spr_hi[slot] = 0;
        }
    }
    s.ppu_dot = 320;
    s.ppu_dot_clock += 64;
    ppu_render_tile(n, false);
    ppu_render_tile(n, false);
    ppu_line_tail(n);
}

// Dots dot+1 ..= 340 of a visible line and dot 0 of the next (from a tile boundary at dots
// 0-64) when no pixel of it matters and no board watches the PPU bus (render.rs line_whole,
// nes-core perf-notes #38). None of the line's 32 tiles survives the prefetch at 321/329 (the
// latches refilled, both shifter bytes reloaded by dot 337) and dot 257 copies coarse X and the
// horizontal nametable from `t`: only the Y step at 256 and the sprite evaluation remain. When
// the next line draws nothing either and ends in the same batch (`next_ends_here`), the
// prefetch and the sprite patterns are dead too (that line, or the last of a chain of such
// lines, overwrites every latch, shifter and sprite unit before anything reads them). Line 239
// always prefetches: what it leaves stays until the pre-render line.
NESLE_DEV void ppu_line_whole(Nes& n, bool next_ends_here) {
    FlatState& s = n.st;
    for (u32 i = 0; i < 8; i++) ppu_words(s.ppu_sec_oam)[i] = 0xffffffffu;
    s.ppu_eval_buffer = 0xff;
    ppu_sprite_eval_line(n);
    ppu_increment_y(s);
    s.ppu_dot_clock += 256 - s.ppu_dot;
    s.ppu_dot = 256;
    bool next_draws = ppu_drawing(n) || (s.ppu_eval_sprite0 && (s.ppu_status & STATUS_SPRITE0) == 0 &&
                                         (s.ppu_mask & (MASK_BG | MASK_SPRITE)) == (MASK_BG | MASK_SPRITE));
    if (!next_ends_here || next_draws || s.ppu_scanline >= 239) {
        ppu_hblank_fast(n);
        return;
    }
    // ppu_hblank_fast without its reads: the sprite units' positions and flags, which the next
    // line's `$2002` bounds and `ppu_line_draws` read, and the prefetch's two X steps.
    ppu_hblank_units(s);
    ppu_increment_x(s);
    ppu_increment_x(s);
    s.ppu_dot = 0;
    s.ppu_scanline += 1;
    s.ppu_dot_clock += 85;
}

// After a whole line with no sprite in range, scanned from OAMADDR 0 (`ppu_line_whole`, the
// line now at dot 0): the lines after it with no sprite in range either, each followed by
// another line in the same batch and before line 239 (which always prefetches), would each
// take ppu_line_whole's cheap path and leave everything as this one did (secondary OAM, the
// evaluation's state, the sprite units, OAMADDR 0: none depends on the line) but `v`, the line
// and the clock. Nothing draws on them (sprite 0 is not in range, and the caller checked
// `ppu_line_draws`: no picture). Runs them at once (kernel-notes #128) and returns the dots
// they took.
NESLE_DEV u32 ppu_skip_empty_lines(Nes& n, u32 count) {
    FlatState& s = n.st;
    u32 line = s.ppu_scanline;
    if (line >= 239 || ppu_line_has_sprites(n, line)) return 0;
    // The first line at or after `line` with a sprite in range (the cache is valid: just
    // asked), or 239.
    u32 w = line >> 5, bits = n.sprite_lines[w] & (~0u << (line & 31));
    while (bits == 0 && w < 7) bits = n.sprite_lines[++w];
    u32 stop = bits != 0 ? 32 * w + nes_ctz64((u64)bits) : 256;
    if (stop > 239) stop = 239;
    // Each line must have a whole line after it in the batch: 341 (k + 1) dots at most.
    u32 k = stop - line, fit = count / 341;
    if (k + 1 > fit) k = fit > 0 ? fit - 1 : 0;
    if (k == 0) return 0;
    u16 v = s.ppu_v, h = s.ppu_t & 0x041f;
    for (u32 i = 0; i < k; i++)
        v = ppu_v_increment_x(ppu_v_increment_x((u16)((ppu_v_increment_y(v) & ~0x041f) | h)));
    s.ppu_v = v;
    s.ppu_scanline = (u16)(line + k);
    s.ppu_dot_clock += 341ull * k;
    return 341 * k;
}

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
        u32 first = (u32)s.ppu_spr_x[0] + 1;
        u32 hit = (s.ppu_scanline < 240 && d < 257 && d < first + 7 && s.ppu_spr_zero &&
                   (s.ppu_spr_lo[0] | s.ppu_spr_hi[0]) != 0 && first <= 255)
                      ? (first > d + 1 ? first : d + 1) - d
                      : next + 1;
        if (hit < dist) dist = hit;
    }
    if ((s.ppu_status & STATUS_OVERFLOW) == 0) {
        bool this_line_done = s.ppu_scanline >= 240 || d >= 256 || (d >= 65 && (s.ppu_eval_done || ppu_eval_cannot_fill(n))) ||
                              (d < 65 && (s.ppu_oam_addr & 3) == 0 && ppu_in_range_fewer_than_8(n));
        u32 overflow = this_line_done ? next + 65 : (65 > d + 1 ? 65 : d + 1) - d;
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

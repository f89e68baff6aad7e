// The 2C02's state as the rest of the PPU sees it: register bits, predicates on the state, OAM
// and palette access, `v`'s scroll steps, and the line renderer's log of register writes
// (kernels/lines.cuh). A part of ppu.cuh, which says how the parts fit; include ppu.cuh.
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

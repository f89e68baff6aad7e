// Drawing a frame after it ran, line by line, a warp an env (kernel-notes #74).
//
// Drawn while it runs, a frame's pixels come out of the PPU's dot pipeline one env a thread, and
// the threads of a warp take different branches on nearly every tile (4.5 threads an
// instruction on an H200, against 16 for the same frame undrawn). Here the step kernel runs the
// drawn frame as an undrawn one and keeps a LineLog (console_types.cuh): the scroll and control
// registers where drawing starts and after each `$2000`, `$2001`, `$2005` or `$2006` write from
// there on. Nothing else the picture depends on (nametables, palette, OAM, CHR, banks, mirroring) may
// change while the frame is drawn, or the log says so, so the state after the frame holds them
// as they were. `nesle_draw_lines` then gives each env a warp: lane l draws pixels 8l-8l+7 of
// every line, all lanes the same code on their own columns.
//
// The background of a line is the strip of tiles the PPU fetches for it (two on the line before,
// at dots 321-336, then 32 on the line), each at `v` one coarse X step on; pixel x shows bit
// x + fine X of the strip, with fine X as of that pixel's dot. `v`'s horizontal bits come from
// `t` at dot 257 of the line before, its vertical bits from `t` at dot 304 of the pre-render
// line, one fine Y step a line after that (ppu_render_dot). A line's sprites are the first 8 in
// OAM in range of the line before (its evaluation), fetched as ppu_sprite_fetch does.
//
// A frame with rendering off all frame shows the backdrop, or the palette entry `v` points at
// (ppu_blank_pixel): drawn from the log's `v` moves and palette writes (lines_blank).
//
// A frame the renderer does not model (`v` moved by the CPU while rendering, an OAM write, a bank
// change, rendering switched on or off while drawn, a frame cut short by a fault, ...) is
// marked LINES_REDRAW and drawn again by `nesle_redraw`, which runs it once more, drawing as it
// runs, from a copy of the state before it. A last check compares `v`, `t` and fine X as this
// model leaves them with the state after the frame: any disagreement redraws too.
//
// Given an output buffer, the warp that drew an env also makes its 84x84 picture (picture.cuh's
// two passes, a warp's share), while the picture is fresh in L2 and, beside the step, on SMs the
// step has left (kernel-notes #168); `nesle_gray84_redrawn` makes those of the redrawn envs.
#pragma once
#include "types.h"
#include "console.cuh"
#include "picture.cuh"

// Where the field at offset `off` of a FlatState lies in a state packed with `packing`
// (nes_convert's layout); `off` must not be in a region the packing drops.
NESLE_FN u32 nes_packed_offset(u32 off, u32 packing) {
    u32 at = off;
    if (off >= NES_OFF_PRG_RAM && !(packing & NES_PACK_CIRAM_HI)) at -= 0x800;
    if (off >= NES_OFF_CHR_RAM && !(packing & NES_PACK_PRG_RAM)) at -= 8192;
    if (off >= NES_OFF_TAIL && !(packing & NES_PACK_CHR_RAM)) at -= 8192;
    return at;
}

#define LINES_FIELD(packed, packing, field) \
    ((packed) + nes_packed_offset((u32)__builtin_offsetof(FlatState, field), (packing)))

// What the pixels are drawn from, in an env's packed state after the frame.
struct LineScene {
    const u8* ciram;    // the nametables
    const u8* chr;      // CHR ROM, or the env's CHR RAM
    const u8* palette;  // 32 bytes
    const u8* oam;      // 256 bytes
    u32 chr_map[8];     // cart_chr_map: CHR offset of each 1 KiB of the pattern tables
    u32 nt_page[4];     // CIRAM offset of each nametable
};

NESLE_FN LineScene lines_scene(const u8* packed, u32 packing, const u8* chr_rom) {
    LineScene c;
    c.ciram = LINES_FIELD(packed, packing, cart_ciram);
    c.chr = *LINES_FIELD(packed, packing, cart_chr_is_ram) ? LINES_FIELD(packed, packing, cart_chr_ram) : chr_rom;
    c.palette = LINES_FIELD(packed, packing, ppu_palette);
    c.oam = LINES_FIELD(packed, packing, ppu_oam);
    const u32* map = (const u32*)LINES_FIELD(packed, packing, cart_chr_map);
    for (u32 i = 0; i < 8; i++) c.chr_map[i] = map[i];
    u8 mirroring = *LINES_FIELD(packed, packing, cart_mirroring);
    for (u32 i = 0; i < 4; i++) c.nt_page[i] = cart_nametable_page(mirroring, i) * 0x400;
    return c;
}

// Where the 1 KiB bank that holds pattern table address `addr` starts in `c.chr`.
NESLE_FN u32 lines_chr_bank(const LineScene& c, u32 addr) { return c.chr_map[(addr >> 10) & 7]; }

// A pattern row's two planes, at `addr` and `addr + 8` (bit 3 of `addr` clear, so both lie in
// the same 1 KiB bank: one bank lookup for the two; kernel-notes #158).
NESLE_FN void lines_chr_row(const LineScene& c, u32 addr, u32& lo, u32& hi) {
    const u8* row = c.chr + lines_chr_bank(c, addr) + (addr & 0x3ff);
    lo = row[0];
    hi = row[8];
}

// The registers the pixels depend on, as of some dot.
struct LineRegs {
    u16 t, v;
    u8 x, ctrl, mask;
};

NESLE_FN LineRegs lines_start_regs(const LineLog& log) { return LineRegs{log.t, log.v, log.x, log.ctrl, log.mask}; }

// Applies the events before dot clock `dot` (relative to the pre-render line's dot 0) from `e` on;
// with `palette` (lines_blank), their palette writes too.
NESLE_FN void lines_apply(const LineLog& log, u32& e, LineRegs& r, u32 dot, u8* palette = nullptr) {
    u32 count = log.count;
    while (e < count && log.events[e].dot < dot) {
        const LineEvent& ev = log.events[e];
        if (palette && ev.kind == LINE_EV_PALETTE) palette[ev.index] = ev.value;
        r = LineRegs{ev.t, ev.v, ev.x, ev.ctrl, ev.mask};
        e++;
    }
}

// Dots of the pre-render line: its last is skipped on odd frames with rendering on (which the
// renderer only draws with rendering on all frame or off all frame).
NESLE_FN u32 lines_prerender_dots(const LineLog& log) {
    return log.odd && (log.mask & (MASK_BG | MASK_SPRITE)) ? 340 : 341;
}

// `v` as line 0's fetches start, split into its vertical bits `vert` and horizontal `hori`: the
// pre-render line copies t's horizontal bits at dot 257 and its vertical bits on dots 280-304
// (the last copy wins). `e` and `r`: the events applied so far and the registers they leave.
NESLE_FN void lines_first_v(const LineLog& log, u32& e, LineRegs& r, u16& vert, u16& hori) {
    e = 0;
    r = lines_start_regs(log);
    lines_apply(log, e, r, 257);
    hori = r.t & 0x041f;
    lines_apply(log, e, r, 304);
    vert = r.t & 0x7be0;
}

// `vert` (v's vertical bits) after the frame's 240 fine Y steps: 240 = 30 x 8, so fine Y ends
// where it began and coarse Y takes 30 steps. From rows 0-29 that is once around to the same
// row, the vertical nametable flipped on the way (29 -> 0); from rows 30 and 31 (past the
// attribute table) it wraps to 0 without a flip and goes on to 28 or 29 (kernel-notes #157).
NESLE_FN u16 lines_vert_after_frame(u16 vert) {
    u32 y = (vert >> 5) & 31;
    return y < 30 ? (u16)(vert ^ 0x0800) : (u16)((vert & ~0x03e0) | ((y - 2) << 5));
}

// The dot of event `e`, or ~0 past the last.
NESLE_FN u32 lines_event_dot(const LineLog& log, u32 e) { return e < log.count ? log.events[e].dot : 0xffffffffu; }

// lines_apply for a caller that holds the next event's dot (`next`, from lines_event_dot): the
// test a compare of registers, the log read only when an event is due (kernel-notes #159).
NESLE_FN void lines_apply_due(const LineLog& log, u32& e, u32& next, LineRegs& r, u32 dot) {
    if (next < dot) {
        lines_apply(log, e, r, dot);
        next = lines_event_dot(log, e);
    }
}

// Whether the renderer can draw this frame: its log complete and nothing in it the renderer does
// not model; then `v`, `t` and fine X at the frame's end as the model has them must be the
// state's. `blank`: rendering off all frame (lines_blank draws it). An env whose console draws
// no pixels (`ppu_render_pixels` off, as a loaded state may have it) is left to nesle_redraw,
// which leaves its picture as it was, as nes-core does.
NESLE_FN bool lines_check(const LineLog& log, const u8* packed, u32 packing, bool& blank) {
    u32 flags = log.flags;
    if (!(flags & LINES_STARTED) || (flags & LINES_REDRAW) || log.count > LINE_EVENTS) return false;
    if (!*LINES_FIELD(packed, packing, ppu_render_pixels)) return false;
    u32 pre = lines_prerender_dots(log);
    u32 drawn_end = pre + 240 * PPU_DOTS_PER_LINE;  // the end of line 239
    u64 end_clock = *(const u64*)LINES_FIELD(packed, packing, ppu_dot_clock);
    if (end_clock < log.start + drawn_end) return false;  // cut short (a fault)
    u16 end_v = *(const u16*)LINES_FIELD(packed, packing, ppu_v);
    u16 end_t = *(const u16*)LINES_FIELD(packed, packing, ppu_t);
    u8 end_x = *LINES_FIELD(packed, packing, ppu_x);
    blank = (log.mask & (MASK_BG | MASK_SPRITE)) == 0;
    if (blank) {
        // Rendering stays off while drawn (lines_blank draws the rest, `v` and the palette as
        // they move).
        for (u32 i = 0; i < log.count; i++) {
            const LineEvent& ev = log.events[i];
            if (ev.dot >= drawn_end) break;
            if (ev.mask & (MASK_BG | MASK_SPRITE)) return false;
        }
        LineRegs r = lines_start_regs(log);
        u32 e = 0;
        lines_apply(log, e, r, 0xffffffffu);
        return r.t == end_t && r.x == end_x;
    }
    // Rendering stays on and the pattern tables and sprite size stay put while drawn; no `$2007`
    // access moved `v` or wrote the palette (with rendering off, after drawing).
    for (u32 i = 0; i < log.count; i++) {
        const LineEvent& ev = log.events[i];
        if (ev.kind != LINE_EV_REGS) return false;
        if (ev.dot >= drawn_end) continue;
        if ((ev.mask & (MASK_BG | MASK_SPRITE)) == 0) return false;
        if ((ev.ctrl ^ log.ctrl) & (CTRL_SPRITE_TABLE | CTRL_BG_TABLE | CTRL_SPRITE_16)) return false;
    }
    // `v` through the frame, as lines_draw leaves it after line 239, without a step a line:
    // its vertical bits after 240 fine Y steps, its horizontal bits t's at line 239's dot 257.
    u32 e;
    LineRegs r;
    u16 vert, hori;
    lines_first_v(log, e, r, vert, hori);
    lines_apply(log, e, r, pre + 239 * PPU_DOTS_PER_LINE + 257);
    hori = r.t & 0x041f;
    // Line 239's prefetch moves v two tiles on; lines 240-241 leave it.
    u16 v = ppu_v_increment_x(ppu_v_increment_x((u16)(lines_vert_after_frame(vert) | hori)));
    lines_apply(log, e, r, 0xffffffffu);
    return v == end_v && r.t == end_t && r.x == end_x;
}

// Bit k of masks[line] set when OAM sprite k is in range of `line` (0-238, the evaluation on
// that line picks the sprites of the next): lane `lane` of 32 does every 32nd line.
NESLE_FN void lines_sprite_masks(const u8* oam, u32 height, u64* masks, u32 lane) {
    for (u32 line = lane; line < 239; line += 32) {
        u64 m = 0;
        for (u32 k = 0; k < 64; k++) {
            i32 row = (i32)line - (i32)oam[k * 4];
            if (row >= 0 && row < (i32)height) m |= 1ull << k;
        }
        masks[line] = m;
    }
}

NESLE_FN u32 lines_lowest_bit(u64 m) {
#ifdef __CUDA_ARCH__
    return (u32)__ffsll((long long)m) - 1;
#else
    return (u32)__builtin_ctzll(m);
#endif
}

// Bits 0-3 of `b` as bytes 0-3, each 0 or 1 (the nibble's four copies the multiply makes, at
// bits 0, 7, 14 and 21, do not overlap).
NESLE_FN u32 lines_bytes4(u32 b) { return ((b & 15) * 0x204081u) & 0x01010101u; }

// The bytes of a word in reverse order.
NESLE_FN u32 lines_bswap(u32 v) {
#ifdef __CUDA_ARCH__
    return __byte_perm(v, 0, 0x0123);
#else
    return __builtin_bswap32(v);
#endif
}

// Background tile `k` (0-33) of the strip a line fetches, `v` = vert | hori at its start: where
// its pattern's row 0 lies in `c.chr` (its low plane; the high plane 8 bytes on) and its
// attribute's two bits. Neither depends on fine Y (bits 12-14 of `v`).
NESLE_FN void lines_tile(const LineScene& c, u16 vert, u16 hori, u32 k, u16 table, u32& pattern, u32& at) {
    u32 cx = (hori & 31) + k;
    u16 v = (u16)(vert | ((((hori >> 10) ^ (cx >> 5)) & 1) << 10) | (cx & 31));
    u32 page = c.nt_page[(v >> 10) & 3];
    u32 nt = c.ciram[page + (v & 0x3ff)];
    u32 ab = c.ciram[page + (0x3c0 | ((v >> 4) & 0x38) | ((v >> 2) & 0x07))];
    at = (ab >> (((v >> 4) & 4) | (v & 2))) & 3;
    u32 a = table | (nt << 4);
    pattern = lines_chr_bank(c, a) + (a & 0x3ff);
}

// Lane `lane`'s 8 pixels of one line in which a write changes fine X or PPUMASK from its dot on
// (SMB's status-bar split), both taken per pixel from the log (`pe`, `pr` from `first`), as
// ppu_draw_pixel composes them: the background's strips `lo`, `hi` with the attributes `at0` and
// `at1`, over or under the sprites (bit 7 - i for pixel x0 + i: `claimed`, a sprite pixel shows;
// `behind`, under the background; byte i of `spx`, its palette index). The left column's clip is
// tested on x0 (a multiple of 8: all 8 pixels on the same side of x = 8).
NESLE_FN u64 lines_eight_changing(const LineLog& log, const LineScene& c, u32 x0, u32 first, u32& pe, LineRegs& pr, u32 lo,
                                  u32 hi, u32 at0, u32 at1, u32 claimed, u32 behind, u64 spx) {
    u64 out = 0;
    for (u32 i = 0; i < 8; i++) {
        u32 bit = 7 - i;
        lines_apply(log, pe, pr, first + x0 + i);
        u32 pos = i + pr.x;
        u8 mask = pr.mask;
        u32 index = 0;
        if ((mask & MASK_BG) && (x0 >= 8 || (mask & MASK_BG_LEFT))) {
            u32 p = ((hi >> (15 - pos)) & 1) << 1 | ((lo >> (15 - pos)) & 1);
            if (p != 0) index = (pos >= 8 ? at1 : at0) << 2 | p;
        }
        if ((mask & MASK_SPRITE) && (x0 >= 8 || (mask & MASK_SPRITE_LEFT)) && ((claimed >> bit) & 1) &&
            (index == 0 || !((behind >> bit) & 1)))
            index = (u32)(spx >> (8 * i)) & 0xff;
        u8 grey = (mask & MASK_GREY) ? 0x30 : 0x3f;
        out |= (u64)(c.palette[index] & grey) << (8 * i);
    }
    return out;
}

// Bit k of `v` (k < 8) to bit 4k: one bit a nibble.
NESLE_FN u32 lines_nibbles(u32 v) {
    v = (v | v << 12) & 0x000f000fu;
    v = (v | v << 6) & 0x03030303u;
    return (v | v << 3) & 0x11111111u;
}

// The same for a line with no write inside it, PPUMASK and fine X those of `pr` for all 8 pixels,
// the background's indices and the sprites' choices made for all 8 at once (kernel-notes #151):
// nibble i of `bg` is pixel x0 + i's background palette index (0 when transparent or clipped),
// bit i of `front` says a sprite pixel shows there; each pixel then only picks its byte and looks
// up the palette.
NESLE_FN u64 lines_eight_fixed(const LineScene& c, u32 x0, const LineRegs& pr, u32 lo, u32 hi, u32 at0, u32 at1,
                               u32 claimed, u32 behind, u64 spx) {
    u32 fx = pr.x;
    u8 mask = pr.mask;
    bool bg_on = (mask & MASK_BG) && (x0 >= 8 || (mask & MASK_BG_LEFT));
    bool spr_on = (mask & MASK_SPRITE) && (x0 >= 8 || (mask & MASK_SPRITE_LEFT));
    // The strips with bit i for pixel x0 + i (bit 7 - i in lo, hi and lines_eight_changing).
    u32 bgl = bg_on ? reverse_bits8((u8)(lo >> (8 - fx))) : 0, bgh = bg_on ? reverse_bits8((u8)(hi >> (8 - fx))) : 0;
    u32 front = spr_on ? reverse_bits8((u8)claimed) & ~(reverse_bits8((u8)behind) & (bgl | bgh)) : 0;
    u32 nl = lines_nibbles(bgl), nh = lines_nibbles(bgh);
    u32 nf = fx ? ~0u << (4 * (8 - fx)) : 0;  // the nibbles of pixels x0 + 8 - fx on: the second tile's
    u32 attr = ((at0 * 0x11111111u) & ~nf) | ((at1 * 0x11111111u) & nf);
    u32 bg = (nl | nh << 1 | attr << 2) & ((nl | nh) * 15);  // transparent pixels 0
    // Two words of 4 pixels, PPUMASK's greyscale applied to each once (kernel-notes #156).
    u32 out[2] = {0, 0};
    for (u32 i = 0; i < 8; i++) {
        u32 index = (front >> i) & 1 ? (u32)(spx >> (8 * i)) & 0xff : (bg >> (4 * i)) & 15;
        out[i >> 2] |= (u32)c.palette[index] << (8 * (i & 3));
    }
    u32 grey = (mask & MASK_GREY) ? 0x30303030u : 0x3f3f3f3fu;
    return (u64)(out[1] & grey) << 32 | (out[0] & grey);
}

// Lane `lane`'s 8 pixels of every line (`masks` from lines_sprite_masks; `pixels` the env's
// picture), as ppu_draw_pixel composes them.
NESLE_FN void lines_draw(const LineLog& log, const LineScene& c, const u64* masks, u8* pixels, u32 lane) {
    u32 pre = lines_prerender_dots(log);
    u16 bg_table = (log.ctrl & CTRL_BG_TABLE) ? 0x1000 : 0;
    u32 x0 = lane * 8;
    u32 e;
    LineRegs r;
    u16 vert, hori;
    lines_first_v(log, e, r, vert, hori);
    u32 next = lines_event_dot(log, e);  // the line's three tests against the log: lines_apply_due
    // The strip's tiles under this lane: pixel x0+i shows bit i + fine X of tiles lane, lane+1.
    // Their names and attributes stay the same for the lines of a tile row (8, while the
    // horizontal scroll stays): looked up when `v`'s bits but fine Y change, the pattern rows
    // then read at each line's fine Y (kernel-notes #160).
    u32 row = 0xffffffffu, pattern0 = 0, pattern1 = 0, at0 = 0, at1 = 0;
    for (u32 line = 0; line < 240; line++) {
        u32 first = pre + line * PPU_DOTS_PER_LINE + 1;  // the dot clock of pixel 0
        lines_apply_due(log, e, next, r, first);
        if (((vert & 0x0be0) | hori) != row) {
            row = (vert & 0x0be0) | hori;
            lines_tile(c, vert, hori, lane, bg_table, pattern0, at0);
            lines_tile(c, vert, hori, lane + 1, bg_table, pattern1, at1);
        }
        const u8* p0 = c.chr + pattern0 + ((vert >> 12) & 7);
        const u8* p1 = c.chr + pattern1 + ((vert >> 12) & 7);
        u32 lo = (u32)p0[0] << 8 | p1[0], hi = (u32)p0[8] << 8 | p1[8];
        // The sprites the line before picked, those over this lane's pixels fetched and laid
        // over each other in OAM order: the first opaque pixel at a place is the one that shows.
        u32 claimed = 0, behind = 0;
        u64 spx = 0;
        u64 m = line > 0 ? masks[line - 1] : 0;
        for (u32 j = 0; j < 8 && m != 0; j++) {
            u32 k = lines_lowest_bit(m);
            m &= m - 1;
            const u8* o = c.oam + k * 4;
            u32 sx = o[3];
            if (sx > x0 + 7 || x0 > sx + 7) continue;  // not over this lane (its place stays unused)
            u16 a = ppu_sprite_row_addr(log.ctrl, (u8)((u8)(line - 1) - o[0]), o[1], o[2], true);
            u32 slo, shi;
            lines_chr_row(c, a, slo, shi);
            if (o[2] & 0x40) {
                slo = reverse_bits8((u8)slo);
                shi = reverse_bits8((u8)shi);
            }
            // Bit 7 - i: the sprite's pixel at x0 + i.
            u32 al = sx >= x0 ? slo >> (sx - x0) : (slo << (x0 - sx)) & 0xff;
            u32 ah = sx >= x0 ? shi >> (sx - x0) : (shi << (x0 - sx)) & 0xff;
            u32 fresh = (al | ah) & ~claimed;
            claimed |= fresh;
            if (o[2] & 0x20) behind |= fresh;
            // The fresh pixels' palette indices into spx, byte 7 - b for bit b of the strips, 4
            // pixels at a time (kernel-notes #162): bits 0-3 (bytes 7-4) and 4-7 (bytes 3-0)
            // spread to bytes, then each word's bytes reversed.
            u32 pal = (0x10 | (o[2] & 3) << 2) * 0x01010101u;
            u32 near = (lines_bytes4(al) | lines_bytes4(ah) << 1 | pal) & lines_bytes4(fresh) * 0xff;
            u32 far = (lines_bytes4(al >> 4) | lines_bytes4(ah >> 4) << 1 | pal) & lines_bytes4(fresh >> 4) * 0xff;
            spx |= (u64)lines_bswap(near) << 32 | lines_bswap(far);
        }
        // A write inside the line changes fine X or PPUMASK from its dot on.
        bool changes = next < first + 255;
        u32 pe = e;
        LineRegs pr = r;
        u64 out = changes ? lines_eight_changing(log, c, x0, first, pe, pr, lo, hi, at0, at1, claimed, behind, spx)
                          : lines_eight_fixed(c, x0, pr, lo, hi, at0, at1, claimed, behind, spx);
        nes_store8(pixels + line * 256 + x0, out);
        // To the next line: one fine Y step at dot 256, t's horizontal bits at dot 257.
        vert = ppu_v_increment_y(vert) & 0x7be0;
        lines_apply_due(log, e, next, r, pre + line * PPU_DOTS_PER_LINE + 257);
        hori = r.t & 0x041f;
    }
}

// Rendering off all frame: lane `lane`'s 8 pixels of every line as ppu_blank_pixel draws them,
// the backdrop or, where `v` points into the palette, that entry, with `v`, the palette and
// PPUMASK's greyscale bit as of each pixel's dot. The palette at the start is the one after the
// frame with the frame's palette writes undone, last first.
NESLE_FN void lines_blank(const LineLog& log, const LineScene& c, u8* pixels, u32 lane) {
    u8 palette[32];
    for (u32 i = 0; i < 32; i++) palette[i] = c.palette[i];
    for (u32 i = log.count; i-- > 0;) {
        const LineEvent& ev = log.events[i];
        if (ev.kind == LINE_EV_PALETTE) palette[ev.index] = ev.old;
    }
    u32 e = 0;
    LineRegs r = lines_start_regs(log);
    for (u32 line = 0; line < 240; line++) {
        u32 first = 341 + line * PPU_DOTS_PER_LINE + 1;  // no dot skipped with rendering off
        u64 out = 0;
        for (u32 i = 0; i < 8; i++) {
            lines_apply(log, e, r, first + lane * 8 + i, palette);
            u32 index = (r.v & 0x3f00) == 0x3f00 ? ppu_palette_index(r.v) : 0;
            u8 grey = (r.mask & MASK_GREY) ? 0x30 : 0x3f;
            out |= (u64)(palette[index] & grey) << (8 * i);
        }
        nes_store8(pixels + line * 256 + lane * 8, out);
    }
}

// Env `env`'s frame by a redraw: from its packed state before the frame (`snapshot`, used as
// scratch), run once more with its buttons, drawing as it runs, when its log says so.
NESLE_DEV void nes_redraw_env(u8* snapshot, u32 stride, u32 packing, const u8* prg, const u32* code, const u8* chr, const u8* actions,
                              const LineLog* logs, u8* pixels, u32 env) {
    if (!(logs[env].flags & LINES_REDRAW)) return;
    Nes n;
    u8* prg_ram = nes_convert(&n.st, snapshot + (u64)env * stride, packing, false);
    nes_init(n, prg, code, chr);
    n.prg_ram = prg_ram;
    n.st.pad_buttons[0] = actions[env];
    n.pixels = pixels + (u64)env * 256 * 240;
    nes_run_frame_alone(n);
}

#if !defined(__CUDACC__)
// lines_vert_after_frame against 240 steps of ppu_v_increment_y, for every `v`: the values
// that differ (0 when right).
extern "C" u32 nesle_host_lines_vert_check(void) {
    u32 wrong = 0;
    for (u32 v = 0; v < 0x8000; v++) {
        u16 vert = (u16)(v & 0x7be0), stepped = vert;
        for (u32 line = 0; line < 240; line++) stepped = ppu_v_increment_y(stepped);
        wrong += lines_vert_after_frame(vert) != stepped;
    }
    return wrong;
}
#endif

// A warp's share of output row `oy` of an 84x84 picture (picture.cuh), lane `lane`'s part: the
// row sums of its 8 source columns, in two groups of 4 as nesle_gray84's threads take them, into
// the warp's `rows` (256 floats, 16-byte aligned). The same float operations in the same order
// as nesle_gray84, so the same bytes.
NESLE_FN void lines_gray_sums(const GrayTables& t, const u8* px, u32 oy, float* rows, u32 lane) {
    for (u32 x = lane * 4; x < 256; x += 128) {
        float s[4];
        gray84_row_sums4(t, px, oy, x, s);
#if defined(__CUDA_ARCH__)
        *(float4*)&rows[x] = make_float4(s[0], s[1], s[2], s[3]);
#else
        for (u32 c = 0; c < 4; c++) rows[x + c] = s[c];
#endif
    }
}

// Then the row's pixels from its sums: lane `lane` makes pixels lane, lane + 32 and lane + 64.
NESLE_FN void lines_gray_pixels(const GrayTables& t, const float* rows, u8* out, u32 oy, u32 lane) {
    for (u32 ox = lane; ox < GRAY_SIZE; ox += 32)
        out[oy * GRAY_SIZE + ox] = gray84_from_rows(t.col_idx + ox * GRAY_COL_TAPS, t.col_w + ox * GRAY_COL_TAPS, rows);
}

#if defined(__CUDACC__)
#define LINES_WARPS 4  // envs a block of nesle_draw_lines, a warp each

// A queue word read with acquire semantics, so what nesle_step stored before it is seen.
NESLE_FN u32 lines_load_acquire(const u32* p) {
    u32 v;
#if __CUDA_ARCH__ >= 700
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
#else
    v = *(const volatile u32*)p;
    __threadfence();
#endif
    return v;
}

// Slot `slot` of nes_publish's queue once it holds an env (env + 1), read by every lane. A slot
// the warp's lane 0 finds empty is counted in queue[2]: its warp runs beside the step.
NESLE_FN u32 lines_wait_slot(u32* queue, u32 slot) {
    u32 v = lines_load_acquire(queue + 3 + slot);
    if (v == 0 && (threadIdx.x & 31) == 0) atomicAdd(&queue[2], 1u);
    while (v == 0) {
#if __CUDA_ARCH__ >= 700
        __nanosleep(256);
#endif
        v = lines_load_acquire(queue + 3 + slot);
    }
    return v;
}

// Env `env`'s picture by one warp (lane `lane`), `masks` and `palette` the warp's shared memory.
// False (on every lane) when the env is left to nesle_redraw.
NESLE_FN bool lines_draw_env(const u8* states, u32 stride, u32 packing, const u8* chr, LineLog* logs, u8* pixels,
                              u32* redrawn, u64* masks, u8* palette, u32 env, u32 lane) {
    const u8* packed = states + (u64)env * stride;
    LineLog& log = logs[env];
    bool blank = false;
    bool ok = lines_check(log, packed, packing, blank);
    __syncwarp();  // every lane has read the flags before lane 0 may set one
    if (!ok) {
        if (lane == 0) {
            log.flags |= LINES_REDRAW;
            atomicAdd(redrawn, 1u);
        }
        return false;
    }
    LineScene c = lines_scene(packed, packing, chr);
    // The palette, read for every pixel, from shared memory.
    palette[lane] = c.palette[lane];
    c.palette = palette;
    __syncwarp();
    u8* px = pixels + (u64)env * 256 * 240;
    if (blank) {
        lines_blank(log, c, px, lane);
        return true;
    }
    lines_sprite_masks(c.oam, (log.ctrl & CTRL_SPRITE_16) ? 16 : 8, masks, lane);
    __syncwarp();
    lines_draw(log, c, masks, px, lane);
    return true;
}

// The 84x84 picture of `px` into `out` by one warp (lane `lane`; `rows` the warp's 256 floats),
// with the tables `t`: for each output row, the lanes' row sums (lines_gray_sums), then its
// pixels (lines_gray_pixels).
NESLE_FN void lines_gray_env(const GrayTables& t, const u8* px, u8* out, float* rows, u32 lane) {
    __syncwarp();  // the warp's pixel stores are seen by every lane
    for (u32 oy = 0; oy < GRAY_SIZE; oy++) {
        lines_gray_sums(t, px, oy, rows, lane);
        __syncwarp();
        lines_gray_pixels(t, rows, out, oy, lane);
        __syncwarp();  // the row's sums read before the next row's overwrite them
    }
}

// A warp an env: the picture of the frame nesle_step just ran with `logs`; an env the renderer
// cannot draw is marked LINES_REDRAW for nesle_redraw and counted in `*redrawn` (the batch
// draws while running for a while when most frames are redrawn: crates/nes-cuda batch.rs).
// At least 6 blocks an SM: 80 registers on every architecture (without the bound, 95 on sm_75
// and sm_80; kernel-notes #163). `queue` (nes_publish's, filled by the nesle_step before this
// launch) gives the envs in the order their frames ended: each warp takes the next slot and
// waits until its env is in it, so this launch can run beside the step as a programmatic
// dependent launch (sm_90, launch.rs), drawing on the SMs the step's blocks leave (kernel-notes
// #166). Elsewhere it starts after the step, the queue full. The grid is what the GPU holds at
// once (launch.rs `lines_grid`). `gray` null, or n_envs 84x84 pictures to make of the envs drawn
// (`tables` picture.rs's GrayTables).
extern "C" __global__ void __launch_bounds__(LINES_WARPS * 32, 6) nesle_draw_lines(const u8* states, u32 stride, u32 packing,
                                                                               const u8* chr, LineLog* logs,
                                                                               u8* pixels, u32 n_envs, u32* redrawn,
                                                                               u32* queue, const GrayTables* tables,
                                                                               u8* gray) {
    __shared__ u64 masks[LINES_WARPS][240];
    __shared__ u8 palettes[LINES_WARPS][32];
    __shared__ GrayTables t;
    __shared__ __align__(16) float rows[LINES_WARPS][256];
    u32 w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (gray) gray_tables_to_shared(t, tables, blockDim.x);
    __syncthreads();
    // Slot after slot until the queue is taken: a warp that only drew one env would hold its SM
    // at the `griddepcontrol.wait` below, and the step's tail would draw a block's worth at most
    // (kernel-notes #167). No block barrier follows, so each warp leaves on its own.
    for (;;) {
        u32 slot = 0;
        if (lane == 0) slot = atomicAdd(&queue[1], 1u);
        slot = __shfl_sync(~0u, slot, 0);
        if (slot >= n_envs) break;
        u32 env = lines_wait_slot(queue, slot) - 1;
        bool drawn = lines_draw_env(states, stride, packing, chr, logs, pixels, redrawn, masks[w], palettes[w], env, lane);
        if (drawn && gray) lines_gray_env(t, pixels + (u64)env * 256 * 240, gray + (u64)env * GRAY_PIXELS, rows[w], lane);
        __syncwarp();  // the warp's shared masks, palette and rows are the next env's
    }
#if __CUDA_ARCH__ >= 900
    // The launches after this one wait for it alone: it ends after the step it may run beside.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// One thread an env: the frames nesle_draw_lines left, drawn by running them again.
extern "C" __global__ void nesle_redraw(u8* snapshot, u32 stride, u32 packing, const u8* prg, const u32* code, const u8* chr,
                                        const u8* actions, const LineLog* logs, u8* pixels, u32 n_envs) {
    u32 env = blockIdx.x * blockDim.x + threadIdx.x;
    if (env < n_envs) nes_redraw_env(snapshot, stride, packing, prg, code, chr, actions, logs, pixels, env);
}

// The 84x84 pictures of the envs nesle_draw_lines left to nesle_redraw (LINES_REDRAW), after
// it: a warp an env, the warps looping over the envs.
extern "C" __global__ void __launch_bounds__(LINES_WARPS * 32) nesle_gray84_redrawn(const u8* pixels, const LineLog* logs,
                                                                                const GrayTables* tables, u8* gray,
                                                                                u32 n_envs) {
    __shared__ GrayTables t;
    __shared__ __align__(16) float rows[LINES_WARPS][256];
    gray_tables_to_shared(t, tables, blockDim.x);
    __syncthreads();
    u32 w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (u32 env = blockIdx.x * LINES_WARPS + w; env < n_envs; env += gridDim.x * LINES_WARPS)
        if (logs[env].flags & LINES_REDRAW)
            lines_gray_env(t, pixels + (u64)env * 256 * 240, gray + (u64)env * GRAY_PIXELS, rows[w], lane);
}
#else
// lines_gray_env with the lanes one after another.
static void lines_host_gray_env(const GrayTables& t, const u8* px, u8* out) {
    float rows[256];
    for (u32 oy = 0; oy < GRAY_SIZE; oy++) {
        for (u32 lane = 0; lane < 32; lane++) lines_gray_sums(t, px, oy, rows, lane);
        for (u32 lane = 0; lane < 32; lane++) lines_gray_pixels(t, rows, out, oy, lane);
    }
}

// The host twins of nesle_draw_lines and nesle_redraw, one after the other; the lanes of an env
// one after another. Returns the envs drawn line by line (the rest were redrawn).
// The envs in `queue`'s order (nes_publish's, filled by the host step), as the GPU's warps take them.
extern "C" u32 nesle_host_draw_lines(const u8* states, u8* snapshot, u32 stride, u32 packing, const u8* prg,
                                     const u32* code, const u8* chr, const u8* actions, LineLog* logs, u8* pixels, u32 n_envs,
                                     const u32* queue, const GrayTables* tables, u8* gray) {
    static thread_local u64 masks[240];
    u32 drawn = 0;
    for (u32 slot = 0; slot < n_envs; slot++) {
        u32 env = queue[3 + slot] - 1;
        if (env >= n_envs) continue;  // a slot left empty: that env's picture stays as it was
        const u8* packed = states + (u64)env * stride;
        LineLog& log = logs[env];
        bool blank = false;
        if (!lines_check(log, packed, packing, blank)) {
            log.flags |= LINES_REDRAW;
            nes_redraw_env(snapshot, stride, packing, prg, code, chr, actions, logs, pixels, env);
            continue;
        }
        drawn++;
        LineScene c = lines_scene(packed, packing, chr);
        u8* px = pixels + (u64)env * 256 * 240;
        for (u32 lane = 0; lane < 32; lane++) {
            if (blank) lines_blank(log, c, px, lane);
            else lines_sprite_masks(c.oam, (log.ctrl & CTRL_SPRITE_16) ? 16 : 8, masks, lane);
        }
        if (!blank)
            for (u32 lane = 0; lane < 32; lane++) lines_draw(log, c, masks, px, lane);
        if (gray) lines_host_gray_env(*tables, px, gray + (u64)env * GRAY_PIXELS);
    }
    return drawn;
}

// The host twin of nesle_gray84_redrawn.
extern "C" void nesle_host_gray84_redrawn(const u8* pixels, const LineLog* logs, const GrayTables* tables, u8* gray,
                                          u32 n_envs) {
    for (u32 env = 0; env < n_envs; env++)
        if (logs[env].flags & LINES_REDRAW)
            lines_host_gray_env(*tables, pixels + (u64)env * 256 * 240, gray + (u64)env * GRAY_PIXELS);
}
#endif

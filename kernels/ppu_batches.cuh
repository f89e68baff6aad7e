// The batch paths of `ppu_run` (nes-core ppu/render.rs): whole tiles, sprite slots, sprite
// evaluation by line, horizontal blanks and whole lines at once, each equal to its dots run one
// by one through ppu_dots.cuh. A part of ppu.cuh; include ppu.cuh.
#pragma once
#include "ppu_dots.cuh"

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

NESLE_DEV bool ppu_line_misses(const Nes& n);  // below, with sprite 0's hit in closed form

// Whether any pixel of this line, from the tile boundary `dot` on, can still matter: output is
// on, or sprite 0 may hit and does not miss on all of it (`ppu_line_misses`; render.rs
// line_draws).
NESLE_FN bool ppu_line_draws(const Nes& n) {
    const FlatState& s = n.st;
    return ppu_drawing(n) || (s.ppu_spr_zero && (s.ppu_status & STATUS_SPRITE0) == 0 &&
                              (s.ppu_mask & (MASK_BG | MASK_SPRITE)) == (MASK_BG | MASK_SPRITE) && !ppu_line_misses(n));
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
    const u8* bank = cart_chr_row(n, pat);
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

// --- Sprite 0 hit in closed form (kernel-notes #185) ---
//
// Between two catch-ups nothing writes to the PPU or the mapper (each such write catches the PPU
// up first), so the rest of the frame's background and sprite units follow from the state: tile
// j of a line (j = (x + fine X) / 8 for pixel x; tiles 0 and 1 are the previous line's prefetch)
// is fetched at `v` with coarse X moved on j times from the line's first tile, and line L shows
// sprite 0 in unit 0 when line L - 1's evaluation finds it in range. Whether and where sprite 0
// hits on a line then follows from the nametable and the pattern rows under its 8 pixels, without
// running the line's tiles: the `$2002` bound sleeps over the lines where it misses, and the
// catch-up runs them as lines that draw nothing.

// `v` with coarse X moved on `k` tiles (k <= 32: one wrap at most, into the other nametable).
NESLE_FN u16 ppu_v_advance_x(u16 v, u32 k) {
    u32 x = (v & 0x1f) + k;
    if (x >= 32) v ^= 0x0400;
    return (u16)((v & ~0x1f) | (x & 0x1f));
}

// The opaque pixels (either plane) of the background tile row fetched at `v`.
NESLE_FN u32 ppu_bg_row_opaque(const Nes& n, u16 v) {
    const FlatState& s = n.st;
    u8 tile = s.cart_ciram[cart_nametable_offset(s, (u16)(0x2000 | (v & 0x0fff)))];
    u16 pat = (u16)(((s.ppu_ctrl & CTRL_BG_TABLE) ? 0x1000 : 0) | ((u16)tile << 4) | ((v >> 12) & 7));
    const u8* bank = cart_chr_row(n, pat);
    return (u32)(bank[0] | bank[8]);
}

// The opaque pixels of sprite 0's row on visible line `line` (from OAM: line - 1's evaluation
// copies it to unit 0), the leftmost in bit 7, as the horizontal blank loads it.
NESLE_FN u32 ppu_sprite0_row_opaque(const Nes& n, u32 line) {
    const FlatState& s = n.st;
    u8 y = s.ppu_oam[0], tile = s.ppu_oam[1], attr = s.ppu_oam[2];
    u16 addr = ppu_sprite_row_addr(s.ppu_ctrl, (u16)(line - 1 - y), tile, attr, true);
    const u8* bank = cart_chr_row(n, addr);
    u8 row = (u8)(bank[0] | bank[8]);
    return (attr & 0x40) ? reverse_bits8(row) : row;
}

// The first pixel x (sx ..= sx + 7) where `row` (sprite 0's opaque pixels, the leftmost in bit
// 7) at X `sx` meets an opaque background pixel, on a line whose tile j is fetched at `v` moved on
// j - j_v tiles (j_v at most the first tile under the sprite); 256 when none. Both layers shown
// (the caller's test), and as `ppu_draw_pixel` has it: never pixel 255, and in the left column
// only where both layers show there.
NESLE_FN u32 ppu_hit_pixel(const Nes& n, u16 v, u32 j_v, u32 row, u32 sx) {
    const FlatState& s = n.st;
    u32 can = row;  // bit 7 - i: pixel sx + i
    if (sx >= 248) can &= sx == 255 ? 0 : (0xff00u >> (255 - sx)) & 0xff;
    if (sx < 8 && (s.ppu_mask & (MASK_BG_LEFT | MASK_SPRITE_LEFT)) != (MASK_BG_LEFT | MASK_SPRITE_LEFT)) can &= (1u << sx) - 1;
    if (can == 0) return 256;
    u32 at = sx + s.ppu_x, j = at >> 3;
    u16 vj = ppu_v_advance_x(v, j - j_v);
    u32 bg = ppu_bg_row_opaque(n, vj) << 8;
    if (at & 7) bg |= ppu_bg_row_opaque(n, ppu_v_increment_x(vj));
    u32 hits = can & (bg << (at & 7)) >> 8;
    return hits == 0 ? 256 : sx + nes_ctz64(reverse_bits8((u8)hits));
}

// Whether sprite 0, in unit 0 on this visible line and able to hit, misses on all of it: from a
// tile boundary `dot`, with the tiles under it still to be fetched (tile 2 + dot / 8 is the
// next; one fetched already may show what a write since has changed). Such a line can run as one
// that draws nothing (`ppu_line_draws`).
NESLE_DEV bool ppu_line_misses(const Nes& n) {
    const FlatState& s = n.st;
    u32 sx = s.ppu_spr_x[0], j_v = 2 + (s.ppu_dot >> 3);
    return ((sx + s.ppu_x) >> 3) >= j_v && ppu_hit_pixel(n, s.ppu_v, j_v, s.ppu_spr_lo[0] | s.ppu_spr_hi[0], sx) == 256;
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

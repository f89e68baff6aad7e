// Observations made on the device from the 256x240 palette-index pictures: full-size RGB
// (obs="rgb") and 84x84 grayscale (obs="gray84").
//
// Each palette index has a luma (BT.601, `lut`); each output pixel is the area average of the
// source pixels it covers, computed as taps: `rows(oy, x) = sum_k row_w[oy][k] * luma(ri, x)`
// then `out = rint(sum_j col_w[ox][j] * rows(oy, ci))`, clamped to 0..255, the row sums of an
// output row computed once for all its pixels. The tables come from
// Rust (crates/nes-cuda/src/picture.rs), and the CPU backend runs this same code compiled as
// host C++, so both backends give the same bytes. Multiplies and adds are kept separate
// (no fused multiply-add) so that host and device round alike.
#pragma once
#include "types.h"

#define GRAY_SIZE 84
#define GRAY_ROW_TAPS 4  // ceil(240 / 84) + 1
#define GRAY_COL_TAPS 5  // ceil(256 / 84) + 1
#define GRAY_PIXELS (GRAY_SIZE * GRAY_SIZE)

// Mirrors `GrayTables` in picture.rs (repr(C); sizes checked on both sides).
struct GrayTables {
    float lut[64];
    u32 row_idx[GRAY_SIZE * GRAY_ROW_TAPS];
    float row_w[GRAY_SIZE * GRAY_ROW_TAPS];
    u32 col_idx[GRAY_SIZE * GRAY_COL_TAPS];
    float col_w[GRAY_SIZE * GRAY_COL_TAPS];
};
static_assert(sizeof(GrayTables) == 4 * (64 + 2 * GRAY_SIZE * (GRAY_ROW_TAPS + GRAY_COL_TAPS)), "GrayTables");

// Full-size RGB (obs="rgb"): each palette index's three bytes (`nes_core::palette::NTSC_RGB`,
// the table from Rust: picture.rs `RgbTable`), 240 x 256 x 3 bytes a picture. A thread turns 4
// pixels (one 4-byte load) into 12 bytes (three 4-byte stores), so the pictures' bytes are read
// and written once each; a picture's 61,440 bytes are a multiple of 4, so the 4-pixel groups
// run on from one picture to the next.

// Mirrors `RgbTable` in picture.rs (repr(C)): index i's red | green << 8 | blue << 16.
struct RgbTable {
    u32 rgb[64];
};
static_assert(sizeof(RgbTable) == 256, "RgbTable");

// 4 palette indices (the low byte first) as their 12 RGB bytes in 3 little-endian words.
NESLE_FN void rgb_quad(const u32* rgb, u32 q, u32* out) {
    u32 c0 = rgb[q & 63], c1 = rgb[(q >> 8) & 63], c2 = rgb[(q >> 16) & 63], c3 = rgb[(q >> 24) & 63];
    out[0] = c0 | c1 << 24;
    out[1] = c1 >> 8 | c2 << 16;
    out[2] = c2 >> 16 | c3 << 8;
}

#if defined(__CUDACC__)
#define GRAY_MUL(a, b) __fmul_rn(a, b)
#define GRAY_ADD(a, b) __fadd_rn(a, b)
#define GRAY_RINT(x) rintf(x)
#else
#define GRAY_MUL(a, b) ((a) * (b))
#define GRAY_ADD(a, b) ((a) + (b))
#define GRAY_RINT(x) __builtin_rintf(x)
#endif

// The two passes of the area average, taken apart so that each row sum is computed once for
// the 84 output pixels of its row instead of once for each of up to 5 that use it (kernel-notes
// #147, #149); the same float operations in the same order as the sum over taps, so the bytes
// stay the same. Both backends run these helpers.
//
// Output row `oy`'s sums down source columns x..x+3 (x a multiple of 4) into `s`: for each
// column, sum_k row_w[oy][k] * luma(px[row_idx[oy][k]][x]), the taps in order.
NESLE_FN void gray84_row_sums4(const GrayTables& t, const u8* px, u32 oy, u32 x, float* s) {
    for (u32 c = 0; c < 4; c++) s[c] = 0.0f;
    for (u32 k = 0; k < GRAY_ROW_TAPS; k++) {
        const u8* p = px + t.row_idx[oy * GRAY_ROW_TAPS + k] * 256 + x;
        float w = t.row_w[oy * GRAY_ROW_TAPS + k];
#if defined(__CUDA_ARCH__)
        u32 q = *(const u32*)p;  // 4 pixels in one load (pictures are 4-byte aligned)
#else
        u32 q = (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
#endif
        for (u32 c = 0; c < 4; c++) s[c] = GRAY_ADD(s[c], GRAY_MUL(w, t.lut[(q >> (8 * c)) & 63]));
    }
}

// An output pixel from its row's 256 column sums and its column taps (`ci`, `cw`: 5 each).
NESLE_FN u8 gray84_from_rows(const u32* ci, const float* cw, const float* rows) {
    float out = 0.0f;
    for (u32 j = 0; j < GRAY_COL_TAPS; j++) out = GRAY_ADD(out, GRAY_MUL(cw[j], rows[ci[j]]));
    float r = GRAY_RINT(out);
    return (u8)(r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r));
}

#if defined(__CUDACC__)
#define GRAY_THREADS 256  // a block: 64 groups of 4 source columns x 4 output rows in the first pass
#define GRAY_BAND 4       // output rows a pass: 4 x 84 = 336 outputs, 84 threads taking two
static_assert(GRAY_SIZE % GRAY_BAND == 0 && GRAY_THREADS == 64 * GRAY_BAND && GRAY_THREADS >= 3 * GRAY_SIZE,
              "gray84 bands");

// The block's threads (`threads` of them) copy the tables into shared memory `t`, a word each
// in turn; the caller's barrier follows.
NESLE_FN void gray_tables_to_shared(GrayTables& t, const GrayTables* tables, u32 threads) {
    for (u32 i = threadIdx.x; i < sizeof(GrayTables) / 4; i += threads) ((u32*)&t)[i] = ((const u32*)tables)[i];
}

// A block a picture at a time (`gridDim.x` blocks over all of them), the tables in shared
// memory: for each band of 4 output rows, each thread sums 4 source columns down one of the
// rows (gray84_row_sums4: one 4-byte load a tap), then takes output pixel `ox` (its index mod 84)
// of one row, or of two (rows 0 and 3 of the band: threads 0-83), with that pixel's column taps
// held in registers for the whole launch (kernel-notes #149).
extern "C" __global__ void __launch_bounds__(GRAY_THREADS) nesle_gray84(const u8* pixels, const GrayTables* tables, u8* out,
                                                                       u32 n_envs) {
    __shared__ GrayTables t;
    __shared__ __align__(16) float rows[GRAY_BAND][256];
    gray_tables_to_shared(t, tables, GRAY_THREADS);
    __syncthreads();
    u32 tid = threadIdx.x;
    u32 x = (tid & 63) * 4, b = tid >> 6;  // first pass: columns x..x+3 of band row b (a warp's b is one)
    u32 ox = tid % GRAY_SIZE, ob = tid / GRAY_SIZE;  // second pass: rows ob (0-2) and, for ob 0, 3
    u32 ci[GRAY_COL_TAPS];
    float cw[GRAY_COL_TAPS];
    for (u32 j = 0; j < GRAY_COL_TAPS; j++) {
        ci[j] = t.col_idx[ox * GRAY_COL_TAPS + j];
        cw[j] = t.col_w[ox * GRAY_COL_TAPS + j];
    }
    for (u32 env = blockIdx.x; env < n_envs; env += gridDim.x) {
        const u8* px = pixels + (u64)env * 256 * 240;
        u8* o = out + (u64)env * GRAY_PIXELS;
        for (u32 oy = 0; oy < GRAY_SIZE; oy += GRAY_BAND) {
            float sums[4];
            gray84_row_sums4(t, px, oy + b, x, sums);
            *(float4*)&rows[b][x] = make_float4(sums[0], sums[1], sums[2], sums[3]);
            __syncthreads();
            for (u32 row = ob; row < GRAY_BAND && ob < 3; row += 3)
                o[(oy + row) * GRAY_SIZE + ox] = gray84_from_rows(ci, cw, rows[row]);
            __syncthreads();
        }
    }
}
#else
// The CPU backend's gray84 (and the host twin of nesle_gray84).
extern "C" void nesle_host_gray84(const u8* pixels, const GrayTables* tables, u8* out, u32 n_envs) {
    const GrayTables& t = *tables;
    float rows[256];
    for (u32 env = 0; env < n_envs; env++) {
        const u8* px = pixels + (u64)env * 256 * 240;
        for (u32 oy = 0; oy < GRAY_SIZE; oy++) {
            for (u32 x = 0; x < 256; x += 4) gray84_row_sums4(t, px, oy, x, rows + x);
            for (u32 ox = 0; ox < GRAY_SIZE; ox++)
                out[(u64)env * GRAY_PIXELS + oy * GRAY_SIZE + ox] =
                    gray84_from_rows(t.col_idx + ox * GRAY_COL_TAPS, t.col_w + ox * GRAY_COL_TAPS, rows);
        }
    }
}
#endif

#if defined(__CUDACC__)
#define RGB_THREADS 256

// `quads` groups of 4 pixels (n_envs x 240 x 256 / 4) over a grid-stride loop, the table in
// shared memory (a warp's 128 lookups go to 64 words: constant memory would serialize them).
extern "C" __global__ void __launch_bounds__(RGB_THREADS) nesle_rgb(const u8* pixels, const RgbTable* table, u8* out, u64 quads) {
    __shared__ u32 rgb[64];
    if (threadIdx.x < 64) rgb[threadIdx.x] = table->rgb[threadIdx.x];
    __syncthreads();
    const u32* in = (const u32*)pixels;  // pictures and outputs are 4-byte aligned (allocations)
    u32* o = (u32*)out;
    for (u64 i = (u64)blockIdx.x * RGB_THREADS + threadIdx.x; i < quads; i += (u64)gridDim.x * RGB_THREADS) {
        u32 w[3];
        rgb_quad(rgb, in[i], w);
        o[3 * i] = w[0];
        o[3 * i + 1] = w[1];
        o[3 * i + 2] = w[2];
    }
}
#else
// The host twin of nesle_rgb (the tests compare it with nes-core's palette).
extern "C" void nesle_host_rgb(const u8* pixels, const RgbTable* table, u8* out, u64 quads) {
    for (u64 i = 0; i < quads; i++) {
        const u8* p = pixels + 4 * i;
        u32 w[3];
        rgb_quad(table->rgb, (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24, w);
        for (u32 k = 0; k < 12; k++) out[12 * i + k] = (u8)(w[k / 4] >> (8 * (k % 4)));
    }
}
#endif

// 84x84 grayscale observations from the 256x240 palette-index pictures (obs="gray84").
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
// the 84 output pixels of its row instead of once for each of up to 5 that use it (the GPU
// kernel did 3.4x the work, kernel-notes #146); the same float operations in the same order as
// the sum over taps, so the bytes stay the same.
//
// Output row `oy`'s sum down source column `x`: sum_k row_w[oy][k] * luma(px[row_idx[oy][k]][x]).
NESLE_FN float gray84_row_sum(const GrayTables& t, const u8* px, u32 oy, u32 x) {
    float row = 0.0f;
    for (u32 k = 0; k < GRAY_ROW_TAPS; k++) {
        u32 y = t.row_idx[oy * GRAY_ROW_TAPS + k];
        row = GRAY_ADD(row, GRAY_MUL(t.row_w[oy * GRAY_ROW_TAPS + k], t.lut[px[y * 256 + x] & 63]));
    }
    return row;
}

// Output pixel `ox` of a row from that row's 256 column sums.
NESLE_FN u8 gray84_from_rows(const GrayTables& t, const float* rows, u32 ox) {
    float out = 0.0f;
    for (u32 j = 0; j < GRAY_COL_TAPS; j++)
        out = GRAY_ADD(out, GRAY_MUL(t.col_w[ox * GRAY_COL_TAPS + j], rows[t.col_idx[ox * GRAY_COL_TAPS + j]]));
    float r = GRAY_RINT(out);
    return (u8)(r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r));
}

#if defined(__CUDACC__)
#define GRAY_THREADS 256  // a block: one thread a source column in the first pass
#define GRAY_BAND 3       // output rows a pass: 3 x 84 = 252 of the 256 threads in the second
static_assert(GRAY_SIZE % GRAY_BAND == 0 && GRAY_BAND * GRAY_SIZE <= GRAY_THREADS, "gray84 bands");

// A block a picture at a time (`gridDim.x` blocks over all of them), the tables in shared
// memory: for each band of 3 output rows, thread x sums column x down each of them, then 252
// threads take an output pixel each from those sums.
extern "C" __global__ void __launch_bounds__(GRAY_THREADS) nesle_gray84(const u8* pixels, const GrayTables* tables, u8* out,
                                                                       u32 n_envs) {
    __shared__ GrayTables t;
    __shared__ float rows[GRAY_BAND][256];
    const u32* from = (const u32*)tables;
    for (u32 i = threadIdx.x; i < sizeof(GrayTables) / 4; i += GRAY_THREADS) ((u32*)&t)[i] = from[i];
    __syncthreads();
    u32 x = threadIdx.x;
    u32 band = x / GRAY_SIZE, ox = x % GRAY_SIZE;
    for (u32 env = blockIdx.x; env < n_envs; env += gridDim.x) {
        const u8* px = pixels + (u64)env * 256 * 240;
        u8* o = out + (u64)env * GRAY_PIXELS;
        for (u32 oy = 0; oy < GRAY_SIZE; oy += GRAY_BAND) {
            for (u32 b = 0; b < GRAY_BAND; b++) rows[b][x] = gray84_row_sum(t, px, oy + b, x);
            __syncthreads();
            if (band < GRAY_BAND) o[(oy + band) * GRAY_SIZE + ox] = gray84_from_rows(t, rows[band], ox);
            __syncthreads();
        }
    }
}
#else
// The CPU backend's gray84 (and the host twin of nesle_gray84).
extern "C" void nesle_host_gray84(const u8* pixels, const GrayTables* tables, u8* out, u32 n_envs) {
    float rows[256];
    for (u32 env = 0; env < n_envs; env++) {
        const u8* px = pixels + (u64)env * 256 * 240;
        for (u32 oy = 0; oy < GRAY_SIZE; oy++) {
            for (u32 x = 0; x < 256; x++) rows[x] = gray84_row_sum(*tables, px, oy, x);
            for (u32 ox = 0; ox < GRAY_SIZE; ox++) out[(u64)env * GRAY_PIXELS + oy * GRAY_SIZE + ox] = gray84_from_rows(*tables, rows, ox);
        }
    }
}
#endif

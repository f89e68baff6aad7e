// 84x84 grayscale observations from the 256x240 palette-index pictures (obs="gray84").
//
// Each palette index has a luma (BT.601, `lut`); each output pixel is the area average of the
// source pixels it covers, computed as taps: `rows(oy, x) = sum_k row_w[oy][k] * luma(ri, x)`
// then `out = rint(sum_j col_w[ox][j] * rows(oy, ci))`, clamped to 0..255. The tables come from
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

// Output pixel (oy, ox) of one picture (`px`: 240 rows of 256 palette indices).
NESLE_FN u8 gray84_pixel(const GrayTables& t, const u8* px, u32 oy, u32 ox) {
    float out = 0.0f;
    for (u32 j = 0; j < GRAY_COL_TAPS; j++) {
        u32 x = t.col_idx[ox * GRAY_COL_TAPS + j];
        float row = 0.0f;
        for (u32 k = 0; k < GRAY_ROW_TAPS; k++) {
            u32 y = t.row_idx[oy * GRAY_ROW_TAPS + k];
            row = GRAY_ADD(row, GRAY_MUL(t.row_w[oy * GRAY_ROW_TAPS + k], t.lut[px[y * 256 + x] & 63]));
        }
        out = GRAY_ADD(out, GRAY_MUL(t.col_w[ox * GRAY_COL_TAPS + j], row));
    }
    float r = GRAY_RINT(out);
    return (u8)(r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r));
}

#if defined(__CUDACC__)
// One thread per output pixel: `out` is n_envs x 84 x 84, consecutive threads write
// consecutive bytes.
extern "C" __global__ void nesle_gray84(const u8* pixels, const GrayTables* tables, u8* out, u32 n_envs) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (u64)n_envs * GRAY_PIXELS) return;
    u32 env = (u32)(i / GRAY_PIXELS);
    u32 p = (u32)(i % GRAY_PIXELS);
    out[i] = gray84_pixel(*tables, pixels + (u64)env * 256 * 240, p / GRAY_SIZE, p % GRAY_SIZE);
}
#else
// The CPU backend's gray84 (and the host twin of nesle_gray84).
extern "C" void nesle_host_gray84(const u8* pixels, const GrayTables* tables, u8* out, u32 n_envs) {
    for (u64 i = 0; i < (u64)n_envs * GRAY_PIXELS; i++) {
        u32 env = (u32)(i / GRAY_PIXELS);
        u32 p = (u32)(i % GRAY_PIXELS);
        out[i] = gray84_pixel(*tables, pixels + (u64)env * 256 * 240, p / GRAY_SIZE, p % GRAY_SIZE);
    }
}
#endif

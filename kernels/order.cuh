// Regrouping on the device (kernel-notes #66): the envs in order of their instructions in the
// last frame, as `Batch::regroup` sorts them on the host, by a bitonic network over the pairs
// (count << 32 | env). The pairs are all distinct, so the order is exactly the host's stable
// sort's. `padded` is n_envs rounded up to a power of two; the pad pairs (all ones) sort last.
#pragma once
#include "types.h"

NESLE_FN u64 order_pair(const u32* ran, u32 i, u32 n) { return i < n ? ((u64)ran[i] << 32) | i : ~0ull; }

// The compare-exchange of stage (k, j) at element i: with element i ^ j, ascending where bit k
// of i is clear (so the last stage, k = padded, sorts all of it ascending).
NESLE_FN void order_exchange(u64* pairs, u32 i, u32 j, u32 k) {
    u32 l = i ^ j;
    if (l <= i) return;
    u64 a = pairs[i], b = pairs[l];
    if ((a > b) == ((i & k) == 0)) {
        pairs[i] = b;
        pairs[l] = a;
    }
}

#if defined(__CUDACC__)
extern "C" __global__ void nesle_order_pairs(const u32* ran, u64* pairs, u32 n, u32 padded) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < padded) pairs[i] = order_pair(ran, i, n);
}

// One stage of the network: a launch each, so every exchange of a stage sees the last one's.
extern "C" __global__ void nesle_order_stage(u64* pairs, u32 j, u32 k, u32 padded) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < padded) order_exchange(pairs, i, j, k);
}

extern "C" __global__ void nesle_order_out(const u64* pairs, u32* order, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) order[i] = (u32)pairs[i];
}
#else
// The host twin: the same network, stage by stage.
extern "C" void nesle_host_order(const u32* ran, u64* pairs, u32* order, u32 n, u32 padded) {
    for (u32 i = 0; i < padded; i++) pairs[i] = order_pair(ran, i, n);
    for (u32 k = 2; k <= padded; k <<= 1)
        for (u32 j = k >> 1; j > 0; j >>= 1)
            for (u32 i = 0; i < padded; i++) order_exchange(pairs, i, j, k);
    for (u32 i = 0; i < n; i++) order[i] = (u32)pairs[i];
}
#endif

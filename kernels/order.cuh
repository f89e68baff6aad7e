// Regrouping on the device (kernel-notes #66, #67): the envs in order of their regrouping key
// (`ran`: the instructions in the last frame << 16 | the PC it ended at), the most first
// (kernel-notes #176: a launch of more blocks than the GPU holds at once then starts its longest
// warps first), then each block of ORDER_BLOCK by the PC alone (#179), as `Batch::regroup` sorts
// them on the host, by a bitonic network over the pairs (~key << 32 | env). The pairs are all
// distinct, so the order is exactly the host's stable sort's. `padded` is n_envs rounded up to a
// power of two; the pad pairs (all ones) sort last.
//
// The network's stages (k, j) run in their usual order; those with j below the tile size only
// exchange pairs inside one tile, so a block runs them one after the other in shared memory
// (`nesle_order_tiles`), and only the stages with j >= the tile size need a launch each
// (`nesle_order_stage`): 29 launches at 65,536 envs instead of 136 (#67).
#pragma once
#include "types.h"

// Pairs a block sorts in shared memory (its threads, one pair each).
#define ORDER_TILE 1024

NESLE_FN u64 order_pair(const u32* ran, u32 i, u32 n) { return i < n ? ((u64)~ran[i] << 32) | i : ~0ull; }

// After the sort, the envs of each block of ORDER_BLOCK slots (the step's blocks at 65,536 envs
// and more) in order of the PC their last frame ended at (the low half of the key), ties in the
// sort's order (kernel-notes #179): a block keeps the count's lengths, its warps the PC's phase.
#define ORDER_BLOCK 512

// A sorted pair at slot `t` of its block as (PC, t, env), to sort the block by.
NESLE_FN u64 order_block_entry(u64 pair, u32 t) {
    u32 pc = ~(u32)(pair >> 32) & 0xffffu;
    return (u64)pc << 48 | (u64)t << 32 | (u32)pair;
}

// The compare-exchange of element `t` of `pairs` with element t ^ j: ascending if `up`. Only
// the lower index of the two does it.
NESLE_FN void order_exchange(u64* pairs, u32 t, u32 j, bool up) {
    u32 l = t ^ j;
    if (l <= t) return;
    u64 a = pairs[t], b = pairs[l];
    if ((a > b) == up) {
        pairs[t] = b;
        pairs[l] = a;
    }
}

// The first stage of a tile's run: with k = 0 all stages of every k up to the tile size (the
// tile's pairs made from `ran` first), else the stages of this k with j below the tile size.
NESLE_FN u32 order_tile_k_first(u32 k) { return k == 0 ? 2 : k; }
NESLE_FN u32 order_tile_k_last(u32 k, u32 size) { return k == 0 ? size : k; }
NESLE_FN u32 order_tile_j_first(u32 k, u32 size) { return (k < size ? k : size) >> 1; }

#if defined(__CUDACC__)
// The stages kk = k_first ..= k_last of a tile of `size` pairs in shared memory that starts at
// pair `base`, thread t exchanging pair t, the block's barrier after each stage (the host
// twin: order_host_network).
__device__ __forceinline__ void order_device_network(u64* tile, u32 t, u32 base, u32 size, u32 k_first, u32 k_last) {
    for (u32 kk = k_first; kk <= k_last; kk <<= 1) {
        for (u32 j = order_tile_j_first(kk, size); j > 0; j >>= 1) {
            order_exchange(tile, t, j, ((base + t) & kk) == 0);
            __syncthreads();
        }
    }
}

// One stage of the network over all the pairs, for j >= the tile size.
extern "C" __global__ void nesle_order_stage(u64* pairs, u32 j, u32 k, u32 padded) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < padded) order_exchange(pairs, i, j, (i & k) == 0);
}

// The stages inside tiles of blockDim.x pairs (a power of two, at most ORDER_TILE, the whole of
// `padded` when that is smaller), as described at order_tile_k_first.
extern "C" __global__ void nesle_order_tiles(const u32* ran, u64* pairs, u32 n, u32 k) {
    __shared__ u64 tile[ORDER_TILE];
    u32 t = threadIdx.x, size = blockDim.x, i = blockIdx.x * size + t;
    tile[t] = k == 0 ? order_pair(ran, i, n) : pairs[i];
    __syncthreads();
    order_device_network(tile, t, blockIdx.x * size, size, order_tile_k_first(k), order_tile_k_last(k, size));
    pairs[i] = tile[t];
}

// The sorted envs into `order`, each block of ORDER_BLOCK (the launch's blocks) by PC;
// `*moved` set to 1 when an env's slot changed (zeroed before the sort: the batch skips sorts
// while they leave the order as it was, kernel-notes #153).
extern "C" __global__ void nesle_order_out(const u64* pairs, u32* order, u32 n, u32* moved) {
    __shared__ u64 tile[ORDER_BLOCK];
    u32 t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? order_block_entry(pairs[i], t) : ~0ull;
    __syncthreads();
    order_device_network(tile, t, 0, blockDim.x, 2, blockDim.x);
    if (i >= n) return;
    u32 env = (u32)tile[t];
    if (order[i] != env) {
        order[i] = env;
        *moved = 1;  // any thread that finds a change: they all store the same value
    }
}
#else
// The stages kk = k_first ..= k_last of one tile of `size` pairs that starts at pair `base`, as
// the tile's block runs them one after the other.
static void order_host_network(u64* tile, u32 base, u32 size, u32 k_first, u32 k_last) {
    for (u32 kk = k_first; kk <= k_last; kk <<= 1)
        for (u32 j = order_tile_j_first(kk, size); j > 0; j >>= 1)
            for (u32 t = 0; t < size; t++) order_exchange(tile, t, j, ((base + t) & kk) == 0);
}

// The host twin, with the device's schedule and any tile size (a power of two): each launch
// in turn, each tile's threads stage by stage.
static void order_host_tiles(const u32* ran, u64* pairs, u32 n, u32 padded, u32 size, u32 k) {
    for (u32 base = 0; base < padded; base += size) {
        u64* tile = pairs + base;
        if (k == 0)
            for (u32 t = 0; t < size; t++) tile[t] = order_pair(ran, base + t, n);
        order_host_network(tile, base, size, order_tile_k_first(k), order_tile_k_last(k, size));
    }
}

extern "C" void nesle_host_order(const u32* ran, u64* pairs, u32* order, u32 n, u32 padded, u32 tile) {
    u32 size = padded < tile ? padded : tile;
    order_host_tiles(ran, pairs, n, padded, size, 0);
    for (u32 k = size * 2; k <= padded; k <<= 1) {
        for (u32 j = k >> 1; j >= size; j >>= 1)
            for (u32 i = 0; i < padded; i++) order_exchange(pairs, i, j, (i & k) == 0);
        order_host_tiles(ran, pairs, n, padded, size, k);
    }
    // Each block of ORDER_BLOCK by PC, as nesle_order_out.
    for (u32 base = 0; base < n; base += ORDER_BLOCK) {
        u64 tile[ORDER_BLOCK];
        for (u32 t = 0; t < ORDER_BLOCK; t++) tile[t] = base + t < n ? order_block_entry(pairs[base + t], t) : ~0ull;
        order_host_network(tile, 0, ORDER_BLOCK, 2, ORDER_BLOCK);
        for (u32 t = 0; t < ORDER_BLOCK && base + t < n; t++) order[base + t] = (u32)tile[t];
    }
}
#endif

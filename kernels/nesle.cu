// CUDA entry points: one thread per console. Built by crates/nes-cuda/build.rs with nvcc into
// a fatbin (SASS for sm_75..sm_90 + PTX compute_90) and embedded in the Rust crate.
#include "types.h"
#include "console.cuh"
#include "picture.cuh"  // nesle_gray84

static_assert(sizeof(FlatState) % 8 == 0, "nes_copy_state copies 8 bytes at a time");

// For each env: pad-0 buttons = actions[env], then `frames` frames. `pixels` is null or
// n_envs * 256 * 240 palette indices, written for the last frame.
extern "C" __global__ void nesle_step(FlatState* states, const u8* prg, u32 prg_len, const u8* chr, u32 chr_len,
                                      const u8* actions, u32 n_envs, u32 frames, u8* pixels) {
    (void)prg_len;  // the banking maps of every state were built for this ROM's sizes
    (void)chr_len;
    // Grid-stride: the launch may have fewer threads than envs (launch.rs caps the blocks per SM).
    for (u32 env = blockIdx.x * blockDim.x + threadIdx.x; env < n_envs; env += gridDim.x * blockDim.x) {
        u8* px = pixels ? pixels + (u64)env * 256 * 240 : nullptr;
        nes_step_env_mirrored(states + env, prg, chr, actions[env], frames, px);
    }
}

// The same step without the local mirror: every access goes to the FlatState in global memory.
// Kept for measurements (NESLE_STEP_KERNEL=nesle_step_direct, see launch.rs); same results.
extern "C" __global__ void nesle_step_direct(FlatState* states, const u8* prg, u32 prg_len, const u8* chr,
                                             u32 chr_len, const u8* actions, u32 n_envs, u32 frames, u8* pixels) {
    (void)prg_len;
    (void)chr_len;
    for (u32 env = blockIdx.x * blockDim.x + threadIdx.x; env < n_envs; env += gridDim.x * blockDim.x) {
        u8* px = pixels ? pixels + (u64)env * 256 * 240 : nullptr;
        nes_step_env(states + env, prg, chr, actions[env], frames, px);
    }
}

// states[env] = bank[pick[env]] where mask[env] != 0. `pick` out of range leaves the env alone.
extern "C" __global__ void nesle_reset_from_bank(FlatState* states, const FlatState* bank, u32 bank_len,
                                                 const u8* mask, const u32* pick, u32 n_envs) {
    u32 env = blockIdx.x * blockDim.x + threadIdx.x;
    if (env >= n_envs || !mask[env]) return;
    u32 k = pick[env];
    if (k >= bank_len) return;
    nes_copy_state(states + env, bank + k);
}

// Every env's 2 KiB of CPU RAM into one dense n_envs x 2048 buffer (RAM observations and
// game logic read it without downloading whole states).
extern "C" __global__ void nesle_gather_ram(const FlatState* states, u8* out, u32 n_envs) {
    u32 env = blockIdx.x * blockDim.x + threadIdx.x;
    if (env >= n_envs) return;
    const u64* src = (const u64*)states[env].ram;
    u64* dst = (u64*)(out + (u64)env * 0x800);
    for (u32 i = 0; i < 0x800 / 8; i++) dst[i] = src[i];
}

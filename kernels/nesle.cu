// CUDA entry points: one thread per console. Built by crates/nes-cuda/build.rs with nvcc into
// a fatbin (SASS for sm_75..sm_90 + PTX compute_90) and embedded in the Rust crate.
// States are packed (console.cuh, crates/nes-cuda/src/packed.rs): env i's state starts at
// `states + i * stride`, and `packing` says which optional regions it keeps.
#include "types.h"
#include "console.cuh"
#include "picture.cuh"  // nesle_gray84, nesle_rgb
#include "order.cuh"    // nesle_order_*: regrouping on the device
#include "lines.cuh"    // nesle_draw_lines, nesle_redraw: the last frame drawn after it ran

static_assert(sizeof(FlatState) % 8 == 0, "states are copied 8 bytes at a time");

// A register cap of 128: 512 threads an SM, so 65,536 envs run in one wave on a 132-SM GPU
// instead of 1.29 and more warps hide the latency (kernel-notes #25: A +44%, B +36%). The cap
// alone, without a block size: ptxas makes the same code for it as for
// `__launch_bounds__(256, 2)` (checked byte for byte on every architecture built, #86), and
// the launch may use blocks of up to 512 threads (launch.rs `default_step_block`: 512 or 256
// when the envs fill the SMs so, lining up 16 or 8 warps at each block barrier of
// nes_run_frame, #40, #90; else 128). `-DNESLE_STEP_REGS=0` drops the cap. Unlike
// `--maxrregcount`, the cap reaches the PTX (`.maxnreg`), so the run-time compile honours it too.
#ifndef NESLE_STEP_REGS
#define NESLE_STEP_REGS 128
#endif
#if NESLE_STEP_REGS
#define NESLE_STEP_BOUNDS __maxnreg__(NESLE_STEP_REGS)
#else
#define NESLE_STEP_BOUNDS
#endif

// For each env: pad-0 buttons = actions[env], then `frames` frames. `pixels` is null or
// n_envs * 256 * 240 palette indices, written for the last frame. `order` is null or a
// permutation of the envs: thread slot t runs env order[t] (nes_step_slot). `ran` is null or
// n_envs counts: each env's instructions in its last frame. `lines` is null or n_envs LineLogs:
// the last frame's record for nesle_draw_lines. `queue` is null or n_envs + 3 words, zeroed: each
// env is put in it when its frames are stored (nes_publish), for a nesle_draw_lines that may
// already run beside this launch.
extern "C" __global__ void NESLE_STEP_BOUNDS nesle_step(u8* states, u32 stride, u32 packing, const u8* prg, const u32* code, const u8* chr,
                                      const u8* actions, u32 n_envs, u32 frames, u8* pixels, const u32* order,
                                      u32* ran, LineLog* lines, u32* queue) {
#if __CUDA_ARCH__ >= 900
    // A launch made dependent on this one (launch.rs: nesle_draw_lines) may be scheduled once
    // every block of this one runs: its blocks never keep ours from an SM (kernel-notes #166).
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    // Grid-stride: the launch may have fewer threads than envs (launch.rs caps the blocks per SM).
    // Every thread of a block takes the same turns (the frames have block barriers inside).
    nes_parts_init();
    for (u32 base = blockIdx.x * blockDim.x; base < n_envs; base += gridDim.x * blockDim.x)
        nes_step_slot(states, stride, packing, prg, code, chr, actions, order, base + threadIdx.x, n_envs, frames, pixels,
                      ran, lines);
    // After the loop, not in it: there it cost the frame's code registers (kernel-notes #166).
    if (queue)
        for (u32 t = blockIdx.x * blockDim.x + threadIdx.x; t < n_envs; t += gridDim.x * blockDim.x)
            nes_publish(queue, order ? order[t] : t);
}

// states[env] = bank[pick[env]] where mask[env] != 0 (both packed alike). `pick` out of range
// leaves the env alone.
extern "C" __global__ void nesle_reset_from_bank(u8* states, const u8* bank, u32 bank_len, u32 stride, const u8* mask,
                                                 const u32* pick, u32 n_envs) {
    u32 env = blockIdx.x * blockDim.x + threadIdx.x;
    if (env >= n_envs || !mask[env]) return;
    u32 k = pick[env];
    if (k >= bank_len) return;
    nes_copy_packed(states + (u64)env * stride, bank + (u64)k * stride, stride);
}

// Every env's 2 KiB of CPU RAM into one dense n_envs x 2048 buffer (RAM observations and
// game logic read it without downloading whole states). RAM sits in the packed head, at its
// FlatState offset. A thread a word (launch.rs: n_envs x 256 threads), so a warp moves 256
// contiguous bytes of one env; a thread an env made each load touch 32 rows (kernel-notes #170).
extern "C" __global__ void nesle_gather_ram(const u8* states, u32 stride, u8* out, u32 n_envs) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 env = i / (0x800 / 8), word = i % (0x800 / 8);
    if (env >= n_envs) return;
    const u64* src = (const u64*)(states + env * stride + __builtin_offsetof(FlatState, ram));
    ((u64*)(out + env * 0x800))[word] = src[word];
}

// RAM byte `addr` of every env where mask[env] != 0 becomes values[env] (the low byte), or
// `value` when `values` is null (console.cuh `nes_write_ram`): a game's RAM writes (a skipped
// frame's timer, a reset's RNG seed) without the states crossing to the host.
extern "C" __global__ void nesle_write_ram(u8* states, u32 stride, const u8* mask, const u32* values, u32 value, u32 addr,
                                           u32 n_envs) {
    u32 env = blockIdx.x * blockDim.x + threadIdx.x;
    if (env < n_envs) nes_write_ram(states, stride, mask, values, value, addr, env);
}

// The kernels compiled as plain C++ for the CPU parity tests (crates/nes-cuda/tests/parity.rs):
// the same .cuh sources, with host_shim.h defining the CUDA qualifiers away.
#include "host_shim.h"
#include "types.h"
#include "console.cuh"

// The kernel's per-env body over packed states, as nesle_step runs it (launch-local copy
// unpacked from and packed back to `states + env * stride`).
extern "C" void nesle_host_step(u8* states, u32 stride, u32 packing, const u8* prg, const u8* chr, const u8* actions,
                                u32 n_envs, u32 frames, u8* pixels) {
    for (u32 env = 0; env < n_envs; env++) {
        u8* px = pixels ? pixels + (u64)env * 256 * 240 : nullptr;
        nes_step_env_packed(states + (u64)env * stride, packing, prg, chr, actions[env], frames, px);
    }
}

extern "C" u32 nesle_host_state_size(void) { return (u32)sizeof(FlatState); }

// One CPU step (instruction or interrupt sequence) of one console, PPU and APU caught up after
// it as Console::step does (no idle-loop fast-forward: that lives in run_frame only): lets
// tests find the first diverging instruction when a frame-level parity check fails.
extern "C" void nesle_host_cpu_step(FlatState* state, const u8* prg, const u8* chr) {
    Nes n;
    nes_init(n, state, prg, chr);
    nes_step(n);
}

// The kernels compiled as plain C++ for the CPU parity tests (crates/nes-cuda/tests/parity.rs):
// the same .cuh sources, with host_shim.h defining the CUDA qualifiers away.
#include "host_shim.h"
#include "types.h"
#define NESLE_PPU_LOG 1  // the frame log kernels/replay.cuh replays (host only so far: kernel-notes #69)
#include "console.cuh"
#include "order.cuh"   // nesle_host_order
#include "replay.cuh"  // nesle_host_replay_check
#include "lines.cuh"   // nesle_host_draw_lines; through picture.cuh, nesle_host_gray84 (the CPU backend's gray84) and nesle_host_rgb

// nesle_step's body over packed states, one thread slot after the other (launch-local copy
// unpacked from and packed back to `states + env * stride`; `order`, `ran`, `lines` and
// `queue` as in nesle_step).
extern "C" void nesle_host_step(u8* states, u32 stride, u32 packing, const u8* prg, const u32* code, const u8* chr, const u8* actions,
                                u32 n_envs, u32 frames, u8* pixels, const u32* order, u32* ran, LineLog* lines,
                                u32* queue) {
    for (u32 t = 0; t < n_envs; t++) {
        nes_step_slot(states, stride, packing, prg, code, chr, actions, order, t, n_envs, frames, pixels, ran, lines);
        if (queue) nes_publish(queue, order ? order[t] : t);
    }
}

// The batch's code words for a PRG ROM image of `len` bytes (quiet.cuh `cpu_code_word`): built
// here once per ROM for both back ends, the GPU's copy uploaded beside the ROM.
extern "C" void nesle_host_code_words(const u8* prg, u32 len, u32* out) {
    for (u32 i = 0; i < len; i++) out[i] = cpu_code_word(prg, len, i);
}

// nesle_write_ram's body over packed states, one env after the other.
extern "C" void nesle_host_write_ram(u8* states, u32 stride, const u8* mask, const u32* values, u32 value, u32 addr,
                                     u32 n_envs) {
    for (u32 env = 0; env < n_envs; env++) nes_write_ram(states, stride, mask, values, value, addr, env);
}

extern "C" u32 nesle_host_state_size(void) { return (u32)sizeof(FlatState); }

extern "C" u32 nesle_host_line_log_size(void) { return (u32)sizeof(LineLog); }

// One CPU step (instruction or interrupt sequence) of one console, PPU and APU caught up after
// it as Console::step does (no idle-loop fast-forward: that lives in run_frame only): lets
// tests find the first diverging instruction when a frame-level parity check fails.
extern "C" void nesle_host_cpu_step(FlatState* state, const u8* prg, const u32* code, const u8* chr) {
    Nes n;
    n.st = *state;
    nes_init(n, prg, code, chr);
    nes_step(n);
    *state = n.st;
}

// The bound a `$2002` read trusts instead of catching the PPU up (`ppu_dots_to_status_change`):
// the kernels' PPU tests check it against ticking.
extern "C" u32 nesle_host_status_bound(const FlatState* state, const u8* prg, const u32* code, const u8* chr) {
    Nes n;
    n.st = *state;
    nes_init(n, prg, code, chr);
    return ppu_dots_to_status_change(n);
}

// `dots` PPU dots of one console, as the bus's catch-up runs them (`ppu_run`, in bulk where it
// can) or, with `one_by_one`, through `ppu_tick` each: the two must leave the same state and
// pixels (crates/nes-cuda/tests/ppu_batches.rs). `pixels` is null or one 256x240 picture.
extern "C" void nesle_host_ppu_run(FlatState* state, const u8* prg, const u32* code, const u8* chr, u32 dots, u32 one_by_one,
                                   u8* pixels) {
    Nes n;
    n.st = *state;
    nes_init(n, prg, code, chr);
    n.pixels = pixels;
    if (one_by_one) {
        for (u32 i = 0; i < dots; i++) ppu_tick(n);
    } else {
        ppu_run(n, dots);
    }
    *state = n.st;
}

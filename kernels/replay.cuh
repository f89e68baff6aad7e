// Drawing a frame after it has run (kernel-notes, "Two ways to draw after the frame": the PPU
// replay). The frame runs without pictures and logs its CPU's PPU and mapper register accesses
// (`Nes::log`); the PPU alone then runs the frame again from the state at its start, each
// access applied at the dot it took effect, and draws it.
#pragma once
#include "types.h"
#include "console.cuh"

#ifdef NESLE_PPU_LOG
// Runs the PPU of `n` (the state at the frame's start) through `count` logged accesses, then up
// to dot clock `end`.
NESLE_FN void ppu_replay(Nes& n, const PpuEvent* events, u32 count, u64 end) {
    FlatState& s = n.st;
    for (u32 i = 0; i < count; i++) {
        const PpuEvent& e = events[i];
        if (e.dot > s.ppu_dot_clock) ppu_run(n, (u32)(e.dot - s.ppu_dot_clock));
        if (e.kind == PPU_EVENT_READ) (void)ppu_cpu_read(n, e.addr);
        else if (e.kind == PPU_EVENT_WRITE) ppu_cpu_write(n, e.addr, e.value);
        else cart_cpu_write(n, e.addr, e.value, e.cycle);
    }
    if (end > s.ppu_dot_clock) ppu_run(n, (u32)(end - s.ppu_dot_clock));
}

#if !defined(__CUDACC__)
// One frame of `state` three ways: as the step kernel draws it (into `reference`), without
// pictures and logged (the state goes on from there), and replayed from the log (into
// `replayed`). Returns the events logged, or -1 when the log overflowed, -2 when the logged run
// did not end in the reference's state.
extern "C" i32 nesle_host_replay_check(FlatState* state, const u8* prg, const u32* code, const u8* chr, u8* reference, u8* replayed) {
    // Per thread: the tests run in parallel.
    static thread_local PpuEvent events[16384];
    FlatState start = *state;
    start.ppu_render_pixels = 1;
    Nes a;
    a.st = start;
    nes_init(a, prg, code, chr);
    a.pixels = reference;
    nes_run_frame(a, true);
    PpuLog log{events, 0, 16384, false};
    Nes b;
    b.st = start;
    b.st.ppu_render_pixels = 0;
    nes_init(b, prg, code, chr);
    b.log = &log;
    nes_run_frame(b, true);
    Nes r;
    r.st = start;
    nes_init(r, prg, code, chr);
    r.pixels = replayed;
    ppu_replay(r, events, log.count, b.st.ppu_dot_clock);

    b.st.ppu_render_pixels = 1;
    bool same = __builtin_memcmp(&a.st, &b.st, sizeof(FlatState)) == 0;
    *state = b.st;
    if (log.overflow) return -1;
    return same ? (i32)log.count : -2;
}
#endif
#endif

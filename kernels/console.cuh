// The console (nes-core console.rs): `set_buttons(0, a)` then `run_frame()` x frames, per env.
#pragma once
#include "console_types.cuh"
#include "cpu.cuh"

// Runs until the PPU enters vertical blank (line 241, dot 1): one whole frame.
NESLE_DEV void nes_run_frame(Nes& n) {
    n.s->ppu_frame_complete = 0;
    while (!n.s->ppu_frame_complete) cpu_step(n);
    n.s->ppu_frame_complete = 0;
}

// One env's share of nesle_step. `pixels` (nullable) receives the last frame: run_frame starts
// and ends in vertical blank, so the last call draws every visible dot exactly once.
NESLE_DEV void nes_step_env(FlatState* state, const u8* prg, const u8* chr, u8 action, u32 frames, u8* pixels) {
    Nes n;
    n.s = state;
    n.prg = prg;
    n.chr = chr;
    n.pixels = nullptr;
    n.dot_pending = 0;
    state->pad_buttons[0] = action;
    for (u32 f = 0; f < frames; f++) {
        if (f + 1 == frames) n.pixels = pixels;
        nes_run_frame(n);
    }
}

// Copies one FlatState 8 bytes at a time (its size is a multiple of 8, pinned by a test).
NESLE_FN void nes_copy_state(FlatState* dst, const FlatState* src) {
    u64* d = (u64*)dst;
    const u64* s = (const u64*)src;
    for (u32 i = 0; i < sizeof(FlatState) / 8; i++) d[i] = s[i];
}

// The per-thread view of one console: its FlatState (in global memory) plus the shared ROM.
#pragma once
#include "types.h"
#include "generated/flat_state.h"

struct Nes {
    FlatState* s;
    // PRG ROM and CHR ROM shared by every env of the batch (CHR may be null for CHR RAM).
    const u8* prg;
    const u8* chr;
    // 256x240 palette indices for this env, or null: pixels are drawn only when set.
    u8* pixels;
    // nes-core Bus::ppu_dot_pending: the cycle's third PPU dot runs after the CPU access.
    // Always 0 between CPU bus operations, so it is not part of FlatState.
    u8 dot_pending;
};

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
    // nes-core Bus::ppu_owed / ppu_budget / ppu_lazy (the catch-up PPU, see bus.cuh): dots
    // owed to the PPU, the owed count at which it must catch up (0: every cycle end), and
    // whether the board lets it lag (not MMC3). Derived, not saved: `nes_init` sets them, and
    // every exit to the caller catches up first, so FlatState is exact there.
    u32 ppu_owed;
    u32 ppu_budget;
    bool ppu_lazy;
};

// The per-thread view of one console: its FlatState plus the shared ROM.
#pragma once
#include "types.h"
#include "generated/flat_state.h"

struct Nes {
    // PRG ROM and CHR ROM shared by every env of the batch (CHR may be null for CHR RAM).
    const u8* prg;
    const u8* chr;
    // 256x240 palette indices for this env, or null: pixels are drawn only when set.
    u8* pixels;
    // Where this env's PRG RAM lives: `st.cart_prg_ram` by default (`nes_init`), but the step
    // kernel points it into the packed state in global memory, so its copies of the state skip
    // 8 KiB that most games never touch (kernel-notes #44). Null when the state keeps none.
    u8* prg_ram;
    // The catch-up bookkeeping of nes-core's Bus (see bus.cuh), derived, not saved: `nes_init`
    // sets it (= Bus::load), and every exit to the caller catches the PPU and APU up first, so
    // FlatState is exact there. Cycle numbers compare against FlatState::bus_cycles.
    // Bus::ppu_done: PPU dots run, so the dots owed are `3 * bus_cycles - ppu_done`.
    u64 ppu_done;
    // Bus::ppu_deadline: the cycle at whose end the PPU must catch up (the next dot where the
    // NMI line may change by itself; every cycle for MMC3).
    u64 ppu_deadline;
    // Bus::apu_synced: the cycle up to which the APU has run.
    u64 apu_synced;
    // Bus::apu_deadline: the cycle at which the APU must catch up (its IRQ line may rise or the
    // DMC may want a DMA).
    u64 apu_deadline;
    // Bus::deadline: min(ppu_deadline, apu_deadline), or 0 while an OAM DMA is pending: the one
    // test at the end of a cycle (nes-core perf-notes #22).
    u64 deadline;
    // Bus::dma_deadline: apu_deadline, or 0 while an OAM DMA is pending: the one test at the
    // start of a read.
    u64 dma_deadline;
    // Bus::lines: the interrupt lines (LINE_NMI, LINE_IRQ) as the PPU, APU and cart drive them
    // now, refreshed after every call that can change them: the CPU samples them every cycle,
    // and one byte is cheaper than the PPU's status and control, two APU flags and the cart's
    // line (nes-core perf-notes #23).
    u8 lines;
    // Bus::ppu_lazy: false for boards whose IRQ follows PPU fetches (MMC3): the PPU never lags.
    bool ppu_lazy;
    // Apu::length_writes_pending: a length-counter register write may still have to land.
    bool apu_length_writes_pending;
    // Ppu::in_range, reduced to what `ppu_dots_to_status_change` asks of it: whether fewer than
    // 8 sprites are in range of line `in_range_key & 0xff` at the height `in_range_key & 0x100`
    // (16-pixel sprites). nes-core keeps 240 64-bit masks for its sprite evaluation (#27, not
    // ported: a drawing change); the kernel caches one line's answer instead (no 1,920 bytes of
    // local memory a thread). 0xffff: invalid (`nes_init`, any `$2004` write or OAM DMA byte).
    u16 in_range_key;
    bool in_range_lt8;
    // Bit k set when OAM entry k has Y < 240: the only sprites that can be in range of a visible
    // line, so `ppu_sprite_eval_line` scans these instead of all 64 (nes-core keeps a mask per
    // line, #27; this one is 8 bytes). Derived; rebuilt when `oam_visible_valid` is false (after
    // `nes_init` and any OAM write, with `in_range_key`).
    u64 oam_visible;
    bool oam_visible_valid;
    // Bit l of `sprite_lines` set when some sprite is in range of visible line l at the sprite
    // height `sprite_lines_tall` (8x16 or not) it was built for: on the lines without one (most
    // of a frame) `ppu_sprite_eval_line` skips its in-range scan (kernel-notes #35; nes-core's
    // 240 masks give it the same, in 1,920 bytes). Derived; rebuilt when `sprite_lines_valid`
    // is false (cleared with `oam_visible_valid`) or the height changed.
    u32 sprite_lines[8];
    bool sprite_lines_tall;
    bool sprite_lines_valid;
    // Nonzero when the CPU has something other than its next instruction to see to: a reset
    // pending, a fault, or an interrupt to take (`cpu_reset_pending | cpu_fault | cpu_nmi_take
    // | cpu_irq_take`). Derived: `nes_init` sets it and every write of those fields keeps it,
    // so `cpu_step` tests one byte before and one after each instruction instead of four
    // (kernel-notes #81).
    u8 attention;
    // `prg + cart_prg_map[i]` for the four 8 KiB windows of $8000-$FFFF: a ROM byte's address
    // in one load instead of two (kernel-notes #81). Derived: `cart_prg_windows` sets it.
    const u8* prg_bank[4];
    // The batch's code words (quiet.cuh `cpu_code_word`: one per PRG ROM byte, then a window's
    // worth of QF_NONE words) and the quiet path's fetch through them, by the address's top 3
    // bits (kernel-notes #138, #143): `code_bank[4 + i]` is `code + cart_prg_map[i]`, as
    // `prg_bank[i]`; `code_bank[0..3]`, the addresses below $8000, all point at the QF_NONE
    // words, so the fetch needs no test of PC first. Derived: `cart_prg_windows` sets them.
    const u32* code;
    const u32* code_bank[8];
    // Cpu::settled: `lines` of the last interrupt sample when another sample with the same
    // lines would change nothing (the pipeline has settled), else CPU_UNSETTLED; a cycle then
    // skips the sample's stores (nes-core perf-notes #30, #31). The sample also reads P's I
    // flag, so everything that changes I (or the pipeline outside `cpu_sample`) unsettles it,
    // and so do `nes_init`, `nes_step` and `nes_run_frame` on entry.
    u8 settled;
    // The console's state, held in the view itself rather than behind a pointer: in the kernels
    // `Nes` is a thread-local variable, so every field is a local load at a fixed offset from it,
    // with no pointer to load first and no generic address to convert (kernel-notes #30).
    FlatState st;
    // The drawn frame's record for drawing it after it ran, line by line (kernels/lines.cuh);
    // null: none kept (every frame but the last of a step drawn that way).
    struct LineLog* line_log;
#ifdef NESLE_PPU_LOG
    // The CPU's PPU and mapper register accesses of this frame, for drawing it afterwards by
    // replaying the PPU alone (kernels/replay.cuh); null: none logged.
    struct PpuLog* log;
#endif
};

// Halts the console with `fault` (1: a JAM opcode at `pc`; 2: stalled), and keeps
// `Nes::attention` with it: every fault goes through here.
NESLE_FN void nes_halt(Nes& n, u8 fault, u8 opcode, u16 pc) {
    n.st.cpu_fault = fault;
    n.attention = 1;
    n.st.cpu_fault_opcode = opcode;
    n.st.cpu_fault_pc = pc;
}

#ifdef NESLE_PPU_LOG
// One access: the PPU's dot clock when it took effect (the PPU may stand behind the CPU then,
// and the replay applies it at the same dot), the bus cycle (mapper writes), address, value.
struct PpuEvent {
    u64 dot;
    u64 cycle;
    u16 addr;
    u8 value;
    u8 kind;  // PPU_EVENT_*
};
#define PPU_EVENT_READ 0
#define PPU_EVENT_WRITE 1
#define PPU_EVENT_CART 2
struct PpuLog {
    PpuEvent* events;
    u32 count;
    u32 capacity;
    bool overflow;
};
NESLE_FN void ppu_log(Nes& n, u8 kind, u16 addr, u8 value, u64 cycle) {
    PpuLog* l = n.log;
    if (!l) return;
    if (l->count == l->capacity) {
        l->overflow = true;
        return;
    }
    l->events[l->count++] = PpuEvent{n.st.ppu_dot_clock, cycle, addr, value, kind};
}
#endif

// What the line renderer (kernels/lines.cuh) needs of a frame besides the state after it: the
// PPU's scroll and control registers at dot 0 of the pre-render line, where drawing starts, and
// an event for each change from there on, with the dot clock it took effect at (the PPU may
// stand behind the CPU; a dot after that clock sees it): a write to $2000, $2001, $2005 or
// $2006; with rendering off, a `$2007` access that moves `v` into or out of the palette (whose
// colour such a frame shows where `v` points into it) and each palette write (with the value
// it replaced, so the palette at any dot follows from the one after the frame). Anything else
// the picture could depend on that changes from there on marks the frame LINES_REDRAW, to be
// drawn again by running it once more from a copy of the state before it: `v` moved by the CPU
// while rendering is on, OAM, a CHR bank or the mirroring, more than LINE_EVENTS events.
#define LINE_EVENTS 126
#define LINES_STARTED 1u
#define LINES_REDRAW 2u
#define LINE_EV_REGS 0     // a register write
#define LINE_EV_V 1        // `v` moved by a `$2007` access
#define LINE_EV_PALETTE 2  // palette entry `index`: `old` -> `value` (then `v` moved on)
struct LineEvent {
    u32 dot;  // PPU dot clock - LineLog::start
    u16 t, v;  // the registers after the event
    u8 x, ctrl, mask, kind;
    u8 index, old, value, pad;
};
struct LineLog {
    u64 start;  // the PPU's dot clock at dot 0 of the pre-render line
    u16 t, v;
    u8 x, ctrl, mask, odd;  // odd: an odd frame (its pre-render line is a dot short with rendering on)
    u32 count;
    u32 flags;  // LINES_*
    LineEvent events[LINE_EVENTS];
};
static_assert(sizeof(LineEvent) == 16 && sizeof(LineLog) == 2040, "launch.rs LINE_LOG_BYTES");
static_assert(__builtin_offsetof(LineLog, flags) == 20 && LINES_REDRAW == 2, "launch.rs LINE_LOG_FLAGS_AT, LINES_REDRAW");

// A frame the renderer cannot draw from its log (a CHR bank or mirroring change while drawn;
// the other hooks are in ppu_state.cuh, lines_log_*).
NESLE_DEV void lines_log_redraw(Nes& n) {
    LineLog* l = n.line_log;
    if (l->flags & LINES_STARTED) l->flags |= LINES_REDRAW;
}

// A `Nes::settled` value no lines byte (bits 0-1) can equal (nes-core `UNSETTLED`).
#define CPU_UNSETTLED 0xff

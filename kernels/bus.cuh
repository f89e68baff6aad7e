// The CPU address space and the console clock (nes-core bus.rs + controller.rs).
//
// The PPU runs lazily, as in nes-core ("catch-up PPU"): each CPU cycle owes it 3 dots (owed =
// `3 * bus_cycles - n.ppu_done`), and they run in one `ppu_run` batch only when something could
// observe the difference: before an access to $2000-$3FFF, each OAM DMA write and a write to
// $8000-$FFFF (mapper banking), all but the cycle's third dot, so the access sees the PPU one
// dot before the CPU's end-of-cycle NMI sample does (the $2002 read race of ppu_vbl_nmi 05-08);
// and at the end of the cycle `n.ppu_deadline` where the owed dots reach the next dot where the
// NMI line can change by itself (`ppu_dots_to_nmi_event`). MMC3 boards get a deadline of every
// cycle (the CPU samples their A12-driven IRQ line each cycle).
//
// The APU runs lazily too (nes-core perf-notes #20): `bus_cycles` runs ahead of `n.apu_synced`,
// and `apu_run` catches it up before $4015 reads and $4000-$4017 writes, at `n.apu_deadline`
// (`apu_cycles_to_event`: the cycle where its IRQ line may rise or the DMC may want a DMA; the
// end-of-cycle check catches up there, so the CPU's IRQ sample and the next read's DMA test see
// the exact APU), and at the end of every frame.
//
// Both deadlines are cycle numbers, so a cycle costs `bus_cycles += 1` and one compare against
// their minimum (`n.deadline`) at its end; a pending OAM DMA sets that minimum to 0 (nes-core
// perf-notes #22). The console catches both up at the end of every frame (`nes_run_frame`), so
// the saved state is exact there.
#pragma once
#include "console_types.cuh"
#include "cart.cuh"
#include "ppu.cuh"
#include "apu.cuh"

// --- controller.rs ---

NESLE_FN void pads_write_strobe(FlatState& s, u8 v) {
    s.pad_strobe = v & 1;
    if (s.pad_strobe) {
        s.pad_shift[0] = s.pad_buttons[0];
        s.pad_shift[1] = s.pad_buttons[1];
    }
}

NESLE_FN u8 pads_read(FlatState& s, u32 port) {
    if (s.pad_strobe) return s.pad_buttons[port] & 1;
    u8 bit = s.pad_shift[port] & 1;
    s.pad_shift[port] = (u8)((s.pad_shift[port] >> 1) | 0x80);
    return bit;
}

// --- bus.rs ---

// Cart::prg_read: a PRG ROM byte ($8000-$FFFF) through the banking map.
NESLE_FN u8 bus_prg_read(const Nes& n, u16 addr) { return n.prg_bank[(addr >> 13) & 3][addr & 0x1fff]; }

#define LINE_NMI 1
#define LINE_IRQ 2

// Bus::refresh_lines: reads the interrupt lines again from the chips.
NESLE_FN void bus_refresh_lines(Nes& n) {
    const FlatState& s = n.st;
    n.lines = (u8)((ppu_nmi(s) ? LINE_NMI : 0) | ((apu_irq(s) || s.cart_irq_line) ? LINE_IRQ : 0));
}

// Bus::ppu_owed: PPU dots owed, 3 per cycle since the last catch-up plus any it left owed.
NESLE_FN u32 bus_ppu_owed(const Nes& n) { return (u32)(3 * n.st.bus_cycles - n.ppu_done); }

// Bus::update_deadlines: the two combined deadlines after one of their parts changed.
NESLE_FN void bus_update_deadlines(Nes& n) {
    bool oam = n.st.bus_oam_dma_pending != 0;
    n.deadline = oam ? 0 : (n.ppu_deadline < n.apu_deadline ? n.ppu_deadline : n.apu_deadline);
    n.dma_deadline = oam ? 0 : n.apu_deadline;
}

// Bus::run_ppu: runs the owed dots but `keep`, then sets `ppu_deadline`: the cycle at which the
// PPU reaches the next dot where its NMI output may change by itself (every cycle for MMC3).
// Kernels only, a guard like the frame loop's: no correct run owes more than about two frames
// of dots or cycles (the PPU deadline is never a frame away; the frame loop catches both up at
// every frame end, and halts a console after NES_MAX_STEPS_PER_FRAME steps). A larger count is
// a corrupted state: halt that console (fault 2, "stalled") instead of running billions of
// dots, which would stall the launch for every env. It never fires where nes-core is matched.
#define NES_MAX_OWED (1u << 20)

NESLE_FN bool bus_owed_is_impossible(Nes& n, u32 owed) {
    if (owed <= NES_MAX_OWED) return false;
    nes_halt(n, 2, 0, n.st.cpu_pc);
    return true;
}

NESLE_DEV void bus_run_ppu(Nes& n, u32 keep) {
    u32 count = bus_ppu_owed(n) - keep;
    if (bus_owed_is_impossible(n, count)) count = 0;
    n.ppu_done = 3 * n.st.bus_cycles - keep;
    ppu_run(n, count);
    bus_refresh_lines(n);
    u32 budget = n.ppu_lazy ? ppu_dots_to_nmi_event(n.st) : 0;
    // The first cycle whose end sees `3 * cycles - ppu_done >= budget` owed dots.
    n.ppu_deadline = (n.ppu_done + budget + 2) / 3;
    bus_update_deadlines(n);
}

// Bus::set_apu_deadline: the next cycle at which the CPU could see the APU change by itself.
NESLE_FN void bus_set_apu_deadline(Nes& n) {
    n.apu_deadline = n.st.bus_cycles + apu_cycles_to_event(n.st);
    bus_update_deadlines(n);
}

// Bus::run_apu: runs the owed APU cycles (this one's included), then sets the deadline.
NESLE_DEV void bus_run_apu(Nes& n) {
    u64 owed = n.st.bus_cycles - n.apu_synced;
    apu_run(n, bus_owed_is_impossible(n, owed > NES_MAX_OWED ? NES_MAX_OWED + 1 : (u32)owed) ? 0 : (u32)owed);
    bus_refresh_lines(n);
    n.apu_synced = n.st.bus_cycles;
    bus_set_apu_deadline(n);
}

// Bus::catch_up_apu: the APU exact, so it can be read or written.
NESLE_FN void bus_catch_up_apu(Nes& n) {
    if (n.st.bus_cycles != n.apu_synced) bus_run_apu(n);
}

// Bus::tick: one CPU cycle of time for everything but the CPU, up to its access. The APU cycle
// and the 3 PPU dots are owed: both run ahead in `bus_cycles`.
NESLE_FN void bus_tick(Nes& n) { n.st.bus_cycles += 1; }

// Bus::finish_cycle_events: the PPU and/or APU at their deadline.
NESLE_DEV void bus_finish_cycle_events(Nes& n) {
    if (n.st.bus_cycles >= n.ppu_deadline) bus_run_ppu(n, 0);
    if (n.st.bus_cycles >= n.apu_deadline) bus_run_apu(n);
}

// Bus::finish_cycle: the end of a CPU cycle, before the CPU samples its interrupt lines: one
// compare against the nearer deadline. DMA cycles skip it: the CPU samples nothing while
// halted, and the owed dots carry over.
NESLE_FN void bus_finish_cycle(Nes& n) {
    if (n.st.bus_cycles >= n.deadline) bus_finish_cycle_events(n);
}

// Bus::catch_up_for_access: the owed dots but the current cycle's third, before an access that
// reads or changes PPU state (registers, OAM DMA writes, mapper banking).
NESLE_FN void bus_catch_up_for_access(Nes& n) {
    if (bus_ppu_owed(n) > 1) bus_run_ppu(n, 1);
}

// Bus::catch_up_ppu: all owed dots, between CPU instructions, so the PPU is exact for observers.
NESLE_FN void bus_catch_up_ppu(Nes& n) {
    if (bus_ppu_owed(n) != 0) bus_run_ppu(n, 0);
}

// A read without the clock: what the CPU would see at `addr` now.
NESLE_FN u8 bus_read_mem(Nes& n, u16 addr) {
    FlatState& s = n.st;
    if (addr < 0x2000) return s.ram[addr & 0x7ff];
    if (addr < 0x4000) {
        // Bus::read_mem: a `$2002` poll before the status can change needs no catch-up
        // (nes-core perf-notes #28): the owed dots but the cycle's third end before that dot.
        u32 owed = bus_ppu_owed(n);
        if (!((addr & 7) == 2 && n.ppu_lazy && (owed > 0 ? owed - 1 : 0) < ppu_dots_to_status_change(n)))
            bus_catch_up_for_access(n);
        u8 v = ppu_cpu_read(n, addr);
        bus_refresh_lines(n);
        return v;
    }
    if (addr == 0x4015) {
        bus_catch_up_apu(n);
        u8 v = apu_read_status(s);
        bus_refresh_lines(n);
        return (u8)((v & ~0x20) | (s.bus_open_bus & 0x20));
    }
    if (addr == 0x4016 || addr == 0x4017) return (u8)((s.bus_open_bus & 0xe0) | pads_read(s, addr & 1));
    if (addr < 0x4020) return s.bus_open_bus;
    return cart_cpu_read(n, addr, s.bus_open_bus);
}

NESLE_FN void bus_write_mem(Nes& n, u16 addr, u8 v) {
    FlatState& s = n.st;
    if (addr < 0x2000) {
        s.ram[addr & 0x7ff] = v;
    } else if (addr < 0x4000) {
        bus_catch_up_for_access(n);
        ppu_cpu_write(n, addr, v);
        bus_refresh_lines(n);
    } else if (addr == 0x4014) {
        s.bus_oam_dma_pending = 1;
        s.bus_oam_dma_page = v;
        bus_update_deadlines(n);
    } else if (addr == 0x4016) {
        pads_write_strobe(s, v);
    } else if (addr <= 0x4017) {
        bus_catch_up_apu(n);
        apu_write(n, addr, v);
        bus_refresh_lines(n);
        // The write may move the next IRQ or DMA ($4010, $4015, $4017).
        bus_set_apu_deadline(n);
    } else if (addr < 0x4020) {
        // disabled test registers
    } else {
        // A mapper register can switch CHR banks or mirroring under the PPU.
        if (addr >= 0x8000) bus_catch_up_for_access(n);
        cart_cpu_write(n, addr, v, s.bus_cycles);
        // MMC3's IRQ acknowledge.
        bus_refresh_lines(n);
    }
}

// DMC sample fetch (Bus::run_dmc_dma): stalls the CPU for 4 cycles (3 idle, 1 read) on a read
// cycle.
NESLE_DEV void bus_run_dmc_dma(Nes& n) {
    FlatState& s = n.st;
    u16 addr = s.dmc_addr;
    for (int i = 0; i < 4; i++) bus_tick(n);
    u8 v = bus_read_mem(n, addr);
    s.bus_open_bus = v;
    bus_catch_up_apu(n);
    dmc_dma_complete(s, v);
    bus_refresh_lines(n);
    bus_set_apu_deadline(n);
}

// Bus::check_dmc_dma: at the APU deadline, the APU caught up and its DMA run if it wants one.
NESLE_DEV void bus_check_dmc_dma(Nes& n) {
    bus_catch_up_apu(n);
    if (dmc_dma_wanted(n.st)) bus_run_dmc_dma(n);
}

// Bus::service_dmc_dma: a request can only have come up at the APU deadline (the previous cycle
// end caught the APU up there, or DMA cycles skipped that check), so the test is one compare.
NESLE_FN void bus_service_dmc_dma(Nes& n) {
    if (n.st.bus_cycles >= n.apu_deadline) bus_check_dmc_dma(n);
}

// Bus::oam_dma_in_vblank: whether the 256 writes of an OAM DMA that starts now all fall in
// vertical blank (after 241/1, before the pre-render line), where rendering is idle: there a
// `$2004` write only stores its byte and moves OAMADDR, whatever the dot, so after one catch-up
// (the PPU's own position decides) it need not catch up before each write (kernel-notes #39);
// the next access or deadline catches it up.
NESLE_FN bool bus_oam_dma_in_vblank(const Nes& n) {
    const u32 line = PPU_DOTS_PER_LINE;
    u32 pos = (u32)n.st.ppu_scanline * line + n.st.ppu_dot + bus_ppu_owed(n);
    // The 512 cycles of the transfer still to come, with a margin.
    return n.ppu_lazy && pos >= PPU_VBLANK_LINE * line + 2 && pos + 3 * 516 < PPU_PRERENDER_LINE * line;
}

// OAM DMA: the halt cycle, one more to align so the reads ("get") fall on odd cycles, then
// 256 get/put pairs: 513 or 514 cycles.
NESLE_DEV void bus_run_oam_dma(Nes& n, u8 page, u16 halted_addr) {
    FlatState& s = n.st;
    bus_tick(n);
    bus_read_mem(n, halted_addr);
    if ((s.bus_cycles & 1) == 0) {
        bus_tick(n);
        bus_read_mem(n, halted_addr);
    }
    u16 base = (u16)page << 8;
    bool in_vblank = bus_oam_dma_in_vblank(n);
    if (in_vblank) {
        bus_catch_up_for_access(n);  // once, so the PPU itself stands in vertical blank
        if (page < 0x20 && s.bus_cycles + 512 < n.apu_deadline) {
            // From RAM with no APU event due: the 256 read/write pairs touch nothing but OAM,
            // OAMADDR and the latches, so they run as one copy (kernel-notes #43).
            u32 at = base & 0x7ff;
            ppu_oam_dma_writes(n, s.ram + at);
            s.bus_open_bus = s.ram[at + 255];
            s.bus_cycles += 512;
            bus_refresh_lines(n);
            return;
        }
    }
    for (u16 i = 0; i < 256; i++) {
        bus_tick(n);
        bus_service_dmc_dma(n);
        u8 v = bus_read_mem(n, base | i);
        s.bus_open_bus = v;
        bus_tick(n);
        if (!in_vblank) bus_catch_up_for_access(n);
        ppu_cpu_write(n, 0x2004, v);
        bus_refresh_lines(n);
    }
}

// Bus::start_read_dma: the start of a read at the DMA deadline: a pending OAM DMA runs first
// (the CPU halts on this read), then a DMC fetch if the APU wants one.
NESLE_DEV void bus_start_read_dma(Nes& n, u16 addr) {
    FlatState& s = n.st;
    if (s.bus_oam_dma_pending) {
        u8 page = s.bus_oam_dma_page;
        // Option::take(): the saved form of None is (0, 0).
        s.bus_oam_dma_pending = 0;
        s.bus_oam_dma_page = 0;
        bus_update_deadlines(n);
        bus_run_oam_dma(n, page, addr);
    }
    bus_service_dmc_dma(n);
}

// CpuBus::read: one CPU read cycle (after any DMA the read halts for). Inlined into its one
// caller, `cpu_read` (out of line): one call a read instead of two, no code duplicated.
NESLE_FN u8 bus_read(Nes& n, u16 addr) {
    FlatState& s = n.st;
    // One compare for both DMAs: `dma_deadline` is 0 while an OAM DMA is pending.
    if (s.bus_cycles >= n.dma_deadline) bus_start_read_dma(n, addr);
    bus_tick(n);
    if (addr >= 0x8000) {
        // PRG ROM: most reads (opcodes, operands), straight from the map (nes-core perf #16).
        u8 v = bus_prg_read(n, addr);
        bus_finish_cycle(n);
        s.bus_open_bus = v;
        return v;
    }
    // RAM reads take bus_read_mem's first branch, inlined here: nes-core's #25 (RAM before its
    // out-of-line read_mem) has nothing to gain in the kernel (measured: -0.05% Ir).
    u8 v = bus_read_mem(n, addr);
    bus_finish_cycle(n);
    // $4015 is read inside the CPU: the external data bus keeps its old value.
    if (addr != 0x4015) s.bus_open_bus = v;
    return v;
}

NESLE_DEV void bus_write(Nes& n, u16 addr, u8 v) {
    bus_tick(n);
    n.st.bus_open_bus = v;
    bus_write_mem(n, addr, v);
    bus_finish_cycle(n);
}

// Bus::idle_jmp_iterations: how many more iterations of a `JMP` to itself (3 read cycles of
// PRG ROM) the CPU can run before a cycle end where the PPU or APU must catch up (where the NMI
// or IRQ line may change, or the DMC may want a DMA): those iterations change nothing but
// time. 0 while an OAM DMA is pending, and on MMC3 boards (their PPU deadline is every cycle).
NESLE_FN u32 bus_idle_jmp_iterations(const Nes& n) {
    u64 now = n.st.bus_cycles;
    if (n.deadline <= now) return 0;
    u64 k = (n.deadline - now - 1) / 3;
    return k > 0xffffffffull ? 0xffffffffu : (u32)k;
}

// Bus::skip_idle_jmp: `count` iterations of a `JMP` to itself at once: the clock runs 3 cycles
// each and the data bus keeps the operand's high byte (the CPU's registers do not change).
NESLE_FN void bus_skip_idle_jmp(Nes& n, u32 count) { n.st.bus_cycles += 3 * (u64)count; }

// Bus::status_poll_iterations: how many more iterations of a `$2002` poll loop (`LDA $2002;
// AND #m; BEQ/BNE` back to the `LDA`: 9 cycles, the PPU read on the 4th) the CPU can run in
// bulk: not past a cycle end where the PPU or APU must catch up (as `bus_idle_jmp_iterations`),
// and only while every skipped read comes before the first dot where the status bits may change
// (`ppu_dots_to_status_change`, never late), so each returns what a read now would. 0 on boards
// whose IRQ follows the PPU (MMC3).
NESLE_FN u32 bus_status_poll_iterations(Nes& n) {
    u64 now = n.st.bus_cycles;
    if (!n.ppu_lazy || n.deadline <= now) return 0;
    u64 by_clock = (n.deadline - now - 1) / 9;
    // The k-th skipped read runs the owed dots but its cycle's third (as `bus_read_mem`): it
    // sees the PPU `owed + 27 (k - 1) + 11` dots ahead of where it is now.
    u64 seen = (u64)bus_ppu_owed(n) + 11;
    u64 stable = ppu_dots_to_status_change(n);
    if (stable <= seen) return 0;
    u64 by_status = (stable - seen - 1) / 27 + 1;
    u64 k = by_clock < by_status ? by_clock : by_status;
    return k > 0xffffffffull ? 0xffffffffu : (u32)k;
}

// Bus::skip_status_poll: `count` iterations of a `$2002` poll loop at once, 9 cycles each; the
// caller has checked that an iteration leaves the CPU, the data bus and the PPU as they are.
NESLE_FN void bus_skip_status_poll(Nes& n, u32 count) { n.st.bus_cycles += 9 * (u64)count; }

NESLE_FN bool bus_nmi_line(const Nes& n) { return (n.lines & LINE_NMI) != 0; }

NESLE_FN bool bus_irq_line(const Nes& n) { return (n.lines & LINE_IRQ) != 0; }

NESLE_FN void bus_idle(Nes& n) {
    bus_tick(n);
    bus_finish_cycle(n);
}

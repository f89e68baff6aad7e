// The CPU address space and the console clock (nes-core bus.rs + controller.rs).
//
// The PPU runs lazily, as in nes-core ("catch-up PPU"): each CPU cycle owes it 3 dots
// (`n.ppu_owed`), and they run in one `ppu_run` batch only when something could observe the
// difference: before an access to $2000-$3FFF, each OAM DMA write and a write to $8000-$FFFF
// (mapper banking), all but the cycle's third dot, so the access sees the PPU one dot before
// the CPU's end-of-cycle NMI sample does (the $2002 read race of ppu_vbl_nmi 05-08); and at the
// end of a cycle when the owed dots reach the next dot where the NMI line can change by itself
// (`n.ppu_budget`, from `ppu_dots_to_nmi_event`). MMC3 boards get budget 0 (a catch-up at the
// end of every cycle: the CPU samples their A12-driven IRQ line each cycle). The console
// catches up at the end of every frame (`nes_run_frame`), so the saved state is exact there.
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

// Bus::run_ppu: runs the owed dots but `keep`, then sets the budget: the owed count at which
// the PPU reaches the next dot where its NMI output may change by itself (0 for MMC3).
NESLE_DEV void bus_run_ppu(Nes& n, u32 keep) {
    u32 count = n.ppu_owed - keep;
    n.ppu_owed = keep;
    ppu_run(n, count);
    n.ppu_budget = n.ppu_lazy ? ppu_dots_to_nmi_event(*n.s) : 0;
}

// Bus::tick: one CPU cycle of time for everything but the CPU, up to its access: the cycle
// count, the APU cycle, and 3 PPU dots owed.
NESLE_FN void bus_tick(Nes& n) {
    n.s->bus_cycles += 1;
    n.ppu_owed += 3;
    apu_tick(*n.s);
}

// Bus::finish_cycle: the end of a CPU cycle, before the CPU samples its interrupt lines. DMA
// cycles skip it: the CPU samples nothing while halted, and the owed dots carry over.
NESLE_FN void bus_finish_cycle(Nes& n) {
    if (n.ppu_owed >= n.ppu_budget) bus_run_ppu(n, 0);
}

// Bus::catch_up_for_access: the owed dots but the current cycle's third, before an access that
// reads or changes PPU state (registers, OAM DMA writes, mapper banking).
NESLE_FN void bus_catch_up_for_access(Nes& n) {
    if (n.ppu_owed > 1) bus_run_ppu(n, 1);
}

// Bus::catch_up_ppu: all owed dots, between CPU instructions, so the PPU is exact for observers.
NESLE_FN void bus_catch_up_ppu(Nes& n) {
    if (n.ppu_owed != 0) bus_run_ppu(n, 0);
}

// A read without the clock: what the CPU would see at `addr` now.
NESLE_FN u8 bus_read_mem(Nes& n, u16 addr) {
    FlatState& s = *n.s;
    if (addr < 0x2000) return s.ram[addr & 0x7ff];
    if (addr < 0x4000) {
        bus_catch_up_for_access(n);
        return ppu_cpu_read(n, addr);
    }
    if (addr == 0x4015) return (u8)((apu_read_status(s) & ~0x20) | (s.bus_open_bus & 0x20));
    if (addr == 0x4016 || addr == 0x4017) return (u8)((s.bus_open_bus & 0xe0) | pads_read(s, addr & 1));
    if (addr < 0x4020) return s.bus_open_bus;
    return cart_cpu_read(n, addr, s.bus_open_bus);
}

NESLE_FN void bus_write_mem(Nes& n, u16 addr, u8 v) {
    FlatState& s = *n.s;
    if (addr < 0x2000) {
        s.ram[addr & 0x7ff] = v;
    } else if (addr < 0x4000) {
        bus_catch_up_for_access(n);
        ppu_cpu_write(n, addr, v);
    } else if (addr == 0x4014) {
        s.bus_oam_dma_pending = 1;
        s.bus_oam_dma_page = v;
    } else if (addr == 0x4016) {
        pads_write_strobe(s, v);
    } else if (addr <= 0x4017) {
        apu_write(s, addr, v);
    } else if (addr < 0x4020) {
        // disabled test registers
    } else {
        // A mapper register can switch CHR banks or mirroring under the PPU.
        if (addr >= 0x8000) bus_catch_up_for_access(n);
        cart_cpu_write(n, addr, v, s.bus_cycles);
    }
}

// DMC sample fetch: stalls the CPU for 4 cycles (3 idle, 1 read) on a read cycle. The test is
// inlined into every read; the rare stall (Bus::run_dmc_dma) is not.
NESLE_DEV void bus_run_dmc_dma(Nes& n) {
    FlatState& s = *n.s;
    u16 addr = s.dmc_addr;
    for (int i = 0; i < 4; i++) bus_tick(n);
    u8 v = bus_read_mem(n, addr);
    s.bus_open_bus = v;
    dmc_dma_complete(s, v);
}

NESLE_FN void bus_service_dmc_dma(Nes& n) {
    if (dmc_dma_wanted(*n.s)) bus_run_dmc_dma(n);
}

// OAM DMA: the halt cycle, one more to align so the reads ("get") fall on odd cycles, then
// 256 get/put pairs: 513 or 514 cycles.
NESLE_DEV void bus_run_oam_dma(Nes& n, u8 page, u16 halted_addr) {
    FlatState& s = *n.s;
    bus_tick(n);
    bus_read_mem(n, halted_addr);
    if ((s.bus_cycles & 1) == 0) {
        bus_tick(n);
        bus_read_mem(n, halted_addr);
    }
    u16 base = (u16)page << 8;
    for (u16 i = 0; i < 256; i++) {
        bus_tick(n);
        bus_service_dmc_dma(n);
        u8 v = bus_read_mem(n, base | i);
        s.bus_open_bus = v;
        bus_tick(n);
        bus_catch_up_for_access(n);
        ppu_cpu_write(n, 0x2004, v);
    }
}

// CpuBus::read: one CPU read cycle (after any DMA the read halts for).
NESLE_DEV u8 bus_read(Nes& n, u16 addr) {
    FlatState& s = *n.s;
    if (s.bus_oam_dma_pending) {
        u8 page = s.bus_oam_dma_page;
        // Option::take(): the saved form of None is (0, 0).
        s.bus_oam_dma_pending = 0;
        s.bus_oam_dma_page = 0;
        bus_run_oam_dma(n, page, addr);
    }
    bus_service_dmc_dma(n);
    bus_tick(n);
    if (addr >= 0x8000) {
        // PRG ROM: most reads (opcodes, operands), straight from the map (nes-core perf #16).
        u8 v = n.prg[s.cart_prg_map[(addr >> 13) & 3] + (addr & 0x1fff)];
        bus_finish_cycle(n);
        s.bus_open_bus = v;
        return v;
    }
    u8 v = bus_read_mem(n, addr);
    bus_finish_cycle(n);
    // $4015 is read inside the CPU: the external data bus keeps its old value.
    if (addr != 0x4015) s.bus_open_bus = v;
    return v;
}

NESLE_DEV void bus_write(Nes& n, u16 addr, u8 v) {
    bus_tick(n);
    n.s->bus_open_bus = v;
    bus_write_mem(n, addr, v);
    bus_finish_cycle(n);
}

NESLE_FN bool bus_nmi_line(const Nes& n) { return ppu_nmi(*n.s); }

NESLE_FN bool bus_irq_line(const Nes& n) { return apu_irq(*n.s) || n.s->cart_irq_line; }

NESLE_FN void bus_idle(Nes& n) {
    bus_tick(n);
    bus_finish_cycle(n);
}

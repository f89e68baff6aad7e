// The CPU address space and the console clock (nes-core bus.rs + controller.rs).
//
// Each CPU access is one CPU cycle: the APU cycle and 2 PPU dots run before the access, the
// third dot after it (`dot_pending`), so the CPU's end-of-cycle NMI sample sees the PPU one
// dot after its access did (the $2002 read race of ppu_vbl_nmi 05-08).
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

NESLE_FN void bus_finish_cycle(Nes& n) {
    if (n.dot_pending) {
        n.dot_pending = 0;
        ppu_tick_call(n);
    }
}

// The clock of one CPU cycle up to its access: the previous cycle's pending third dot, the
// cycle count, two dots, the APU. One call with the dots inlined (kernel-notes change 2).
NESLE_DEV void bus_clock(Nes& n) {
    if (n.dot_pending) {
        n.dot_pending = 0;
        ppu_tick(n);
    }
    n.s->bus_cycles += 1;
    ppu_tick(n);
    ppu_tick(n);
    apu_tick(*n.s);
    n.dot_pending = 1;
}

NESLE_FN void bus_tick(Nes& n) { bus_clock(n); }

// A read without the clock: what the CPU would see at `addr` now.
NESLE_FN u8 bus_read_mem(Nes& n, u16 addr) {
    FlatState& s = *n.s;
    if (addr < 0x2000) return s.ram[addr & 0x7ff];
    if (addr < 0x4000) return ppu_cpu_read(n, addr);
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
        cart_cpu_write(n, addr, v, s.bus_cycles);
    }
}

// DMC sample fetch: stalls the CPU for 4 cycles (3 idle, 1 read) on a read cycle.
NESLE_FN void bus_service_dmc_dma(Nes& n) {
    FlatState& s = *n.s;
    if (dmc_dma_wanted(s)) {
        u16 addr = s.dmc_addr;
        for (int i = 0; i < 4; i++) bus_tick(n);
        u8 v = bus_read_mem(n, addr);
        s.bus_open_bus = v;
        dmc_dma_complete(s, v);
    }
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

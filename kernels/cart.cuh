// The cartridge (nes-core cart.rs + mapper.rs + mapper/m*.rs), function for function.
//
// Banking is precomputed as in nes-core: every register write recomputes `cart_prg_map` (four
// 8 KiB CPU windows) and `cart_chr_map` (eight 1 KiB PPU windows) as byte offsets, so the hot
// read path is one shift, one add and one load, and the mapper `switch` runs only on writes.
// Bank arithmetic is done in u64 because nes-core computes it in usize (64-bit hosts): e.g.
// MMC3's "second-last bank" wraps identically when the PRG ROM has a single 8 KiB bank.
#pragma once
#include "console_types.cuh"

#define MIR_HORIZONTAL 0
#define MIR_VERTICAL 1
#define MIR_SINGLE_LOW 2
#define MIR_SINGLE_HIGH 3
#define MIR_FOUR_SCREEN 4

#define MAPPER_NROM 0
#define MAPPER_MMC1 1
#define MAPPER_UXROM 2
#define MAPPER_CNROM 3
#define MAPPER_MMC3 4
#define MAPPER_AXROM 7
#define MAPPER_GXROM 66

// MMC3 A12 filter: a rise counts only after A12 stayed low this many PPU dots (m004_mmc3.rs).
#define MMC3_A12_MIN_LOW_DOTS 10ull

// --- mapper.rs helpers ---

// Nes::prg_bank and Nes::code_bank, derived from `cart_prg_map` (nes_init, set_prg_8k).
NESLE_FN void cart_prg_windows(Nes& n) {
    for (int i = 0; i < 4; i++) {
        n.prg_bank[i] = n.prg + n.st.cart_prg_map[i];
        n.code_bank[4 + i] = n.code + n.st.cart_prg_map[i];
        n.code_bank[i] = n.code + n.st.cart_prg_len;  // the QF_NONE words
    }
}

NESLE_FN void set_prg_8k(Nes& n, u64 b0, u64 b1, u64 b2, u64 b3) {
    FlatState& s = n.st;
    u64 count = s.cart_prg_len / 0x2000u;
    if (count == 0) count = 1;
    s.cart_prg_map[0] = (u32)((b0 % count) * 0x2000u);
    s.cart_prg_map[1] = (u32)((b1 % count) * 0x2000u);
    s.cart_prg_map[2] = (u32)((b2 % count) * 0x2000u);
    s.cart_prg_map[3] = (u32)((b3 % count) * 0x2000u);
    cart_prg_windows(n);
}

NESLE_FN void set_chr_1k(Nes& n, const u64 b[8]) {
    FlatState& s = n.st;
    u64 count = s.cart_chr_len / 0x400u;
    if (count == 0) count = 1;
    for (int i = 0; i < 8; i++) s.cart_chr_map[i] = (u32)((b[i] % count) * 0x400u);
}

NESLE_FN void set_prg_32k(Nes& n, u64 b) { set_prg_8k(n, b * 4, b * 4 + 1, b * 4 + 2, b * 4 + 3); }

NESLE_FN void set_prg_16k(Nes& n, u64 lo, u64 hi) { set_prg_8k(n, lo * 2, lo * 2 + 1, hi * 2, hi * 2 + 1); }

NESLE_FN void set_chr_8k(Nes& n, u64 b) {
    u64 banks[8];
    for (int i = 0; i < 8; i++) banks[i] = b * 8 + i;
    set_chr_1k(n, banks);
}

NESLE_FN void set_chr_4k(Nes& n, u64 lo, u64 hi) {
    u64 banks[8];
    for (int i = 0; i < 8; i++) banks[i] = i < 4 ? lo * 4 + i : hi * 4 + i - 4;
    set_chr_1k(n, banks);
}

NESLE_FN u64 prg_16k_count(const FlatState& s) {
    u64 c = s.cart_prg_len / 0x4000u;
    return c == 0 ? 1 : c;
}

// --- m001_mmc1.rs ---

NESLE_FN void mmc1_write(Nes& n, u16 addr, u8 v, u64 cycle) {
    FlatState& s = n.st;
    bool consecutive = cycle == s.cart_last_write_cycle + 1;
    s.cart_last_write_cycle = cycle;
    if (consecutive) return;
    if (v & 0x80) {
        s.cart_latch = 0;
        s.cart_latch_count = 0;
        s.cart_regs[0] |= 0x0c;
        return;
    }
    s.cart_latch |= (u8)((v & 1) << s.cart_latch_count);
    s.cart_latch_count += 1;
    if (s.cart_latch_count == 5) {
        s.cart_regs[(addr >> 13) & 3] = s.cart_latch;
        s.cart_latch = 0;
        s.cart_latch_count = 0;
    }
}

NESLE_FN void mmc1_update(Nes& n) {
    FlatState& s = n.st;
    u8 control = s.cart_regs[0];
    switch (control & 3) {
        case 0: s.cart_mirroring = MIR_SINGLE_LOW; break;
        case 1: s.cart_mirroring = MIR_SINGLE_HIGH; break;
        case 2: s.cart_mirroring = MIR_VERTICAL; break;
        default: s.cart_mirroring = MIR_HORIZONTAL; break;
    }
    u64 outer = s.cart_prg_len > 0x40000u ? (u64)(s.cart_regs[1] & 0x10) : 0;
    u64 bank = (u64)(s.cart_regs[3] & 0x0f) | outer;
    u64 banks16 = s.cart_prg_len / 0x4000u;
    if (banks16 > 16) banks16 = 16;
    if (banks16 < 1) banks16 = 1;
    u64 last = banks16 - 1;
    switch ((control >> 2) & 3) {
        case 0:
        case 1: set_prg_32k(n, bank >> 1); break;
        case 2: set_prg_16k(n, outer, bank); break;
        default: set_prg_16k(n, bank, outer | last); break;
    }
    if (control & 0x10) {
        set_chr_4k(n, s.cart_regs[1], s.cart_regs[2]);
    } else {
        set_chr_8k(n, s.cart_regs[1] >> 1);
    }
    // MMC1B: PRG bank bit 4 set disables PRG RAM.
    s.cart_prg_ram_enabled = (s.cart_regs[3] & 0x10) == 0;
}

// --- m004_mmc3.rs ---

NESLE_FN void mmc3_write(Nes& n, u16 addr, u8 v) {
    FlatState& s = n.st;
    u16 reg = addr & 0xe000;
    bool odd = addr & 1;
    if (reg == 0x8000) {
        if (!odd) s.cart_latch = v;
        else s.cart_regs[s.cart_latch & 7] = v;
    } else if (reg == 0xa000) {
        if (!odd) {
            // Mirroring is kept in `latch_count` (unused by MMC3), as nes-core does.
            if (s.cart_header_mirroring != MIR_FOUR_SCREEN) s.cart_latch_count = v & 1;
        } else {
            s.cart_prg_ram_enabled = (v & 0x80) != 0;
            s.cart_prg_ram_writable = (v & 0x40) == 0;
        }
    } else if (reg == 0xc000) {
        if (!odd) {
            s.cart_irq_latch = v;
        } else {
            s.cart_irq_counter = 0;
            s.cart_irq_reload = 1;
        }
    } else {
        if (!odd) {
            s.cart_irq_enabled = 0;
            s.cart_irq_line = 0;
        } else {
            s.cart_irq_enabled = 1;
        }
    }
}

NESLE_FN void mmc3_update(Nes& n) {
    FlatState& s = n.st;
    const u8* r = s.cart_regs;
    u64 second_last = (u64)(s.cart_prg_len / 0x2000u) - 2;
    u64 last = second_last + 1;
    if ((s.cart_latch & 0x40) == 0) {
        set_prg_8k(n, r[6], r[7], second_last, last);
    } else {
        set_prg_8k(n, second_last, r[7], r[6], last);
    }
    u64 r0 = r[0] & ~1u, r1 = r[1] & ~1u;
    u64 b[8];
    if ((s.cart_latch & 0x80) == 0) {
        b[0] = r0; b[1] = r0 + 1; b[2] = r1; b[3] = r1 + 1;
        b[4] = r[2]; b[5] = r[3]; b[6] = r[4]; b[7] = r[5];
    } else {
        b[0] = r[2]; b[1] = r[3]; b[2] = r[4]; b[3] = r[5];
        b[4] = r0; b[5] = r0 + 1; b[6] = r1; b[7] = r1 + 1;
    }
    set_chr_1k(n, b);
    if (s.cart_header_mirroring != MIR_FOUR_SCREEN) {
        s.cart_mirroring = (s.cart_latch_count & 1) ? MIR_HORIZONTAL : MIR_VERTICAL;
    }
}

NESLE_FN void mmc3_clock_counter(FlatState& s) {
    if (s.cart_irq_counter == 0 || s.cart_irq_reload) {
        s.cart_irq_counter = s.cart_irq_latch;
        s.cart_irq_reload = 0;
    } else {
        s.cart_irq_counter -= 1;
    }
    if (s.cart_irq_counter == 0 && s.cart_irq_enabled) s.cart_irq_line = 1;
}

// Out of line: inlined, its ~100 instructions sat in each of the PPU's fetch paths of every
// board (kernel-notes #92); only MMC3 calls it (`cart_ppu_addr`).
NESLE_DEV void mmc3_watch_a12(FlatState& s, u16 addr, u64 dot) {
    bool high = (addr & 0x1000) != 0;
    if (high && !s.cart_a12_high) {
        if (dot - s.cart_a12_low_since >= MMC3_A12_MIN_LOW_DOTS) mmc3_clock_counter(s);
    } else if (!high && s.cart_a12_high) {
        s.cart_a12_low_since = dot;
    }
    s.cart_a12_high = high;
}

// --- mapper.rs dispatch: one arm per board ---

NESLE_FN void mapper_update(Nes& n) {
    FlatState& s = n.st;
    switch (s.cart_kind) {
        case MAPPER_NROM:
            set_prg_16k(n, 0, prg_16k_count(s) - 1);
            set_chr_8k(n, 0);
            break;
        case MAPPER_MMC1: mmc1_update(n); break;
        case MAPPER_UXROM:
            set_prg_16k(n, s.cart_regs[0], prg_16k_count(s) - 1);
            set_chr_8k(n, 0);
            break;
        case MAPPER_CNROM:
            set_prg_16k(n, 0, prg_16k_count(s) - 1);
            set_chr_8k(n, s.cart_regs[0]);
            break;
        case MAPPER_MMC3: mmc3_update(n); break;
        case MAPPER_AXROM:
            set_prg_32k(n, s.cart_regs[0] & 0x07);
            set_chr_8k(n, 0);
            s.cart_mirroring = (s.cart_regs[0] & 0x10) ? MIR_SINGLE_HIGH : MIR_SINGLE_LOW;
            break;
        case MAPPER_GXROM:
            set_prg_32k(n, (s.cart_regs[0] >> 4) & 0x03);
            set_chr_8k(n, s.cart_regs[0] & 0x03);
            break;
        default: break;
    }
}

NESLE_DEV void mapper_write_register(Nes& n, u16 addr, u8 v, u64 cycle) {
    FlatState& s = n.st;
    switch (s.cart_kind) {
        case MAPPER_NROM: return;
        case MAPPER_MMC1: mmc1_write(n, addr, v, cycle); break;
        case MAPPER_MMC3: mmc3_write(n, addr, v); break;
        // UxROM, CNROM, AxROM, GxROM: one register, written by any $8000-$FFFF store.
        default: s.cart_regs[0] = v; break;
    }
    mapper_update(n);
}

// --- cart.rs ---

// CPU read of $4020-$FFFF; `open` (the data bus) when nothing answers.
NESLE_FN u8 cart_cpu_read(Nes& n, u16 addr, u8 open) {
    const FlatState& s = n.st;
    if (addr >= 0x8000) {
        return n.prg_bank[(addr >> 13) & 3][addr & 0x1fff];
    } else if (addr >= 0x6000 && s.cart_prg_ram_size > 0 && s.cart_prg_ram_enabled) {
        return n.prg_ram[(u32)(addr - 0x6000) % s.cart_prg_ram_size];
    }
    return open;
}

// A mapper write on the drawn frame: one that changes what the PPU reads (a CHR bank, the
// mirroring) while the frame is drawn leaves it to be drawn again (kernels/lines.cuh).
NESLE_DEV void cart_write_logged(Nes& n, u16 addr, u8 v, u64 cycle) {
    FlatState& s = n.st;
    u32 map[8];
    for (u32 i = 0; i < 8; i++) map[i] = s.cart_chr_map[i];
    u8 mirroring = s.cart_mirroring;
    mapper_write_register(n, addr, v, cycle);
    bool same = mirroring == s.cart_mirroring;
    for (u32 i = 0; i < 8; i++) same = same && map[i] == s.cart_chr_map[i];
    if (!same) lines_log_redraw(n);
}

NESLE_FN void cart_cpu_write(Nes& n, u16 addr, u8 v, u64 cycle) {
    FlatState& s = n.st;
    if (addr >= 0x8000) {
#ifdef NESLE_PPU_LOG
        ppu_log(n, PPU_EVENT_CART, addr, v, cycle);
#endif
        if (n.line_log) {
            cart_write_logged(n, addr, v, cycle);
        } else {
            mapper_write_register(n, addr, v, cycle);
        }
    } else if (addr >= 0x6000 && s.cart_prg_ram_size > 0 && s.cart_prg_ram_enabled && s.cart_prg_ram_writable) {
        n.prg_ram[(u32)(addr - 0x6000) % s.cart_prg_ram_size] = v;
    }
}

// The PPU put `addr` on its bus: MMC3 counts filtered A12 rises.
NESLE_FN void cart_ppu_addr(Nes& n, u16 addr, u64 dot) {
    if (n.st.cart_kind == MAPPER_MMC3) mmc3_watch_a12(n.st, addr, dot);
}

NESLE_FN u32 cart_chr_offset(const FlatState& s, u16 addr) {
    return s.cart_chr_map[(addr >> 10) & 7] + (addr & 0x3ff);
}

// The 1 KiB page of CIRAM that nametable `table` (0-3) shows under `mirroring`.
NESLE_FN u32 cart_nametable_page(u8 mirroring, u32 table) {
    switch (mirroring) {
        case MIR_HORIZONTAL: return table >> 1;
        case MIR_VERTICAL: return table & 1;
        case MIR_SINGLE_LOW: return 0;
        case MIR_SINGLE_HIGH: return 1;
        default: return table;
    }
}

NESLE_FN u32 cart_nametable_offset(const FlatState& s, u16 addr) {
    return cart_nametable_page(s.cart_mirroring, (addr >> 10) & 3) * 0x400 + (addr & 0x3ff);
}

// The pattern bytes from CHR address `addr` on (a tile row's low plane at 0, its high plane at 8),
// without the mapper's A12 watch: for the batch paths, which watch the fetches themselves.
NESLE_FN const u8* cart_chr_row(const Nes& n, u16 addr) {
    const FlatState& s = n.st;
    return (s.cart_chr_is_ram ? s.cart_chr_ram : n.chr) + cart_chr_offset(s, addr);
}

NESLE_FN u8 cart_ppu_read(Nes& n, u16 addr, u64 dot) {
    cart_ppu_addr(n, addr, dot);
    const FlatState& s = n.st;
    if (addr < 0x2000) {
        u32 off = cart_chr_offset(s, addr);
        return s.cart_chr_is_ram ? s.cart_chr_ram[off] : n.chr[off];
    }
    return s.cart_ciram[cart_nametable_offset(s, addr)];
}

NESLE_FN void cart_ppu_write(Nes& n, u16 addr, u8 v, u64 dot) {
    cart_ppu_addr(n, addr, dot);
    FlatState& s = n.st;
    if (addr < 0x2000) {
        if (s.cart_chr_is_ram) s.cart_chr_ram[cart_chr_offset(s, addr)] = v;
    } else {
        s.cart_ciram[cart_nametable_offset(s, addr)] = v;
    }
}

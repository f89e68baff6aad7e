// The 2A03's 6502 core (nes-core cpu.rs), one bus cycle at a time, function for function.
//
// Decode is table-driven: `NESLE_OP_MN` / `NESLE_OP_MODE` (generated/ops.h, generated from
// nes_core::cpu::ops::OPS) give mnemonic and addressing mode; the access class of the mnemonic
// routes it to one executor, exactly as in nes-core. A JAM opcode sets `cpu_fault` and the CPU
// then only lets time pass (never `trap`: that would kill the CUDA context for every env).
#pragma once
#include "console_types.cuh"
#include "generated/ops.h"
#include "bus.cuh"

#define FLAG_C 0x01
#define FLAG_Z 0x02
#define FLAG_I 0x04
#define FLAG_D 0x08
#define FLAG_B 0x10
#define FLAG_U 0x20
#define FLAG_V 0x40
#define FLAG_N 0x80

#define NMI_VECTOR 0xfffa
#define RESET_VECTOR 0xfffc
#define IRQ_VECTOR 0xfffe

// `Nes::attention` from the fields it stands for.
NESLE_FN void cpu_update_attention(Nes& n) {
    const FlatState& s = n.st;
    n.attention = (u8)(s.cpu_reset_pending | s.cpu_fault | s.cpu_nmi_take | s.cpu_irq_take);
}

// The sample of a pipeline that is not settled. Out of line: it runs in about one bus cycle
// of 4,000 in B, and inlined its ~35 instructions sat inside cpu_read's and cpu_write's hot
// code (kernel-notes #94).
NESLE_DEV void cpu_sample_unsettled(Nes& n, u8 key) {
    FlatState& s = n.st;
    s.cpu_nmi_take = s.cpu_nmi_pending;
    bool line = (key & LINE_NMI) != 0;
    if (line && !s.cpu_nmi_prev_line) s.cpu_nmi_pending = 1;
    s.cpu_nmi_prev_line = line;
    s.cpu_irq_take = s.cpu_irq_run;
    s.cpu_irq_run = (key & LINE_IRQ) != 0 && (s.cpu_p & FLAG_I) == 0;
    cpu_update_attention(n);
    // Settled: with the same key the next sample copies equal values and sees no edge.
    bool settled = s.cpu_nmi_take == s.cpu_nmi_pending && s.cpu_irq_take == s.cpu_irq_run;
    n.settled = settled ? key : (u8)CPU_UNSETTLED;
}

// End-of-cycle interrupt sampling (the two-stage pipeline of cpu.rs) on the lines `key` and the
// settled key `settled`, loaded by the caller: Cpu::sample's settled test (#30, #31), with the
// key of a settled pipeline nothing moves.
NESLE_FN void cpu_sample_on(Nes& n, u8 key, u8 settled) {
    if (key != settled) cpu_sample_unsettled(n, key);
}

NESLE_FN void cpu_sample(Nes& n) { cpu_sample_on(n, n.lines, n.settled); }

// Cpu::unsettle: the next end-of-cycle sample a full one, after a change to I or to the
// interrupt pipeline outside `cpu_sample`.
NESLE_FN void cpu_unsettle(Nes& n) { n.settled = CPU_UNSETTLED; }

// Cpu::interrupts_at_rest: nothing pending or being polled, and the sampled lines equal the
// bus's now, so another instruction that changes neither the lines nor I leaves the pipeline
// exactly as it is (the idle-loop fast-forward relies on this).
NESLE_FN bool cpu_interrupts_at_rest(const Nes& n) {
    const FlatState& s = n.st;
    return !(s.cpu_nmi_pending || s.cpu_nmi_take || s.cpu_irq_run || s.cpu_irq_take || s.cpu_reset_pending) &&
           !s.cpu_fault && (s.cpu_nmi_prev_line != 0) == bus_nmi_line(n) &&
           !(bus_irq_line(n) && (s.cpu_p & FLAG_I) == 0);
}

// Any read or write: the bus cycle, then the interrupt sample.
NESLE_DEV u8 cpu_read_any(Nes& n, u16 addr) {
    u8 v = bus_read(n, addr);
    cpu_sample(n);
    return v;
}

NESLE_DEV void cpu_write_any(Nes& n, u16 addr, u8 v) {
    bus_write(n, addr, v);
    cpu_sample(n);
}

// The common read: PRG ROM or RAM in a cycle with nothing at its end (before `n.deadline`,
// which is also before any DMA), done in a few instructions (bus_read's clock, byte and data
// bus, then the sample). Returns false, having done nothing, for every other read
// (kernel-notes #22; inline in cpu_read only since #56).
NESLE_FN bool cpu_read_common(Nes& n, u16 addr, u8& v) {
    FlatState& s = n.st;
    // The sample's lines and settled key are loaded before the test, so that their loads wait
    // alongside the clock's and the deadline's instead of after the byte's (kernel-notes
    // #100c); nothing on this path changes them.
    u8 key = n.lines, settled = n.settled;
    NESLE_KEEP_HERE(key);
    NESLE_KEEP_HERE(settled);
    u64 c = s.bus_cycles + 1;
    if (!(c < n.deadline && (addr >= 0x8000 || addr < 0x2000))) return false;
    s.bus_cycles = c;
    v = addr >= 0x8000 ? bus_prg_read(n, addr) : s.ram[addr & 0x7ff];
    s.bus_open_bus = v;
    cpu_sample_on(n, key, settled);
    return true;
}

// Out of line, as cpu_write: inlining the interrupt sample into each of the ~40 call sites
// made the CPU's hot code overflow the instruction cache (docs/kernel-notes.md, row 11).
NESLE_DEV u8 cpu_read(Nes& n, u16 addr) {
    u8 v;
    return cpu_read_common(n, addr, v) ? v : cpu_read_any(n, addr);
}

// As cpu_read: a RAM write in a cycle with nothing at its end here, the rest in cpu_write_any.
NESLE_DEV void cpu_write(Nes& n, u16 addr, u8 v) {
    FlatState& s = n.st;
    u8 key = n.lines, settled = n.settled;  // loaded before the test, as in cpu_read_common
    NESLE_KEEP_HERE(key);
    NESLE_KEEP_HERE(settled);
    u64 c = s.bus_cycles + 1;
    if (c < n.deadline && addr < 0x2000) {
        s.bus_cycles = c;
        s.bus_open_bus = v;
        s.ram[addr & 0x7ff] = v;
        cpu_sample_on(n, key, settled);
        return;
    }
    cpu_write_any(n, addr, v);
}

NESLE_FN u8 cpu_fetch(Nes& n) {
    u8 v = cpu_read(n, n.st.cpu_pc);
    n.st.cpu_pc += 1;
    return v;
}

NESLE_FN void cpu_push(Nes& n, u8 v) {
    cpu_write(n, 0x100 | n.st.cpu_s, v);
    n.st.cpu_s -= 1;
}

NESLE_FN u8 cpu_pull(Nes& n) {
    n.st.cpu_s += 1;
    return cpu_read(n, 0x100 | n.st.cpu_s);
}

// The ALU helpers below take `s`: FlatState, or the quiet path's registers (quiet.cuh), which
// carry the same field names.
template <class R>
NESLE_FN void cpu_set_zn(R& s, u8 v) {
    s.cpu_p = (u8)((s.cpu_p & ~(FLAG_Z | FLAG_N)) | (v & FLAG_N) | (v == 0 ? FLAG_Z : 0));
}

template <class R>
NESLE_FN void cpu_set_flag(R& s, u8 flag, bool on) {
    if (on) s.cpu_p |= flag;
    else s.cpu_p &= (u8)~flag;
}

NESLE_FN u16 le16(u8 lo, u8 hi) { return (u16)(lo | ((u16)hi << 8)); }

NESLE_DEV void cpu_run_reset(Nes& n) {
    FlatState& s = n.st;
    cpu_read(n, s.cpu_pc);
    cpu_read(n, s.cpu_pc);
    for (int i = 0; i < 3; i++) {
        cpu_read(n, 0x100 | s.cpu_s);
        s.cpu_s -= 1;
    }
    s.cpu_p |= FLAG_I;
    cpu_unsettle(n);
    u8 lo = cpu_read(n, RESET_VECTOR);
    u8 hi = cpu_read(n, RESET_VECTOR + 1);
    s.cpu_pc = le16(lo, hi);
    s.cpu_reset_pending = 0;
    s.cpu_nmi_pending = 0;
    s.cpu_nmi_take = 0;
    s.cpu_irq_take = 0;
    cpu_update_attention(n);
    cpu_unsettle(n);
}

// PLP, and the first four cycles of RTI: P pulled (B and U are not flags in the register).
NESLE_FN void cpu_plp(Nes& n) {
    FlatState& s = n.st;
    cpu_read(n, s.cpu_pc);
    cpu_read(n, 0x100 | s.cpu_s);
    u8 p = cpu_pull(n);
    s.cpu_p = p & (u8)~(FLAG_B | FLAG_U);
    cpu_unsettle(n);
}

// The last five cycles of an interrupt and of BRK: PC and P pushed (`b`: the B flag as pushed),
// I set, PC from the vector; an NMI pending by the P push takes the sequence over.
NESLE_FN void cpu_push_and_vector(Nes& n, u8 b) {
    FlatState& s = n.st;
    cpu_push(n, (u8)(s.cpu_pc >> 8));
    cpu_push(n, (u8)s.cpu_pc);
    u16 vector = IRQ_VECTOR;
    if (s.cpu_nmi_pending) {
        s.cpu_nmi_pending = 0;
        cpu_unsettle(n);
        vector = NMI_VECTOR;
    }
    cpu_push(n, s.cpu_p | b | FLAG_U);
    s.cpu_p |= FLAG_I;
    cpu_unsettle(n);
    u8 lo = cpu_read(n, vector);
    u8 hi = cpu_read(n, vector + 1);
    s.cpu_pc = le16(lo, hi);
}

// The 7-cycle IRQ/NMI sequence; an NMI detected before the vector fetch takes it over.
NESLE_DEV void cpu_interrupt(Nes& n) {
    FlatState& s = n.st;
    cpu_read(n, s.cpu_pc);
    cpu_read(n, s.cpu_pc);
    cpu_push_and_vector(n, 0);
}

// base + index with the dummy read of the un-carried address: always for writes and
// read-modify-writes, only on a page crossing for reads.
NESLE_FN u16 cpu_indexed(Nes& n, u16 base, u8 idx, u8 access) {
    u16 addr = (u16)(base + idx);
    bool crossed = ((base ^ addr) & 0xff00) != 0;
    if (crossed || access != ACCESS_READ) cpu_read(n, (base & 0xff00) | (addr & 0x00ff));
    return addr;
}

// Effective address of a memory operand, performing the mode's cycles. Out of line: one copy
// for the read, write and read-modify-write classes instead of three (kernel-notes #59).
NESLE_DEV u16 cpu_address(Nes& n, u8 mode, u8 access) {
    FlatState& s = n.st;
    if (mode < MODE_ZP || mode > MODE_IZY) return s.cpu_pc;
    // Every memory mode starts with its operand's first byte, and the indirect ones read their
    // pointer's two bytes alike: one copy of each fetch, not one a mode (kernel-notes #104).
    u8 b = cpu_fetch(n);
    switch (mode) {
        case MODE_ZP: return b;
        case MODE_ZPX:
        case MODE_ZPY:
            cpu_read(n, b);
            return (u8)(b + (mode == MODE_ZPX ? s.cpu_x : s.cpu_y));
        case MODE_IZX:
        case MODE_IZY: {
            u8 p = b;
            if (mode == MODE_IZX) {
                cpu_read(n, b);
                p = (u8)(b + s.cpu_x);
            }
            u8 lo = cpu_read(n, p);
            u8 hi = cpu_read(n, (u8)(p + 1));
            u16 addr = le16(lo, hi);
            return mode == MODE_IZX ? addr : cpu_indexed(n, addr, s.cpu_y, access);
        }
        default: {  // MODE_ABS, MODE_ABX, MODE_ABY
            u8 hi = cpu_fetch(n);
            u16 base = le16(b, hi);
            if (mode == MODE_ABS) return base;
            return cpu_indexed(n, base, mode == MODE_ABX ? s.cpu_x : s.cpu_y, access);
        }
    }
}

NESLE_FN u8 cpu_operand(Nes& n, u8 mode) {
    if (mode == MODE_IMM) return cpu_fetch(n);
    u16 addr = cpu_address(n, mode, ACCESS_READ);
    return cpu_read(n, addr);
}

template <class R>
NESLE_FN void cpu_compare(R& s, u8 reg, u8 v) {
    cpu_set_flag(s, FLAG_C, reg >= v);
    cpu_set_zn(s, (u8)(reg - v));
}

template <class R>
NESLE_FN void cpu_adc_binary(R& s, u8 v) {
    u16 sum = (u16)(s.cpu_a + v + (s.cpu_p & FLAG_C));
    u8 r = (u8)sum;
    cpu_set_flag(s, FLAG_C, sum > 0xff);
    cpu_set_flag(s, FLAG_V, ((~(s.cpu_a ^ v)) & (s.cpu_a ^ r) & 0x80) != 0);
    s.cpu_a = r;
    cpu_set_zn(s, r);
}

// NMOS BCD (test-only `decimal_mode`; the 2A03 has none). N, V, Z from the binary results.
// Out of line, as the other code no game runs (kernel-notes #64): cold code inside the hot
// functions spreads them over more instruction-cache lines.
NESLE_DEV void cpu_adc_decimal(FlatState& s, u8 v) {
    u32 c = s.cpu_p & FLAG_C;
    u32 a = s.cpu_a;
    u8 bin = (u8)(a + v + c);
    u32 lo = (a & 0x0f) + (v & 0x0f) + c;
    if (lo > 9) lo += 6;
    u32 r = (a & 0xf0) + (v & 0xf0) + (lo > 0x0f ? 0x10 : 0) + (lo & 0x0f);
    cpu_set_flag(s, FLAG_Z, bin == 0);
    cpu_set_flag(s, FLAG_N, (r & 0x80) != 0);
    cpu_set_flag(s, FLAG_V, ((~(a ^ v)) & (a ^ r) & 0x80) != 0);
    if (r > 0x9f) r += 0x60;
    cpu_set_flag(s, FLAG_C, r > 0xff);
    s.cpu_a = (u8)r;
}

NESLE_DEV void cpu_sbc_decimal(FlatState& s, u8 v) {
    i32 borrow = 1 - (i32)(s.cpu_p & FLAG_C);
    i32 a = s.cpu_a;
    i32 bin = a - (i32)v - borrow;
    i32 lo = (a & 0x0f) - (i32)(v & 0x0f) - borrow;
    i32 hi = (a >> 4) - (i32)(v >> 4);
    if (lo < 0) {
        lo -= 6;
        hi -= 1;
    }
    if (hi < 0) hi -= 6;
    u8 r8 = (u8)bin;
    cpu_set_flag(s, FLAG_C, bin >= 0);
    cpu_set_flag(s, FLAG_Z, r8 == 0);
    cpu_set_flag(s, FLAG_N, (r8 & 0x80) != 0);
    cpu_set_flag(s, FLAG_V, ((a ^ (i32)v) & (a ^ bin) & 0x80) != 0);
    s.cpu_a = (u8)(((hi << 4) | (lo & 0x0f)) & 0xff);
}

template <class R>
NESLE_FN void cpu_adc(R& s, u8 v) {
    if (s.cpu_decimal_mode && (s.cpu_p & FLAG_D)) cpu_adc_decimal(s, v);
    else cpu_adc_binary(s, v);
}

template <class R>
NESLE_FN void cpu_sbc(R& s, u8 v) {
    if (s.cpu_decimal_mode && (s.cpu_p & FLAG_D)) cpu_sbc_decimal(s, v);
    else cpu_adc_binary(s, (u8)~v);
}

template <class R>
NESLE_FN u8 cpu_asl(R& s, u8 v) {
    cpu_set_flag(s, FLAG_C, (v & 0x80) != 0);
    u8 r = (u8)(v << 1);
    cpu_set_zn(s, r);
    return r;
}

template <class R>
NESLE_FN u8 cpu_lsr(R& s, u8 v) {
    cpu_set_flag(s, FLAG_C, (v & 1) != 0);
    u8 r = v >> 1;
    cpu_set_zn(s, r);
    return r;
}

template <class R>
NESLE_FN u8 cpu_rol(R& s, u8 v) {
    u8 r = (u8)((v << 1) | (s.cpu_p & FLAG_C));
    cpu_set_flag(s, FLAG_C, (v & 0x80) != 0);
    cpu_set_zn(s, r);
    return r;
}

template <class R>
NESLE_FN u8 cpu_ror(R& s, u8 v) {
    u8 r = (u8)((v >> 1) | ((s.cpu_p & FLAG_C) << 7));
    cpu_set_flag(s, FLAG_C, (v & 1) != 0);
    cpu_set_zn(s, r);
    return r;
}

// The unofficial read opcodes (kernel-notes #64: out of line, no game's hot path uses them).
NESLE_DEV void cpu_exec_read_unofficial(FlatState& s, u8 mn, u8 v) {
    switch (mn) {
        case MN_ANC:
            s.cpu_a &= v;
            cpu_set_zn(s, s.cpu_a);
            cpu_set_flag(s, FLAG_C, (s.cpu_a & 0x80) != 0);
            break;
        case MN_ALR:
            s.cpu_a &= v;
            s.cpu_a = cpu_lsr(s, s.cpu_a);
            break;
        case MN_ARR: {
            u8 r = (u8)(((s.cpu_a & v) >> 1) | ((s.cpu_p & FLAG_C) << 7));
            s.cpu_a = r;
            cpu_set_zn(s, r);
            cpu_set_flag(s, FLAG_C, (r & 0x40) != 0);
            cpu_set_flag(s, FLAG_V, (((r >> 6) ^ (r >> 5)) & 1) != 0);
            break;
        }
        case MN_XAA:
            s.cpu_a = (u8)((s.cpu_a | 0xee) & s.cpu_x & v);
            cpu_set_zn(s, s.cpu_a);
            break;
        case MN_LXA: s.cpu_a = v; s.cpu_x = v; cpu_set_zn(s, v); break;
        case MN_AXS: {
            u8 ax = s.cpu_a & s.cpu_x;
            u8 r = (u8)(ax - v);
            cpu_set_flag(s, FLAG_C, ax >= v);
            s.cpu_x = r;
            cpu_set_zn(s, r);
            break;
        }
        case MN_LAS: {
            u8 r = v & s.cpu_s;
            s.cpu_a = r;
            s.cpu_x = r;
            s.cpu_s = r;
            cpu_set_zn(s, r);
            break;
        }
        default: break;
    }
}

template <class R>
NESLE_FN void cpu_exec_read(R& s, u8 mn, u8 v) {
    switch (mn) {
        case MN_LDA: s.cpu_a = v; cpu_set_zn(s, v); break;
        case MN_LDX: s.cpu_x = v; cpu_set_zn(s, v); break;
        case MN_LDY: s.cpu_y = v; cpu_set_zn(s, v); break;
        case MN_LAX: s.cpu_a = v; s.cpu_x = v; cpu_set_zn(s, v); break;
        case MN_AND: s.cpu_a &= v; cpu_set_zn(s, s.cpu_a); break;
        case MN_ORA: s.cpu_a |= v; cpu_set_zn(s, s.cpu_a); break;
        case MN_EOR: s.cpu_a ^= v; cpu_set_zn(s, s.cpu_a); break;
        case MN_ADC: cpu_adc(s, v); break;
        case MN_SBC: cpu_sbc(s, v); break;
        case MN_CMP: cpu_compare(s, s.cpu_a, v); break;
        case MN_CPX: cpu_compare(s, s.cpu_x, v); break;
        case MN_CPY: cpu_compare(s, s.cpu_y, v); break;
        case MN_BIT:
            s.cpu_p = (u8)((s.cpu_p & ~(FLAG_Z | FLAG_V | FLAG_N)) | (v & (FLAG_V | FLAG_N)) |
                           ((s.cpu_a & v) == 0 ? FLAG_Z : 0));
            break;
        case MN_NOP: break;
        default: cpu_exec_read_unofficial(s, mn, v); break;
    }
}

NESLE_DEV void cpu_exec_unstable_store(Nes& n, u8 mn, u8 mode);

NESLE_FN void cpu_exec_write(Nes& n, u8 mn, u8 mode) {
    FlatState& s = n.st;
    if (mn == MN_STA || mn == MN_STX || mn == MN_STY || mn == MN_SAX) {
        u16 addr = cpu_address(n, mode, ACCESS_WRITE);
        u8 v = mn == MN_STA ? s.cpu_a : mn == MN_STX ? s.cpu_x : mn == MN_STY ? s.cpu_y : (u8)(s.cpu_a & s.cpu_x);
        cpu_write(n, addr, v);
        return;
    }
    cpu_exec_unstable_store(n, mn, mode);
}

// SHA/SHX/SHY/TAS, out of line (kernel-notes #64).
NESLE_DEV void cpu_exec_unstable_store(Nes& n, u8 mn, u8 mode) {
    FlatState& s = n.st;
    // SHA/SHX/SHY/TAS store reg & (high byte of base + 1); a page crossing also puts that
    // value in the high byte of the address.
    u16 base;
    u8 idx;
    if (mode == MODE_IZY) {
        u8 ptr = cpu_fetch(n);
        u8 lo = cpu_read(n, ptr);
        u8 hi = cpu_read(n, (u8)(ptr + 1));
        base = le16(lo, hi);
        idx = s.cpu_y;
    } else {
        u8 lo = cpu_fetch(n);
        u8 hi = cpu_fetch(n);
        base = le16(lo, hi);
        idx = mode == MODE_ABX ? s.cpu_x : s.cpu_y;
    }
    u16 addr = (u16)(base + idx);
    cpu_read(n, (base & 0xff00) | (addr & 0x00ff));
    u8 reg;
    if (mn == MN_SHA) reg = s.cpu_a & s.cpu_x;
    else if (mn == MN_SHX) reg = s.cpu_x;
    else if (mn == MN_SHY) reg = s.cpu_y;
    else {
        s.cpu_s = s.cpu_a & s.cpu_x;
        reg = s.cpu_s;
    }
    u8 v = reg & (u8)((base >> 8) + 1);
    bool crossed = ((base ^ addr) & 0xff00) != 0;
    u16 target = crossed ? (u16)(((u16)v << 8) | (addr & 0xff)) : addr;
    cpu_write(n, target, v);
}

// The unofficial read-modify-writes (kernel-notes #64: out of line).
NESLE_DEV u8 cpu_modify_unofficial(FlatState& s, u8 mn, u8 v) {
    switch (mn) {
        case MN_SLO: { u8 r = cpu_asl(s, v); s.cpu_a |= r; cpu_set_zn(s, s.cpu_a); return r; }
        case MN_RLA: { u8 r = cpu_rol(s, v); s.cpu_a &= r; cpu_set_zn(s, s.cpu_a); return r; }
        case MN_SRE: { u8 r = cpu_lsr(s, v); s.cpu_a ^= r; cpu_set_zn(s, s.cpu_a); return r; }
        case MN_RRA: { u8 r = cpu_ror(s, v); cpu_adc(s, r); return r; }
        case MN_DCP: { u8 r = (u8)(v - 1); cpu_compare(s, s.cpu_a, r); return r; }
        case MN_ISC: { u8 r = (u8)(v + 1); cpu_sbc(s, r); return r; }
        default: return v;
    }
}

template <class R>
NESLE_FN u8 cpu_modify(R& s, u8 mn, u8 v) {
    switch (mn) {
        case MN_ASL: return cpu_asl(s, v);
        case MN_LSR: return cpu_lsr(s, v);
        case MN_ROL: return cpu_rol(s, v);
        case MN_ROR: return cpu_ror(s, v);
        case MN_INC: { u8 r = (u8)(v + 1); cpu_set_zn(s, r); return r; }
        case MN_DEC: { u8 r = (u8)(v - 1); cpu_set_zn(s, r); return r; }
        default: return cpu_modify_unofficial(s, mn, v);
    }
}

// A branch opcode (xxy10000) tests the flag its bits 7-6 name (N, V, C, Z) against bit 5.
NESLE_FN bool cpu_branch_taken(u8 p, u8 opcode) {
    u8 flag = (u8)(((u32)FLAG_Z << 24 | (u32)FLAG_C << 16 | (u32)FLAG_V << 8 | FLAG_N) >> ((opcode >> 6) * 8));
    return ((p & flag) != 0) == ((opcode & 0x20) != 0);
}

NESLE_FN void cpu_branch(Nes& n, bool taken) {
    FlatState& s = n.st;
    i8 offset = (i8)cpu_fetch(n);
    if (!taken) return;
    // A taken branch that crosses no page does not poll interrupts on its last cycle.
    if (s.cpu_irq_run && !s.cpu_irq_take) s.cpu_irq_run = 0;
    cpu_read(n, s.cpu_pc);
    u16 target = (u16)(s.cpu_pc + (u16)(i16)offset);
    if ((target ^ s.cpu_pc) & 0xff00) cpu_read(n, (s.cpu_pc & 0xff00) | (target & 0x00ff));
    s.cpu_pc = target;
}

// The implied instructions that only move registers and flags (all but CLI and SEI, which
// change I: cpu_implied), on `s`: FlatState, or the quiet path's registers (quiet.cuh).
template <class R>
NESLE_FN void cpu_implied_registers(R& s, u8 mn) {
    switch (mn) {
        case MN_CLC: s.cpu_p &= (u8)~FLAG_C; break;
        case MN_SEC: s.cpu_p |= FLAG_C; break;
        case MN_CLV: s.cpu_p &= (u8)~FLAG_V; break;
        case MN_CLD: s.cpu_p &= (u8)~FLAG_D; break;
        case MN_SED: s.cpu_p |= FLAG_D; break;
        case MN_TAX: s.cpu_x = s.cpu_a; cpu_set_zn(s, s.cpu_x); break;
        case MN_TAY: s.cpu_y = s.cpu_a; cpu_set_zn(s, s.cpu_y); break;
        case MN_TXA: s.cpu_a = s.cpu_x; cpu_set_zn(s, s.cpu_a); break;
        case MN_TYA: s.cpu_a = s.cpu_y; cpu_set_zn(s, s.cpu_a); break;
        case MN_TSX: s.cpu_x = s.cpu_s; cpu_set_zn(s, s.cpu_x); break;
        case MN_TXS: s.cpu_s = s.cpu_x; break;
        case MN_INX: s.cpu_x = (u8)(s.cpu_x + 1); cpu_set_zn(s, s.cpu_x); break;
        case MN_INY: s.cpu_y = (u8)(s.cpu_y + 1); cpu_set_zn(s, s.cpu_y); break;
        case MN_DEX: s.cpu_x = (u8)(s.cpu_x - 1); cpu_set_zn(s, s.cpu_x); break;
        case MN_DEY: s.cpu_y = (u8)(s.cpu_y - 1); cpu_set_zn(s, s.cpu_y); break;
        default: break;  // implied NOPs
    }
}

NESLE_FN void cpu_implied(Nes& n, u8 mn) {
    FlatState& s = n.st;
    switch (mn) {
        case MN_CLI:
            s.cpu_p &= (u8)~FLAG_I;
            cpu_unsettle(n);
            break;
        case MN_SEI:
            s.cpu_p |= FLAG_I;
            cpu_unsettle(n);
            break;
        default: cpu_implied_registers(s, mn); break;
    }
}

// RTI and BRK, out of the hot `cpu_exec_other` (kernel-notes #65).
NESLE_DEV void cpu_exec_rti_brk(Nes& n, u8 mn) {
    FlatState& s = n.st;
    switch (mn) {
        case MN_RTI: {
            cpu_plp(n);
            u8 lo = cpu_pull(n);
            u8 hi = cpu_pull(n);
            s.cpu_pc = le16(lo, hi);
            break;
        }
        case MN_BRK: {
            cpu_fetch(n);
            cpu_push_and_vector(n, FLAG_B);
            s.cpu_nmi_take = 0;  // an NMI seen during BRK's last cycles waits
            cpu_update_attention(n);
            cpu_unsettle(n);
            break;
        }
        default: break;
    }
}

NESLE_DEV void cpu_exec_other(Nes& n, u8 mn, u8 mode, u8 opcode, u16 pc) {
    FlatState& s = n.st;
    switch (mn) {
        // One inlined copy for the eight, not eight (kernel-notes #57): less hot code.
        case MN_BPL:
        case MN_BMI:
        case MN_BVC:
        case MN_BVS:
        case MN_BCC:
        case MN_BCS:
        case MN_BNE:
        case MN_BEQ: cpu_branch(n, cpu_branch_taken(s.cpu_p, opcode)); break;
        case MN_JMP: {
            u8 lo = cpu_fetch(n);
            u8 hi = cpu_fetch(n);
            u16 target = le16(lo, hi);
            if (mode == MODE_IND) {
                u8 plo = cpu_read(n, target);
                u8 phi = cpu_read(n, (target & 0xff00) | ((u16)(target + 1) & 0x00ff));
                s.cpu_pc = le16(plo, phi);
            } else {
                s.cpu_pc = target;
            }
            break;
        }
        case MN_JSR: {
            u8 lo = cpu_fetch(n);
            cpu_read(n, 0x100 | s.cpu_s);
            cpu_push(n, (u8)(s.cpu_pc >> 8));
            cpu_push(n, (u8)s.cpu_pc);
            u8 hi = cpu_read(n, s.cpu_pc);
            s.cpu_pc = le16(lo, hi);
            break;
        }
        case MN_RTS: {
            cpu_read(n, s.cpu_pc);
            cpu_read(n, 0x100 | s.cpu_s);
            u8 lo = cpu_pull(n);
            u8 hi = cpu_pull(n);
            s.cpu_pc = le16(lo, hi);
            cpu_read(n, s.cpu_pc);
            s.cpu_pc += 1;
            break;
        }
        // Once a frame at most (the NMI handler's RTI): out of line (kernel-notes #65).
        case MN_RTI:
        case MN_BRK: cpu_exec_rti_brk(n, mn); break;
        case MN_PHA:
            cpu_read(n, s.cpu_pc);
            cpu_push(n, s.cpu_a);
            break;
        case MN_PHP:
            cpu_read(n, s.cpu_pc);
            cpu_push(n, s.cpu_p | FLAG_B | FLAG_U);
            break;
        case MN_PLA:
            cpu_read(n, s.cpu_pc);
            cpu_read(n, 0x100 | s.cpu_s);
            s.cpu_a = cpu_pull(n);
            cpu_set_zn(s, s.cpu_a);
            break;
        case MN_PLP: cpu_plp(n); break;
        case MN_JAM:
            nes_halt(n, 1, opcode, pc);
            s.cpu_pc = pc;
            break;
        default:
            cpu_read(n, s.cpu_pc);  // implied one-byte instructions: dummy read of the next byte
            cpu_implied(n, mn);
            break;
    }
}

NESLE_DEV void cpu_execute(Nes& n, u8 mn, u8 mode, u8 opcode, u16 pc) {
    FlatState& s = n.st;
    switch (NESLE_MN_ACCESS[mn]) {
        case ACCESS_READ: {
            u8 v = cpu_operand(n, mode);
            cpu_exec_read(s, mn, v);
            break;
        }
        case ACCESS_WRITE: cpu_exec_write(n, mn, mode); break;
        case ACCESS_MODIFY: {
            // One inlined `cpu_modify` for the accumulator and memory forms (kernel-notes #58).
            bool acc = mode == MODE_ACC;
            u16 addr = 0;
            u8 v;
            if (acc) {
                cpu_read(n, s.cpu_pc);
                v = s.cpu_a;
            } else {
                addr = cpu_address(n, mode, ACCESS_MODIFY);
                v = cpu_read(n, addr);
                cpu_write(n, addr, v);
            }
            u8 r = cpu_modify(s, mn, v);
            if (acc) s.cpu_a = r;
            else cpu_write(n, addr, r);
            break;
        }
        default: cpu_exec_other(n, mn, mode, opcode, pc); break;
    }
}

// Executes one instruction, or the interrupt/reset sequence that is due; `pc` is the CPU's PC
// (the frame loop's vote has it in a register already). Inlined into the frame loop (nes-core
// perf #34: `Cpu::step` `#[inline(always)]`): one call a frame, not one an instruction.
NESLE_FN void cpu_step_at(Nes& n, u16 pc) {
    FlatState& s = n.st;
    if (n.attention) {
        if (s.cpu_reset_pending) {
            cpu_run_reset(n);
            return;
        }
        if (s.cpu_fault) {
            bus_idle(n);
            return;
        }
    }
    // The opcode fetch's common case inline here, the rest through cpu_read_any: no call for
    // most opcode fetches (#24; taken out by #56 when B's hot code overflowed the instruction
    // cache, and inline again since #107, when #92-#104 had made it smaller).
    u8 opcode;
    if (!cpu_read_common(n, pc, opcode)) opcode = cpu_read_any(n, pc);
    s.cpu_pc = pc + 1;
    cpu_execute(n, NESLE_OP_MN[opcode], NESLE_OP_MODE[opcode], opcode, pc);
    if (n.attention && (s.cpu_nmi_take || s.cpu_irq_take)) cpu_interrupt(n);
}

NESLE_FN void cpu_step(Nes& n) { cpu_step_at(n, n.st.cpu_pc); }

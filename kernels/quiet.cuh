// The quiet path (kernel-notes #116): most of a game's instructions touch only RAM and PRG ROM
// and end before anything is due on the bus (`n.deadline`: no PPU or APU catch-up, no DMA),
// with the interrupt pipeline settled. Each of their cycles then only moves the clock and the
// data bus, and each interrupt sample changes nothing: exactly what `cpu_read_common` and
// `cpu_write`'s RAM case do, cycle by cycle. The frame loop runs such instructions here, on the
// CPU's registers, the clock and the data bus held in registers (CpuRegs) from one instruction
// to the next, with one test an instruction instead of one a cycle, and hands every other
// instruction to the full path (`cpu_step_at`) with the registers written back first.
#pragma once
#include "cpu.cuh"

// What the quiet path holds in registers, named as in FlatState so that cpu.cuh's ALU helpers
// take either.
struct CpuRegs {
    u64 bus_cycles;
    u16 cpu_pc;
    u8 cpu_a, cpu_x, cpu_y, cpu_p, cpu_s;
    u8 bus_open_bus;
    // Decimal arithmetic (a test-only mode) never runs here: `nes_quiet_until` is 0 with it on.
    static constexpr bool cpu_decimal_mode = false;
};

// The shared ALU's rare branches, which the quiet path never takes: it runs no unofficial
// mnemonic (CPU_QUIET_MNS) and no decimal arithmetic, so these only let cpu.cuh's templates
// compile for CpuRegs.
NESLE_FN void cpu_exec_read_unofficial(CpuRegs&, u8, u8) {}
NESLE_FN u8 cpu_modify_unofficial(CpuRegs&, u8, u8 v) { return v; }
NESLE_FN void cpu_adc_decimal(CpuRegs&, u8) {}
NESLE_FN void cpu_sbc_decimal(CpuRegs&, u8) {}

NESLE_FN CpuRegs cpu_regs_load(const Nes& n) {
    const FlatState& s = n.st;
    CpuRegs r;
    r.bus_cycles = s.bus_cycles;
    r.cpu_pc = s.cpu_pc;
    r.cpu_a = s.cpu_a;
    r.cpu_x = s.cpu_x;
    r.cpu_y = s.cpu_y;
    r.cpu_p = s.cpu_p;
    r.cpu_s = s.cpu_s;
    r.bus_open_bus = s.bus_open_bus;
    return r;
}

NESLE_FN void cpu_regs_store(Nes& n, const CpuRegs& r) {
    FlatState& s = n.st;
    s.bus_cycles = r.bus_cycles;
    s.cpu_pc = r.cpu_pc;
    s.cpu_a = r.cpu_a;
    s.cpu_x = r.cpu_x;
    s.cpu_y = r.cpu_y;
    s.cpu_p = r.cpu_p;
    s.cpu_s = r.cpu_s;
    s.bus_open_bus = r.bus_open_bus;
}

// The cycle before which quiet instructions may end, or 0 (none may run) while something needs
// the full path at the next instruction: an interrupt or reset to take, a fault, a pipeline not
// settled on the lines as they are (so a sample would change it), or decimal arithmetic on.
// Nothing the quiet path does changes any of these, so this holds until the next full step.
NESLE_FN u64 nes_quiet_until(const Nes& n) {
    return n.attention == 0 && n.settled == n.lines && !n.st.cpu_decimal_mode ? n.deadline : 0;
}

// The official mnemonics (nes-core orders them first) but those that change I or the interrupt
// pipeline (BRK, RTI, PLP, CLI, SEI): the unofficial ones are left to the full path, where they
// are out of line (kernel-notes #64).
static_assert(MN_TYA == 55 && MN_SLO == 56 && MN_JAM == MN_COUNT - 1, "official mnemonics first");
#define CPU_QUIET_MNS                                                                                  \
    (((1ull << MN_SLO) - 1) & ~((1ull << MN_BRK) | (1ull << MN_RTI) | (1ull << MN_PLP) | (1ull << MN_CLI) | \
                                (1ull << MN_SEI)))

// A byte the quiet path may read: PRG ROM or RAM. Any other address (a register, whose read can
// have side effects, or open bus) clears `ok` and is not read.
NESLE_FN u8 cpu_quiet_read(const Nes& n, u16 addr, bool& ok) {
    if (addr >= 0x8000) return bus_prg_read(n, addr);
    if (addr < 0x2000) return n.st.ram[addr & 0x7ff];
    ok = false;
    return 0;
}

// One instruction on the quiet path: runs it on `r` and returns true, or returns false having
// changed nothing when it is not quiet. Quiet: its opcode is in CPU_QUIET_MNS, its bytes lie in
// one 8 KiB bank of PRG ROM, its last cycle (at most 7) ends before `until`
// (`nes_quiet_until`), it reads only RAM and PRG ROM (dummy reads included) and writes only
// RAM. The cycles are those of cpu_execute, access for access: every read and write moves the
// clock by one and leaves its byte on the data bus; the interrupt samples are no-ops. Every
// address is checked before the first write, so an instruction found not quiet has written
// nothing.
NESLE_FN bool cpu_quiet_step(Nes& n, CpuRegs& r, u64 until) {
    u16 pc = r.cpu_pc;
    if (pc < 0x8000 || (pc & 0x1fff) > 0x1ffd || r.bus_cycles + 7 >= until) return false;
    const u8* code = n.prg_bank[(pc >> 13) & 3] + (pc & 0x1fff);
    u8 opcode = code[0];
    u8 mn = NESLE_OP_MN[opcode];
    if (!((CPU_QUIET_MNS >> mn) & 1)) return false;
    // The two bytes after the opcode (ROM: reading one the instruction does not use changes
    // nothing). Every instruction reads the first on its second cycle, as operand or dummy read.
    u8 b1 = code[1], b2 = code[2];
    u8 mode = NESLE_OP_MODE[opcode];
    u8 access = NESLE_MN_ACCESS[mn];
    u8* ram = n.st.ram;
    CpuRegs q = r;
    bool ok = true;
    u32 cycles = 2;
    u8 bus = b1;
    u16 next = (u16)(pc + 1);
    if (access != ACCESS_OTHER && mode <= MODE_IMM) {
        // Implied NOPs, accumulator shifts, immediates: the operand is the byte after the opcode.
        if (mode == MODE_IMM) next += 1;
        if (access == ACCESS_READ) cpu_exec_read(q, mn, b1);
        else q.cpu_a = cpu_modify(q, mn, q.cpu_a);
    } else if (access != ACCESS_OTHER) {
        // cpu_address: the operand's bytes, then the pointer or the dummy reads of the mode.
        next += 1;
        u16 addr = b1, base = 0;
        u8 idx = 0;
        bool indexed = false;
        switch (mode) {
            case MODE_ZP: break;
            case MODE_ZPX:
            case MODE_ZPY:
                bus = ram[b1];
                cycles += 1;
                addr = (u8)(b1 + (mode == MODE_ZPX ? q.cpu_x : q.cpu_y));
                break;
            case MODE_IZX: {
                u8 p = (u8)(b1 + q.cpu_x);
                u8 lo = ram[p];
                bus = ram[(u8)(p + 1)];
                cycles += 3;
                addr = le16(lo, bus);
                break;
            }
            case MODE_IZY: {
                u8 lo = ram[b1];
                bus = ram[(u8)(b1 + 1)];
                cycles += 2;
                base = le16(lo, bus);
                idx = q.cpu_y;
                indexed = true;
                break;
            }
            default:  // MODE_ABS, MODE_ABX, MODE_ABY
                next += 1;
                bus = b2;
                cycles += 1;
                base = le16(b1, b2);
                addr = base;
                indexed = mode != MODE_ABS;
                idx = mode == MODE_ABX ? q.cpu_x : q.cpu_y;
                break;
        }
        if (indexed) {
            // cpu_indexed: the un-carried address read on a page crossing, and always before a
            // write or read-modify-write.
            addr = (u16)(base + idx);
            if (((base ^ addr) & 0xff00) != 0 || access != ACCESS_READ) {
                bus = cpu_quiet_read(n, (base & 0xff00) | (addr & 0x00ff), ok);
                cycles += 1;
            }
        }
        if (access == ACCESS_READ) {
            bus = cpu_quiet_read(n, addr, ok);
            cycles += 1;
            cpu_exec_read(q, mn, bus);
        } else {
            if (!ok || addr >= 0x2000) return false;
            u8* at = ram + (addr & 0x7ff);
            if (access == ACCESS_WRITE) {
                bus = mn == MN_STA ? q.cpu_a : mn == MN_STX ? q.cpu_x : q.cpu_y;
                cycles += 1;
            } else {
                // The read, the old value written back, the new one written.
                bus = cpu_modify(q, mn, *at);
                cycles += 3;
            }
            *at = bus;
        }
    } else {
        switch (mn) {
            case MN_BPL:
            case MN_BMI:
            case MN_BVC:
            case MN_BVS:
            case MN_BCC:
            case MN_BCS:
            case MN_BNE:
            case MN_BEQ:
                // cpu_branch: the offset, then on a taken branch the dummy reads of the next
                // opcode and, on a page crossing, of the un-carried target (the same page: ROM).
                next += 1;
                if (cpu_branch_taken(q.cpu_p, opcode)) {
                    u16 target = (u16)(next + (u16)(i16)(i8)b1);
                    bus = b2;
                    cycles += 1;
                    if ((target ^ next) & 0xff00) {
                        bus = bus_prg_read(n, (next & 0xff00) | (target & 0x00ff));
                        cycles += 1;
                    }
                    next = target;
                }
                break;
            case MN_JMP:
                bus = b2;
                cycles += 1;
                next = le16(b1, b2);
                if (mode == MODE_IND) {
                    u8 lo = cpu_quiet_read(n, next, ok);
                    bus = cpu_quiet_read(n, (next & 0xff00) | ((u16)(next + 1) & 0x00ff), ok);
                    cycles += 2;
                    next = le16(lo, bus);
                }
                break;
            case MN_JSR: {
                // The low byte, a dummy stack read, PC (at the high byte) pushed, the high byte.
                u16 ret = (u16)(pc + 2);
                ram[0x100 | q.cpu_s] = (u8)(ret >> 8);
                ram[0x100 | (u8)(q.cpu_s - 1)] = (u8)ret;
                q.cpu_s -= 2;
                bus = b2;
                cycles += 4;
                next = le16(b1, b2);
                break;
            }
            case MN_RTS: {
                // A dummy read, a dummy stack read, PC pulled, a dummy read at it, then PC + 1.
                u8 lo = ram[0x100 | (u8)(q.cpu_s + 1)];
                u8 hi = ram[0x100 | (u8)(q.cpu_s + 2)];
                q.cpu_s += 2;
                u16 back = le16(lo, hi);
                bus = cpu_quiet_read(n, back, ok);
                cycles += 4;
                next = (u16)(back + 1);
                break;
            }
            case MN_PHA:
            case MN_PHP:
                bus = mn == MN_PHA ? q.cpu_a : (u8)(q.cpu_p | FLAG_B | FLAG_U);
                ram[0x100 | q.cpu_s] = bus;
                q.cpu_s -= 1;
                cycles += 1;
                break;
            case MN_PLA:
                q.cpu_s += 1;
                bus = ram[0x100 | q.cpu_s];
                q.cpu_a = bus;
                cpu_set_zn(q, bus);
                cycles += 2;
                break;
            default: cpu_implied_registers(q, mn); break;
        }
    }
    if (!ok) return false;
    q.cpu_pc = next;
    q.bus_cycles += cycles;
    q.bus_open_bus = bus;
    r = q;
    return true;
}

// The quiet path (kernel-notes #116, #117): most of a game's instructions touch only RAM and
// PRG ROM and end before anything is due on the bus (`n.deadline`: no PPU or APU catch-up, no
// DMA), with the interrupt pipeline settled. Each of their cycles then only moves the clock and
// the data bus, and each interrupt sample changes nothing: exactly what `cpu_read_common` and
// `cpu_write`'s RAM case do, cycle by cycle. The frame loop runs such instructions here, on the
// CPU's registers, the clock and the data bus held in registers (CpuRegs) from one instruction
// to the next, with one test an instruction instead of one a cycle, and hands every other
// instruction to the full path (`cpu_step_at`) with the registers written back first.
#pragma once
#include "cpu.cuh"

// What the quiet path holds in registers, named as in FlatState so that cpu.cuh's ALU helpers
// take either. Each is a whole 32-bit register holding its byte (PC its 16 bits), so the
// compiler need not merge narrow values into shared registers (kernel-notes #136); every write
// keeps the value in range.
struct CpuRegs {
    u64 bus_cycles;
    u32 cpu_pc;
    u32 cpu_a, cpu_x, cpu_y, cpu_p, cpu_s;
    u32 bus_open_bus;
    // Decimal arithmetic (a test-only mode) never runs here: `nes_quiet_until` is 0 with it on.
    static constexpr bool cpu_decimal_mode = false;
};

// The shared ALU's rare branches, which the quiet path never takes: it runs no unofficial
// mnemonic (QF_NONE) and no decimal arithmetic, so these only let cpu.cuh's templates
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

// The cycle from which no quiet instruction may start: 7 cycles (the longest) before the next
// deadline, so that the instruction ends before it; or 0 (none may run) while something needs
// the full path at the next instruction: an interrupt or reset to take, a fault, a pipeline not
// settled on the lines as they are (so a sample would change it), or decimal arithmetic on.
// Nothing the quiet path does changes any of these, so this holds until the next full step.
NESLE_FN u64 nes_quiet_until(const Nes& n) {
    bool calm = n.attention == 0 && n.settled == n.lines && !n.st.cpu_decimal_mode;
    return calm && n.deadline > 7 ? n.deadline - 7 : 0;
}

// How cpu_quiet_step runs an opcode: its quiet form, or QF_NONE for the full path. The forms
// follow cpu_execute's routing (the access class, then the mnemonic), for the official opcodes
// (nes-core numbers their mnemonics first) but those that change I or the interrupt pipeline
// (BRK, RTI, PLP, CLI, SEI): the unofficial ones are left to the full path, where they are out
// of line (kernel-notes #64).
#define QF_NONE 0
#define QF_READ 1      // a read-class mnemonic, any mode (implied NOPs and immediates too)
#define QF_WRITE 2     // STA, STX, STY
#define QF_MODIFY 3    // a read-modify-write of memory
#define QF_MODIFY_A 4  // a shift or rotate of A
#define QF_BRANCH 5
#define QF_JMP 6
#define QF_JMP_IND 7
#define QF_JSR 8
#define QF_RTS 9
#define QF_PUSH 10     // PHA, PHP
#define QF_PLA 11
#define QF_IMPLIED 12  // the flag and register instructions
static_assert(MN_TYA == 55 && MN_SLO == 56 && MN_JAM == MN_COUNT - 1, "official mnemonics first");

__host__ __device__ constexpr u8 cpu_quiet_form(u8 mn, u8 mode, u8 access) {
    if (mn >= MN_SLO || mn == MN_BRK || mn == MN_RTI || mn == MN_PLP || mn == MN_CLI || mn == MN_SEI) return QF_NONE;
    if (access == ACCESS_READ) return QF_READ;
    if (access == ACCESS_WRITE) return QF_WRITE;
    if (access == ACCESS_MODIFY) return mode == MODE_ACC ? QF_MODIFY_A : QF_MODIFY;
    if (mode == MODE_REL) return QF_BRANCH;  // the eight branches, and only they
    switch (mn) {
        case MN_JMP: return mode == MODE_IND ? QF_JMP_IND : QF_JMP;
        case MN_JSR: return QF_JSR;
        case MN_RTS: return QF_RTS;
        case MN_PHA:
        case MN_PHP: return QF_PUSH;
        case MN_PLA: return QF_PLA;
        default: return QF_IMPLIED;
    }
}

// Per opcode: its quiet form (bits 0-3), its mode (bits 4-7) and mnemonic (bits 8-15), the low
// half of each code word (cpu_code_word).
struct QuietOps {
    u16 op[256];
};

__host__ __device__ constexpr QuietOps cpu_quiet_ops() {
    QuietOps t{};
#define NESLE_QUIET_OP(opcode, mn, mode, access) \
    t.op[opcode] = (u16)(cpu_quiet_form(mn, mode, access) | (mode) << 4 | (mn) << 8);
    NESLE_OPS(NESLE_QUIET_OP)
#undef NESLE_QUIET_OP
    return t;
}

__constant__ QuietOps NESLE_QUIET_OPS = cpu_quiet_ops();

// The quiet path's fetch as one load (kernel-notes #138): for PRG ROM byte `i` (of `len`), the
// quiet form, mode and mnemonic of the opcode it would be (NESLE_QUIET_OPS) in bits 0-15 and the
// two bytes after it in bits 16-23 and 24-31 (0 past the ROM's end). The batch builds these once
// (`nesle_host_code_words`) and keeps them beside the ROM, read-only like it. A branch's mode
// (always relative) gives its 4 bits to the opcode's top 3, all that `cpu_branch_taken` reads of
// the opcode. The two bytes are the ROM image's, which are what the CPU reads after the opcode
// while it lies below the last two bytes of its 8 KiB bank (the windows hold whole banks,
// `cart_prg_map` being a multiple of 8 KiB, which nes-core requires of a state); an opcode in
// those two bytes may run on into the next window, which need not hold the next bank, so their
// words say QF_NONE (the full path) and cpu_quiet_step need not test PC's place in its window.
NESLE_FN u32 cpu_code_word(const u8* prg, u32 len, u32 i) {
    if ((i & 0x1fff) >= 0x1ffe) return QF_NONE;
    u32 info = NESLE_QUIET_OPS.op[prg[i]];
    if ((info & 15) == QF_BRANCH) info = (info & ~0xf0u) | (u32)(prg[i] >> 5) << 4;
    u32 b1 = i + 1 < len ? prg[i + 1] : 0, b2 = i + 2 < len ? prg[i + 2] : 0;
    return info | b1 << 16 | b2 << 24;
}

// Whether the quiet path may read `addr`: PRG ROM or RAM. Anything else (a register, whose read
// can have side effects, or open bus) is left to the full path. The regions start on page
// boundaries, so an address's page tells its region.
NESLE_FN bool cpu_quiet_addr(u32 addr) { return addr >= 0x8000 || addr < 0x2000; }

// A PRG ROM byte or code word (cpu_code_word): read-only for the whole launch, so through the
// read-only data cache.
template <typename T>
NESLE_FN T cpu_rom_load(const T* p) {
#ifdef __CUDA_ARCH__
    return __ldg(p);
#else
    return *p;
#endif
}

// le16 for the quiet path's 32-bit values (#136): the address whose low byte is `lo`.
NESLE_FN u32 cpu_quiet_le16(u32 lo, u32 hi) { return lo | hi << 8; }

// A byte at an address cpu_quiet_addr allows.
NESLE_FN u8 cpu_quiet_load(const Nes& n, u32 addr) {
    if (addr >= 0x8000) return cpu_rom_load(n.prg_bank[(addr >> 13) & 3] + (addr & 0x1fff));
    return n.st.ram[addr & 0x7ff];
}

// One instruction on the quiet path: runs it on `r` and returns true, or returns false having
// changed nothing when it is not quiet. Quiet: it starts before `until` (`nes_quiet_until`, so
// its last cycle, at most 7 later, ends before the deadline), its code word's form is not
// QF_NONE (so it lies in PRG ROM, its bytes in one 8 KiB bank: cpu_code_word), it reads only RAM
// and PRG ROM (dummy reads included) and writes only RAM. The cycles are
// those of cpu_execute, access for access: every read and write moves the clock by one and
// leaves its byte on the data bus; the interrupt samples are no-ops. Every address is checked
// before `r` or RAM changes: up to there the instruction has only read RAM or ROM, which
// changes nothing.
NESLE_FN bool cpu_quiet_step(Nes& n, CpuRegs& r, u64 until) {
    u32 pc = r.cpu_pc;
    if (r.bus_cycles >= until) return false;
    // The opcode's decoding and the two bytes after it in one word (reading a byte the
    // instruction does not use changes nothing). Every instruction reads the first of them on
    // its second cycle, as operand or dummy read. Below $8000 the word is QF_NONE.
    u32 word = cpu_rom_load(n.code_bank[pc >> 13] + (pc & 0x1fff));
    u32 form = word & 15, mode = (word >> 4) & 15;
    u8 mn = (u8)(word >> 8);
    if (form == QF_NONE) return false;
    u32 b1 = (word >> 16) & 0xff, b2 = word >> 24;
    u8* ram = n.st.ram;
    u32 cycles = 2;
    // pc <= $FFFD here (a window's last two bytes have QF_NONE words), so the next opcode's
    // address below needs no wrap.
    u32 bus = b1;
    u32 next = pc + 1;
    if (form <= QF_MODIFY_A) {
        // cpu_execute's read, write and read-modify-write classes.
        u32 addr = 0;
        if (mode == MODE_IMM) {
            next += 1;
        } else if (mode == MODE_ZP || mode == MODE_ABS) {
            // The direct modes (over half of SMB's memory operands, kernel-notes #144) ahead of
            // cpu_address's switch: the operand's one or two bytes are the address.
            bool absolute = mode == MODE_ABS;
            next += absolute ? 2 : 1;
            addr = absolute ? cpu_quiet_le16(b1, b2) : b1;
            if (absolute) {
                bus = b2;
                cycles += 1;
                // The access itself: a read of RAM or ROM, or a write to RAM (zero page is RAM).
                if (form == QF_READ ? !cpu_quiet_addr(addr) : addr >= 0x2000) return false;
            }
        } else if (mode > MODE_ZP) {
            // cpu_address: the operand's bytes, then the pointer or the dummy reads of the mode.
            next += 1;
            u32 base = 0;
            u32 idx = 0;
            bool indexed = false;
            addr = b1;
            switch (mode) {
                case MODE_ZPX:
                case MODE_ZPY:
                    bus = ram[b1];
                    cycles += 1;
                    addr = (b1 + (mode == MODE_ZPX ? r.cpu_x : r.cpu_y)) & 0xff;
                    break;
                case MODE_IZX: {
                    u32 p = (b1 + r.cpu_x) & 0xff;
                    u32 lo = ram[p];
                    bus = ram[(p + 1) & 0xff];
                    cycles += 3;
                    addr = cpu_quiet_le16(lo, bus);
                    break;
                }
                case MODE_IZY: {
                    u32 lo = ram[b1];
                    bus = ram[(b1 + 1) & 0xff];
                    cycles += 2;
                    base = cpu_quiet_le16(lo, bus);
                    idx = r.cpu_y;
                    indexed = true;
                    break;
                }
                default:  // MODE_ABX, MODE_ABY
                    next += 1;
                    bus = b2;
                    cycles += 1;
                    base = cpu_quiet_le16(b1, b2);
                    addr = base;
                    indexed = true;
                    idx = mode == MODE_ABX ? r.cpu_x : r.cpu_y;
                    break;
            }
            if (indexed) {
                // cpu_indexed: the un-carried address read on a page crossing, and always before
                // a write or read-modify-write.
                addr = (base + idx) & 0xffff;
                u32 early = (base & 0xff00) | (addr & 0x00ff);
                if (early != addr || form != QF_READ) {
                    if (!cpu_quiet_addr(early)) return false;
                    bus = cpu_quiet_load(n, early);
                    cycles += 1;
                }
            }
            // The access itself: a read of RAM or ROM, or a write to RAM.
            if (form == QF_READ ? !cpu_quiet_addr(addr) : addr >= 0x2000) return false;
        }
        if (form == QF_READ) {
            u8 v = b1;  // immediates and implied NOPs: the byte after the opcode
            if (mode >= MODE_ZP) {
                v = cpu_quiet_load(n, addr);
                cycles += 1;
            }
            bus = v;
            cpu_exec_read(r, mn, v);
        } else if (form == QF_WRITE) {
            bus = mn == MN_STA ? r.cpu_a : mn == MN_STX ? r.cpu_x : r.cpu_y;
            ram[addr & 0x7ff] = (u8)bus;
            cycles += 1;
        } else if (form == QF_MODIFY) {
            // The read, the old value written back, the new one written.
            u8* at = ram + (addr & 0x7ff);
            bus = cpu_modify(r, mn, *at);
            *at = (u8)bus;
            cycles += 3;
        } else {
            r.cpu_a = cpu_modify(r, mn, r.cpu_a);
        }
    } else {
        switch (form) {
            case QF_BRANCH:
                // cpu_branch: the offset, then on a taken branch the dummy reads of the next
                // opcode and, on a page crossing, of the un-carried target (the same page: ROM).
                next += 1;
                if (cpu_branch_taken(r.cpu_p, mode << 5)) {  // the opcode's top 3 bits: cpu_code_word
                    u32 target = (next + (u32)(i32)(i8)b1) & 0xffff;
                    bus = b2;
                    cycles += 1;
                    if ((target ^ next) & 0xff00) {
                        bus = cpu_quiet_load(n, (next & 0xff00) | (target & 0x00ff));
                        cycles += 1;
                    }
                    next = target;
                }
                break;
            case QF_JMP:
                bus = b2;
                cycles += 1;
                next = cpu_quiet_le16(b1, b2);
                break;
            case QF_JMP_IND: {
                // The pointer's two bytes, on one page.
                u32 at = cpu_quiet_le16(b1, b2);
                if (!cpu_quiet_addr(at)) return false;
                u32 lo = cpu_quiet_load(n, at);
                bus = cpu_quiet_load(n, (at & 0xff00) | ((at + 1) & 0x00ff));
                cycles += 3;
                next = cpu_quiet_le16(lo, bus);
                break;
            }
            case QF_JSR: {
                // The low byte, a dummy stack read, PC (at the high byte) pushed, the high byte.
                u32 ret = pc + 2;
                ram[0x100 | r.cpu_s] = (u8)(ret >> 8);
                ram[0x100 | ((r.cpu_s - 1) & 0xff)] = (u8)ret;
                r.cpu_s = (r.cpu_s - 2) & 0xff;
                bus = b2;
                cycles += 4;
                next = cpu_quiet_le16(b1, b2);
                break;
            }
            case QF_RTS: {
                // A dummy read, a dummy stack read, PC pulled, a dummy read at it, then PC + 1.
                u32 lo = ram[0x100 | ((r.cpu_s + 1) & 0xff)];
                u32 hi = ram[0x100 | ((r.cpu_s + 2) & 0xff)];
                u32 back = cpu_quiet_le16(lo, hi);
                if (!cpu_quiet_addr(back)) return false;
                bus = cpu_quiet_load(n, back);
                r.cpu_s = (r.cpu_s + 2) & 0xff;
                cycles += 4;
                next = (back + 1) & 0xffff;
                break;
            }
            case QF_PUSH:
                bus = mn == MN_PHA ? r.cpu_a : (u8)(r.cpu_p | FLAG_B | FLAG_U);
                ram[0x100 | r.cpu_s] = (u8)bus;
                r.cpu_s = (r.cpu_s - 1) & 0xff;
                cycles += 1;
                break;
            case QF_PLA:
                r.cpu_s = (r.cpu_s + 1) & 0xff;
                bus = ram[0x100 | r.cpu_s];
                r.cpu_a = bus;
                cpu_set_zn(r, bus);
                cycles += 2;
                break;
            default: cpu_implied_registers(r, mn); break;
        }
    }
    r.cpu_pc = next;
    r.bus_cycles += cycles;
    r.bus_open_bus = bus;
    return true;
}

//! The Ricoh 2A03's 6502 core (no decimal mode), executed one bus cycle at a time.
//!
//! Every cycle of an instruction is a real bus access through [`CpuBus`], dummy reads and
//! dummy writes included, because PPU, APU and mapper registers see them ($2002 and $2007
//! reads, MMC1's serial port, $4015 acknowledges). The bus advances the rest of the console
//! by one CPU cycle on each access, so timing falls out of the access sequence.
//!
//! Interrupts follow the hardware's two-stage scheme: at the end of every cycle the NMI edge
//! detector and the IRQ level are sampled; the instruction's *second-to-last* cycle decides
//! whether an interrupt sequence follows it (which gives CLI/SEI/PLP their one-instruction
//! latency), and an NMI arriving during an IRQ/BRK sequence hijacks its vector.

pub mod ops;

use crate::state::{Snapshot, StateError, StateReader, StateWriter};
use ops::{Access, Mn, Mode, OPS};

/// What the CPU is wired to: one call is one bus cycle.
pub trait CpuBus {
    fn read(&mut self, addr: u16) -> u8;
    fn write(&mut self, addr: u16, v: u8);
    /// NMI line level (active high here); the CPU detects its rising edge.
    fn nmi_line(&self) -> bool;
    /// IRQ line level (active high here).
    fn irq_line(&self) -> bool;
    /// Both lines in one byte: bit 0 NMI, bit 1 IRQ (what the CPU samples every cycle).
    #[inline(always)]
    fn lines(&self) -> u8 {
        self.nmi_line() as u8 | (self.irq_line() as u8) << 1
    }
    /// A cycle in which the CPU is halted (JAM): time passes, nothing is accessed.
    fn idle(&mut self);
}

pub const C: u8 = 0x01;
pub const Z: u8 = 0x02;
pub const I: u8 = 0x04;
pub const D: u8 = 0x08;
pub const B: u8 = 0x10;
pub const U: u8 = 0x20;
pub const V: u8 = 0x40;
pub const N: u8 = 0x80;

const NMI_VECTOR: u16 = 0xfffa;
const RESET_VECTOR: u16 = 0xfffc;
const IRQ_VECTOR: u16 = 0xfffe;

/// Why a console stopped executing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A JAM/KIL opcode locked the CPU; only a reset recovers.
    Jam { opcode: u8, pc: u16 },
    /// A frame did not reach vertical blank within `console::MAX_STEPS_PER_FRAME` steps, which
    /// no valid console state can do: the frame loop halts the console instead of hanging.
    Stalled { pc: u16 },
}

impl core::fmt::Display for Fault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Fault::Jam { opcode, pc } => write!(f, "CPU halted by JAM opcode ${opcode:02X} at ${pc:04X}"),
            Fault::Stalled { pc } => {
                write!(f, "console halted: a frame never reached vertical blank (impossible state, PC ${pc:04X})")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpu {
    pub a: u8,
    pub x: u8,
    pub y: u8,
    /// Stack pointer (page 1).
    pub s: u8,
    /// Status flags; bits 4 (B) and 5 are not stored (they exist only on the stack).
    pub p: u8,
    pub pc: u16,
    /// Set by a JAM opcode.
    pub fault: Option<Fault>,
    /// Test-only: honour the D flag in ADC/SBC like an NMOS 6502 (the 2A03 has no BCD).
    pub decimal_mode: bool,
    // Interrupt pipeline (see the module doc).
    nmi_prev_line: bool,
    nmi_pending: bool,
    nmi_take: bool,
    irq_run: bool,
    irq_take: bool,
    reset_pending: bool,
    /// `lines()` of the last sample when another sample with the same lines would change
    /// nothing (the pipeline has settled), else `UNSETTLED`. Derived, not saved: it lets a
    /// cycle skip the sample's stores (perf-notes #30, #31). The sample also reads P's I
    /// flag, so everything that changes I (or the pipeline outside `sample`) must call
    /// `unsettle`; `Console` does on entry, since `p` is public.
    settled: u8,
}

/// A `settled` value no lines byte (bits 0-1) can equal.
const UNSETTLED: u8 = 0xff;

impl Default for Cpu {
    fn default() -> Self {
        Cpu::new()
    }
}

impl Cpu {
    /// Power-on: registers zero, and a reset sequence pending (it takes 7 cycles and leaves
    /// S = $FD, P = I, as measured on hardware).
    pub fn new() -> Cpu {
        Cpu {
            a: 0,
            x: 0,
            y: 0,
            s: 0,
            p: I,
            pc: 0,
            fault: None,
            decimal_mode: false,
            nmi_prev_line: false,
            nmi_pending: false,
            nmi_take: false,
            irq_run: false,
            irq_take: false,
            reset_pending: true,
            settled: UNSETTLED,
        }
    }

    /// The reset button: A/X/Y kept, I set, S decremented by 3 (the suppressed pushes).
    pub fn reset(&mut self) {
        self.reset_pending = true;
        self.fault = None;
    }

    /// Whether the interrupt pipeline is at rest: nothing pending or being polled, and the
    /// sampled lines equal the bus's now, so another instruction that changes neither the
    /// lines nor I leaves it exactly as it is (the idle-loop fast-forward relies on this).
    #[inline]
    pub(crate) fn interrupts_at_rest<Bs: CpuBus>(&self, bus: &Bs) -> bool {
        !(self.nmi_pending || self.nmi_take || self.irq_run || self.irq_take || self.reset_pending)
            && self.fault.is_none()
            && self.nmi_prev_line == bus.nmi_line()
            && !(bus.irq_line() && self.p & I == 0)
    }

    /// Makes the next end-of-cycle sample a full one: after a change to I or to the interrupt
    /// pipeline outside `sample`.
    #[inline(always)]
    pub(crate) fn unsettle(&mut self) {
        self.settled = UNSETTLED;
    }

    /// P as pushed by PHP/BRK (B and bit 5 set).
    pub fn status_for_push(&self) -> u8 {
        self.p | B | U
    }

    // One bus cycle, then the end-of-cycle interrupt sampling.
    #[inline(always)]
    fn read<Bs: CpuBus>(&mut self, bus: &mut Bs, addr: u16) -> u8 {
        let v = bus.read(addr);
        self.sample(bus);
        v
    }

    #[inline(always)]
    fn write<Bs: CpuBus>(&mut self, bus: &mut Bs, addr: u16, v: u8) {
        bus.write(addr, v);
        self.sample(bus);
    }

    #[inline(always)]
    fn sample<Bs: CpuBus>(&mut self, bus: &Bs) {
        let key = bus.lines();
        if key == self.settled {
            return;
        }
        // The previous cycle's decision becomes this cycle's "second-to-last cycle" view.
        self.nmi_take = self.nmi_pending;
        let line = key & 1 != 0;
        if line && !self.nmi_prev_line {
            self.nmi_pending = true;
        }
        self.nmi_prev_line = line;
        self.irq_take = self.irq_run;
        self.irq_run = key & 2 != 0 && self.p & I == 0;
        // Settled: with the same key the next sample copies equal values and sees no edge.
        let settled = self.nmi_take == self.nmi_pending && self.irq_take == self.irq_run;
        self.settled = if settled { key } else { UNSETTLED };
    }

    #[inline(always)]
    fn fetch<Bs: CpuBus>(&mut self, bus: &mut Bs) -> u8 {
        let v = self.read(bus, self.pc);
        self.pc = self.pc.wrapping_add(1);
        v
    }

    #[inline(always)]
    fn push<Bs: CpuBus>(&mut self, bus: &mut Bs, v: u8) {
        self.write(bus, 0x100 | self.s as u16, v);
        self.s = self.s.wrapping_sub(1);
    }

    #[inline(always)]
    fn pull<Bs: CpuBus>(&mut self, bus: &mut Bs) -> u8 {
        self.s = self.s.wrapping_add(1);
        self.read(bus, 0x100 | self.s as u16)
    }

    #[inline(always)]
    fn set_zn(&mut self, v: u8) {
        self.p = (self.p & !(Z | N)) | (v & N) | if v == 0 { Z } else { 0 };
    }

    #[inline(always)]
    fn set_flag(&mut self, flag: u8, on: bool) {
        if on {
            self.p |= flag;
        } else {
            self.p &= !flag;
        }
    }

    /// Executes one instruction, or the interrupt/reset sequence that is due.
    #[inline(always)]
    pub fn step<Bs: CpuBus>(&mut self, bus: &mut Bs) {
        if self.reset_pending {
            self.run_reset(bus);
            return;
        }
        if self.fault.is_some() {
            bus.idle();
            return;
        }
        let pc = self.pc;
        let opcode = self.fetch(bus);
        let op = OPS[opcode as usize];
        self.execute(bus, op.mn, op.mode, opcode, pc);
        if self.nmi_take || self.irq_take {
            self.interrupt(bus);
        }
    }

    fn run_reset<Bs: CpuBus>(&mut self, bus: &mut Bs) {
        // Reset is BRK with the stack writes turned into reads.
        self.read(bus, self.pc);
        self.read(bus, self.pc);
        for _ in 0..3 {
            self.read(bus, 0x100 | self.s as u16);
            self.s = self.s.wrapping_sub(1);
        }
        self.p |= I;
        self.unsettle();
        let lo = self.read(bus, RESET_VECTOR);
        let hi = self.read(bus, RESET_VECTOR + 1);
        self.pc = u16::from_le_bytes([lo, hi]);
        self.reset_pending = false;
        self.nmi_pending = false;
        self.nmi_take = false;
        self.irq_take = false;
        self.settled = UNSETTLED;
    }

    /// The 7-cycle IRQ/NMI sequence; an NMI detected before the vector fetch takes it over.
    fn interrupt<Bs: CpuBus>(&mut self, bus: &mut Bs) {
        self.read(bus, self.pc);
        self.read(bus, self.pc);
        self.push(bus, (self.pc >> 8) as u8);
        self.push(bus, self.pc as u8);
        let vector = if self.nmi_pending {
            self.nmi_pending = false;
            self.settled = UNSETTLED;
            NMI_VECTOR
        } else {
            IRQ_VECTOR
        };
        self.push(bus, self.p | U);
        self.p |= I;
        self.unsettle();
        let lo = self.read(bus, vector);
        let hi = self.read(bus, vector + 1);
        self.pc = u16::from_le_bytes([lo, hi]);
    }

    /// Computes the effective address of a memory operand, performing the mode's cycles.
    #[inline(always)]
    fn address<Bs: CpuBus>(&mut self, bus: &mut Bs, mode: Mode, access: Access) -> u16 {
        match mode {
            Mode::Zp => self.fetch(bus) as u16,
            Mode::Zpx | Mode::Zpy => {
                let base = self.fetch(bus);
                self.read(bus, base as u16);
                let idx = if mode == Mode::Zpx { self.x } else { self.y };
                base.wrapping_add(idx) as u16
            }
            Mode::Abs => {
                let lo = self.fetch(bus);
                let hi = self.fetch(bus);
                u16::from_le_bytes([lo, hi])
            }
            Mode::Abx | Mode::Aby => {
                let lo = self.fetch(bus);
                let hi = self.fetch(bus);
                let idx = if mode == Mode::Abx { self.x } else { self.y };
                self.indexed(bus, u16::from_le_bytes([lo, hi]), idx, access)
            }
            Mode::Izx => {
                let ptr = self.fetch(bus);
                self.read(bus, ptr as u16);
                let p = ptr.wrapping_add(self.x);
                let lo = self.read(bus, p as u16);
                let hi = self.read(bus, p.wrapping_add(1) as u16);
                u16::from_le_bytes([lo, hi])
            }
            Mode::Izy => {
                let ptr = self.fetch(bus);
                let lo = self.read(bus, ptr as u16);
                let hi = self.read(bus, ptr.wrapping_add(1) as u16);
                self.indexed(bus, u16::from_le_bytes([lo, hi]), self.y, access)
            }
            // Immediate, implied and the rest never come here.
            _ => self.pc,
        }
    }

    /// base + index with the dummy read of the un-carried address: always for writes and
    /// read-modify-writes, only on a page crossing for reads.
    #[inline(always)]
    fn indexed<Bs: CpuBus>(&mut self, bus: &mut Bs, base: u16, idx: u8, access: Access) -> u16 {
        let addr = base.wrapping_add(idx as u16);
        let crossed = (base ^ addr) & 0xff00 != 0;
        if crossed || access != Access::Read {
            self.read(bus, (base & 0xff00) | (addr & 0x00ff));
        }
        addr
    }

    /// Fetches the operand value of a read instruction.
    #[inline(always)]
    fn operand<Bs: CpuBus>(&mut self, bus: &mut Bs, mode: Mode) -> u8 {
        match mode {
            Mode::Imm => self.fetch(bus),
            _ => {
                let addr = self.address(bus, mode, Access::Read);
                self.read(bus, addr)
            }
        }
    }

    #[inline(always)]
    fn execute<Bs: CpuBus>(&mut self, bus: &mut Bs, mn: Mn, mode: Mode, opcode: u8, pc: u16) {
        match mn.access() {
            Access::Read => {
                let v = self.operand(bus, mode);
                self.exec_read(mn, v);
            }
            Access::Write => {
                self.exec_write(bus, mn, mode);
            }
            Access::Modify => {
                if mode == Mode::Acc {
                    self.read(bus, self.pc);
                    self.a = self.modify(mn, self.a);
                } else {
                    let addr = self.address(bus, mode, Access::Modify);
                    let v = self.read(bus, addr);
                    self.write(bus, addr, v);
                    let r = self.modify(mn, v);
                    self.write(bus, addr, r);
                }
            }
            Access::Other => self.exec_other(bus, mn, mode, opcode, pc),
        }
    }

    #[inline(always)]
    fn exec_read(&mut self, mn: Mn, v: u8) {
        match mn {
            Mn::LDA => {
                self.a = v;
                self.set_zn(v);
            }
            Mn::LDX => {
                self.x = v;
                self.set_zn(v);
            }
            Mn::LDY => {
                self.y = v;
                self.set_zn(v);
            }
            Mn::LAX => {
                self.a = v;
                self.x = v;
                self.set_zn(v);
            }
            Mn::AND => {
                self.a &= v;
                self.set_zn(self.a);
            }
            Mn::ORA => {
                self.a |= v;
                self.set_zn(self.a);
            }
            Mn::EOR => {
                self.a ^= v;
                self.set_zn(self.a);
            }
            Mn::ADC => self.adc(v),
            Mn::SBC => self.sbc(v),
            Mn::CMP => self.compare(self.a, v),
            Mn::CPX => self.compare(self.x, v),
            Mn::CPY => self.compare(self.y, v),
            Mn::BIT => {
                self.p = (self.p & !(Z | V | N)) | (v & (V | N)) | if self.a & v == 0 { Z } else { 0 };
            }
            Mn::NOP => {}
            Mn::ANC => {
                self.a &= v;
                self.set_zn(self.a);
                self.set_flag(C, self.a & 0x80 != 0);
            }
            Mn::ALR => {
                self.a &= v;
                self.a = self.lsr(self.a);
            }
            Mn::ARR => {
                let r = ((self.a & v) >> 1) | ((self.p & C) << 7);
                self.a = r;
                self.set_zn(r);
                self.set_flag(C, r & 0x40 != 0);
                self.set_flag(V, ((r >> 6) ^ (r >> 5)) & 1 != 0);
            }
            // Unstable on hardware; these are the values most emulators and test ROMs assume.
            Mn::XAA => {
                self.a = (self.a | 0xee) & self.x & v;
                self.set_zn(self.a);
            }
            Mn::LXA => {
                self.a = v;
                self.x = v;
                self.set_zn(v);
            }
            Mn::AXS => {
                let ax = self.a & self.x;
                let r = ax.wrapping_sub(v);
                self.set_flag(C, ax >= v);
                self.x = r;
                self.set_zn(r);
            }
            Mn::LAS => {
                let r = v & self.s;
                self.a = r;
                self.x = r;
                self.s = r;
                self.set_zn(r);
            }
            _ => unreachable_op(),
        }
    }

    fn exec_write<Bs: CpuBus>(&mut self, bus: &mut Bs, mn: Mn, mode: Mode) {
        match mn {
            Mn::STA | Mn::STX | Mn::STY | Mn::SAX => {
                let addr = self.address(bus, mode, Access::Write);
                let v = match mn {
                    Mn::STA => self.a,
                    Mn::STX => self.x,
                    Mn::STY => self.y,
                    _ => self.a & self.x,
                };
                self.write(bus, addr, v);
            }
            // SHA/SHX/SHY/TAS store reg & (high byte of base + 1); when indexing crosses a
            // page, that value also replaces the high byte of the address.
            _ => {
                let (base, idx) = match mode {
                    Mode::Izy => {
                        let ptr = self.fetch(bus);
                        let lo = self.read(bus, ptr as u16);
                        let hi = self.read(bus, ptr.wrapping_add(1) as u16);
                        (u16::from_le_bytes([lo, hi]), self.y)
                    }
                    _ => {
                        let lo = self.fetch(bus);
                        let hi = self.fetch(bus);
                        let idx = if mode == Mode::Abx { self.x } else { self.y };
                        (u16::from_le_bytes([lo, hi]), idx)
                    }
                };
                let addr = base.wrapping_add(idx as u16);
                self.read(bus, (base & 0xff00) | (addr & 0x00ff));
                let reg = match mn {
                    Mn::SHA => self.a & self.x,
                    Mn::SHX => self.x,
                    Mn::SHY => self.y,
                    _ => {
                        self.s = self.a & self.x;
                        self.s
                    }
                };
                let v = reg & ((base >> 8) as u8).wrapping_add(1);
                let crossed = (base ^ addr) & 0xff00 != 0;
                let target = if crossed { ((v as u16) << 8) | (addr & 0xff) } else { addr };
                self.write(bus, target, v);
            }
        }
    }

    #[inline(always)]
    fn modify(&mut self, mn: Mn, v: u8) -> u8 {
        match mn {
            Mn::ASL => self.asl(v),
            Mn::LSR => self.lsr(v),
            Mn::ROL => self.rol(v),
            Mn::ROR => self.ror(v),
            Mn::INC => {
                let r = v.wrapping_add(1);
                self.set_zn(r);
                r
            }
            Mn::DEC => {
                let r = v.wrapping_sub(1);
                self.set_zn(r);
                r
            }
            Mn::SLO => {
                let r = self.asl(v);
                self.a |= r;
                self.set_zn(self.a);
                r
            }
            Mn::RLA => {
                let r = self.rol(v);
                self.a &= r;
                self.set_zn(self.a);
                r
            }
            Mn::SRE => {
                let r = self.lsr(v);
                self.a ^= r;
                self.set_zn(self.a);
                r
            }
            Mn::RRA => {
                let r = self.ror(v);
                self.adc(r);
                r
            }
            Mn::DCP => {
                let r = v.wrapping_sub(1);
                self.compare(self.a, r);
                r
            }
            Mn::ISC => {
                let r = v.wrapping_add(1);
                self.sbc(r);
                r
            }
            _ => {
                unreachable_op();
                v
            }
        }
    }

    fn exec_other<Bs: CpuBus>(&mut self, bus: &mut Bs, mn: Mn, mode: Mode, opcode: u8, pc: u16) {
        match mn {
            Mn::BPL => self.branch(bus, self.p & N == 0),
            Mn::BMI => self.branch(bus, self.p & N != 0),
            Mn::BVC => self.branch(bus, self.p & V == 0),
            Mn::BVS => self.branch(bus, self.p & V != 0),
            Mn::BCC => self.branch(bus, self.p & C == 0),
            Mn::BCS => self.branch(bus, self.p & C != 0),
            Mn::BNE => self.branch(bus, self.p & Z == 0),
            Mn::BEQ => self.branch(bus, self.p & Z != 0),
            Mn::JMP => {
                let lo = self.fetch(bus);
                let hi = self.fetch(bus);
                let target = u16::from_le_bytes([lo, hi]);
                if mode == Mode::Ind {
                    let lo = self.read(bus, target);
                    let hi = self.read(bus, (target & 0xff00) | (target.wrapping_add(1) & 0x00ff));
                    self.pc = u16::from_le_bytes([lo, hi]);
                } else {
                    self.pc = target;
                }
            }
            Mn::JSR => {
                let lo = self.fetch(bus);
                self.read(bus, 0x100 | self.s as u16);
                self.push(bus, (self.pc >> 8) as u8);
                self.push(bus, self.pc as u8);
                let hi = self.read(bus, self.pc);
                self.pc = u16::from_le_bytes([lo, hi]);
            }
            Mn::RTS => {
                self.read(bus, self.pc);
                self.read(bus, 0x100 | self.s as u16);
                let lo = self.pull(bus);
                let hi = self.pull(bus);
                self.pc = u16::from_le_bytes([lo, hi]);
                self.read(bus, self.pc);
                self.pc = self.pc.wrapping_add(1);
            }
            Mn::RTI => {
                self.read(bus, self.pc);
                self.read(bus, 0x100 | self.s as u16);
                let p = self.pull(bus);
                self.p = p & !(B | U);
                self.unsettle();
                let lo = self.pull(bus);
                let hi = self.pull(bus);
                self.pc = u16::from_le_bytes([lo, hi]);
            }
            Mn::BRK => {
                self.fetch(bus);
                self.push(bus, (self.pc >> 8) as u8);
                self.push(bus, self.pc as u8);
                let vector = if self.nmi_pending {
                    self.nmi_pending = false;
                    self.settled = UNSETTLED;
                    NMI_VECTOR
                } else {
                    IRQ_VECTOR
                };
                self.push(bus, self.p | B | U);
                self.p |= I;
                self.unsettle();
                let lo = self.read(bus, vector);
                let hi = self.read(bus, vector + 1);
                self.pc = u16::from_le_bytes([lo, hi]);
                // An NMI seen during BRK's last cycles waits for the next instruction.
                self.nmi_take = false;
                self.settled = UNSETTLED;
            }
            Mn::PHA => {
                self.read(bus, self.pc);
                self.push(bus, self.a);
            }
            Mn::PHP => {
                self.read(bus, self.pc);
                self.push(bus, self.p | B | U);
            }
            Mn::PLA => {
                self.read(bus, self.pc);
                self.read(bus, 0x100 | self.s as u16);
                self.a = self.pull(bus);
                self.set_zn(self.a);
            }
            Mn::PLP => {
                self.read(bus, self.pc);
                self.read(bus, 0x100 | self.s as u16);
                let p = self.pull(bus);
                self.p = p & !(B | U);
                self.unsettle();
            }
            Mn::JAM => {
                self.fault = Some(Fault::Jam { opcode, pc });
                self.pc = pc;
            }
            _ => {
                // Implied one-byte instructions: a dummy read of the next byte.
                self.read(bus, self.pc);
                self.implied(mn);
            }
        }
    }

    #[inline(always)]
    fn implied(&mut self, mn: Mn) {
        match mn {
            Mn::CLC => self.p &= !C,
            Mn::SEC => self.p |= C,
            Mn::CLI => {
                self.p &= !I;
                self.unsettle();
            }
            Mn::SEI => {
                self.p |= I;
                self.unsettle();
            }
            Mn::CLV => self.p &= !V,
            Mn::CLD => self.p &= !D,
            Mn::SED => self.p |= D,
            Mn::TAX => {
                self.x = self.a;
                self.set_zn(self.x);
            }
            Mn::TAY => {
                self.y = self.a;
                self.set_zn(self.y);
            }
            Mn::TXA => {
                self.a = self.x;
                self.set_zn(self.a);
            }
            Mn::TYA => {
                self.a = self.y;
                self.set_zn(self.a);
            }
            Mn::TSX => {
                self.x = self.s;
                self.set_zn(self.x);
            }
            Mn::TXS => self.s = self.x,
            Mn::INX => {
                self.x = self.x.wrapping_add(1);
                self.set_zn(self.x);
            }
            Mn::INY => {
                self.y = self.y.wrapping_add(1);
                self.set_zn(self.y);
            }
            Mn::DEX => {
                self.x = self.x.wrapping_sub(1);
                self.set_zn(self.x);
            }
            Mn::DEY => {
                self.y = self.y.wrapping_sub(1);
                self.set_zn(self.y);
            }
            // Implied NOPs ($EA and the unofficial $1A, $3A, ...).
            _ => {}
        }
    }

    #[inline(always)]
    fn branch<Bs: CpuBus>(&mut self, bus: &mut Bs, taken: bool) {
        let offset = self.fetch(bus) as i8;
        if !taken {
            return;
        }
        // A taken branch that crosses no page does not poll interrupts on its last cycle:
        // an IRQ that arrived during it waits one more instruction.
        if self.irq_run && !self.irq_take {
            self.irq_run = false;
        }
        self.read(bus, self.pc);
        let target = self.pc.wrapping_add(offset as u16);
        if (target ^ self.pc) & 0xff00 != 0 {
            self.read(bus, (self.pc & 0xff00) | (target & 0x00ff));
        }
        self.pc = target;
    }

    #[inline(always)]
    fn compare(&mut self, reg: u8, v: u8) {
        self.set_flag(C, reg >= v);
        self.set_zn(reg.wrapping_sub(v));
    }

    #[inline(always)]
    fn adc(&mut self, v: u8) {
        if self.decimal_mode && self.p & D != 0 {
            self.adc_decimal(v);
        } else {
            self.adc_binary(v);
        }
    }

    #[inline(always)]
    fn adc_binary(&mut self, v: u8) {
        let sum = self.a as u16 + v as u16 + (self.p & C) as u16;
        let r = sum as u8;
        self.set_flag(C, sum > 0xff);
        self.set_flag(V, (!(self.a ^ v) & (self.a ^ r) & 0x80) != 0);
        self.a = r;
        self.set_zn(r);
    }

    #[inline(always)]
    fn sbc(&mut self, v: u8) {
        if self.decimal_mode && self.p & D != 0 {
            self.sbc_decimal(v);
        } else {
            self.adc_binary(!v);
        }
    }

    // NMOS 6502 BCD: flags N, V, Z come from the binary intermediate results.
    fn adc_decimal(&mut self, v: u8) {
        let c = (self.p & C) as u16;
        let a = self.a as u16;
        let bin = (a + v as u16 + c) as u8;
        let mut lo = (a & 0x0f) + (v as u16 & 0x0f) + c;
        if lo > 9 {
            lo += 6;
        }
        let mut r = (a & 0xf0) + (v as u16 & 0xf0) + if lo > 0x0f { 0x10 } else { 0 } + (lo & 0x0f);
        self.set_flag(Z, bin == 0);
        self.set_flag(N, r & 0x80 != 0);
        self.set_flag(V, (!(a ^ v as u16) & (a ^ r) & 0x80) != 0);
        if r > 0x9f {
            r += 0x60;
        }
        self.set_flag(C, r > 0xff);
        self.a = r as u8;
    }

    fn sbc_decimal(&mut self, v: u8) {
        let borrow = 1 - (self.p & C) as i16;
        let a = self.a as i16;
        let bin = a - v as i16 - borrow;
        let mut lo = (a & 0x0f) - (v as i16 & 0x0f) - borrow;
        let mut hi = (a >> 4) - (v as i16 >> 4);
        if lo < 0 {
            lo -= 6;
            hi -= 1;
        }
        if hi < 0 {
            hi -= 6;
        }
        let r8 = bin as u8;
        self.set_flag(C, bin >= 0);
        self.set_flag(Z, r8 == 0);
        self.set_flag(N, r8 & 0x80 != 0);
        self.set_flag(V, ((a ^ v as i16) & (a ^ bin) & 0x80) != 0);
        self.a = (((hi << 4) | (lo & 0x0f)) & 0xff) as u8;
    }

    #[inline(always)]
    fn asl(&mut self, v: u8) -> u8 {
        self.set_flag(C, v & 0x80 != 0);
        let r = v << 1;
        self.set_zn(r);
        r
    }

    #[inline(always)]
    fn lsr(&mut self, v: u8) -> u8 {
        self.set_flag(C, v & 1 != 0);
        let r = v >> 1;
        self.set_zn(r);
        r
    }

    #[inline(always)]
    fn rol(&mut self, v: u8) -> u8 {
        let r = (v << 1) | (self.p & C);
        self.set_flag(C, v & 0x80 != 0);
        self.set_zn(r);
        r
    }

    #[inline(always)]
    fn ror(&mut self, v: u8) -> u8 {
        let r = (v >> 1) | ((self.p & C) << 7);
        self.set_flag(C, v & 1 != 0);
        self.set_zn(r);
        r
    }
}

#[cold]
fn unreachable_op() {
    // The access class of each mnemonic routes it to exactly one executor; reaching here
    // would be a table bug, caught by the opcode tests, not a runtime condition.
    debug_assert!(false, "mnemonic routed to the wrong executor");
}

impl Snapshot for Cpu {
    fn save(&self, w: &mut StateWriter<'_>) {
        w.u8(self.a);
        w.u8(self.x);
        w.u8(self.y);
        w.u8(self.s);
        w.u8(self.p);
        w.u16(self.pc);
        match self.fault {
            None => {
                w.u8(0);
                w.u8(0);
                w.u16(0);
            }
            Some(Fault::Jam { opcode, pc }) => {
                w.u8(1);
                w.u8(opcode);
                w.u16(pc);
            }
            Some(Fault::Stalled { pc }) => {
                w.u8(2);
                w.u8(0);
                w.u16(pc);
            }
        }
        w.bool(self.decimal_mode);
        w.bool(self.nmi_prev_line);
        w.bool(self.nmi_pending);
        w.bool(self.nmi_take);
        w.bool(self.irq_run);
        w.bool(self.irq_take);
        w.bool(self.reset_pending);
    }

    fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        self.a = r.u8()?;
        self.x = r.u8()?;
        self.y = r.u8()?;
        self.s = r.u8()?;
        let p = r.u8()?;
        if p & (B | U) != 0 {
            return Err(StateError::BadField("cpu.p"));
        }
        self.p = p;
        self.pc = r.u16()?;
        let tag = r.u8()?;
        let opcode = r.u8()?;
        let pc = r.u16()?;
        self.fault = match tag {
            0 => None,
            1 => Some(Fault::Jam { opcode, pc }),
            2 => Some(Fault::Stalled { pc }),
            _ => return Err(StateError::BadField("cpu.fault")),
        };
        self.decimal_mode = r.bool()?;
        self.nmi_prev_line = r.bool()?;
        self.nmi_pending = r.bool()?;
        self.nmi_take = r.bool()?;
        self.irq_run = r.bool()?;
        self.irq_take = r.bool()?;
        self.reset_pending = r.bool()?;
        self.settled = UNSETTLED;
        Ok(())
    }
}

#[cfg(test)]
mod tests;

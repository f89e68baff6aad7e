//! The 2A03 opcode matrix, laid out like the datasheet: row = high nibble, column = low nibble.
//!
//! Every one of the 256 opcodes has a mnemonic and an addressing mode; unofficial opcodes use
//! their common names (SLO, RLA, SRE, RRA, SAX, LAX, DCP, ISC, ANC, ALR, ARR, XAA, LXA, AXS,
//! SHA, SHX, SHY, TAS, LAS) and the twelve halting opcodes are `JAM`. The CUDA kernel's copy of
//! this table is generated from it (see `tables::cuda_header`), never typed by hand.

use Mn::*;
use Mode::*;

/// Addressing modes. Cycle by cycle (R = read, W = write, `d` = dummy access):
/// - `Imp`/`Acc`: 2: R PC (d).
/// - `Imm`: 2: R PC++ (operand).
/// - `Zp`: 2: R PC++ (addr); 3: access addr.
/// - `Zpx`/`Zpy`: 2: R PC++ (base); 3: R base (d); 4: access (base+X) & $FF.
/// - `Abs`: 2: R PC++ (lo); 3: R PC++ (hi); 4: access.
/// - `Abx`/`Aby`: 2-3 as Abs; 4: R (hi, lo+X) (d, skipped by reads that cross no page);
///   5: access the carried address.
/// - `Izx`: 2: R PC++ (ptr); 3: R ptr (d); 4-5: R lo/hi at ptr+X (wrapping in page zero); 6: access.
/// - `Izy`: 2: R PC++ (ptr); 3-4: R lo/hi at ptr (wrapping); 5: R (hi, lo+Y) (d, skipped by reads
///   crossing no page); 6: access.
/// - `Ind` (JMP only): pointer fetch wraps within its page (the $xxFF bug).
/// - `Rel`: branches: 2: R PC++ (offset); 3 if taken: R PC (d); 4 if the page changes: R (d).
///
/// Read-modify-write instructions add: R value, W value unchanged (d), W result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Imp,
    Acc,
    Imm,
    Zp,
    Zpx,
    Zpy,
    Abs,
    Abx,
    Aby,
    Izx,
    Izy,
    Ind,
    Rel,
}

/// Mnemonics, official and unofficial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[rustfmt::skip]
pub enum Mn {
    ADC, AND, ASL, BCC, BCS, BEQ, BIT, BMI, BNE, BPL, BRK, BVC, BVS, CLC, CLD, CLI, CLV, CMP, CPX,
    CPY, DEC, DEX, DEY, EOR, INC, INX, INY, JMP, JSR, LDA, LDX, LDY, LSR, NOP, ORA, PHA, PHP, PLA,
    PLP, ROL, ROR, RTI, RTS, SBC, SEC, SED, SEI, STA, STX, STY, TAX, TAY, TSX, TXA, TXS, TYA,
    // Unofficial.
    SLO, RLA, SRE, RRA, SAX, LAX, DCP, ISC, ANC, ALR, ARR, XAA, LXA, AXS, SHA, SHX, SHY, TAS, LAS,
    JAM,
}

/// How an instruction uses its effective address; decides the dummy cycles of indexed modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Modify,
    /// Implied, stack, jumps and branches: handled by the instruction itself.
    Other,
}

impl Mn {
    pub const fn access(self) -> Access {
        match self {
            ADC | AND | BIT | CMP | CPX | CPY | EOR | LDA | LDX | LDY | ORA | SBC | LAX | NOP | ANC | ALR | ARR
            | XAA | LXA | AXS | LAS => Access::Read,
            STA | STX | STY | SAX | SHA | SHX | SHY | TAS => Access::Write,
            ASL | LSR | ROL | ROR | INC | DEC | SLO | RLA | SRE | RRA | DCP | ISC => Access::Modify,
            _ => Access::Other,
        }
    }

    /// Whether nestest and common disassemblers mark it as unofficial.
    pub const fn unofficial(self) -> bool {
        matches!(
            self,
            SLO | RLA
                | SRE
                | RRA
                | SAX
                | LAX
                | DCP
                | ISC
                | ANC
                | ALR
                | ARR
                | XAA
                | LXA
                | AXS
                | SHA
                | SHX
                | SHY
                | TAS
                | LAS
                | JAM
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub mn: Mn,
    pub mode: Mode,
}

const fn o(mn: Mn, mode: Mode) -> Op {
    Op { mn, mode }
}

#[rustfmt::skip]
pub const OPS: [Op; 256] = [
//  x0            x1            x2            x3            x4            x5            x6            x7            x8            x9            xA            xB            xC            xD            xE            xF
o(BRK,Imp), o(ORA,Izx), o(JAM,Imp), o(SLO,Izx), o(NOP,Zp ), o(ORA,Zp ), o(ASL,Zp ), o(SLO,Zp ), o(PHP,Imp), o(ORA,Imm), o(ASL,Acc), o(ANC,Imm), o(NOP,Abs), o(ORA,Abs), o(ASL,Abs), o(SLO,Abs), // 0x
o(BPL,Rel), o(ORA,Izy), o(JAM,Imp), o(SLO,Izy), o(NOP,Zpx), o(ORA,Zpx), o(ASL,Zpx), o(SLO,Zpx), o(CLC,Imp), o(ORA,Aby), o(NOP,Imp), o(SLO,Aby), o(NOP,Abx), o(ORA,Abx), o(ASL,Abx), o(SLO,Abx), // 1x
o(JSR,Abs), o(AND,Izx), o(JAM,Imp), o(RLA,Izx), o(BIT,Zp ), o(AND,Zp ), o(ROL,Zp ), o(RLA,Zp ), o(PLP,Imp), o(AND,Imm), o(ROL,Acc), o(ANC,Imm), o(BIT,Abs), o(AND,Abs), o(ROL,Abs), o(RLA,Abs), // 2x
o(BMI,Rel), o(AND,Izy), o(JAM,Imp), o(RLA,Izy), o(NOP,Zpx), o(AND,Zpx), o(ROL,Zpx), o(RLA,Zpx), o(SEC,Imp), o(AND,Aby), o(NOP,Imp), o(RLA,Aby), o(NOP,Abx), o(AND,Abx), o(ROL,Abx), o(RLA,Abx), // 3x
o(RTI,Imp), o(EOR,Izx), o(JAM,Imp), o(SRE,Izx), o(NOP,Zp ), o(EOR,Zp ), o(LSR,Zp ), o(SRE,Zp ), o(PHA,Imp), o(EOR,Imm), o(LSR,Acc), o(ALR,Imm), o(JMP,Abs), o(EOR,Abs), o(LSR,Abs), o(SRE,Abs), // 4x
o(BVC,Rel), o(EOR,Izy), o(JAM,Imp), o(SRE,Izy), o(NOP,Zpx), o(EOR,Zpx), o(LSR,Zpx), o(SRE,Zpx), o(CLI,Imp), o(EOR,Aby), o(NOP,Imp), o(SRE,Aby), o(NOP,Abx), o(EOR,Abx), o(LSR,Abx), o(SRE,Abx), // 5x
o(RTS,Imp), o(ADC,Izx), o(JAM,Imp), o(RRA,Izx), o(NOP,Zp ), o(ADC,Zp ), o(ROR,Zp ), o(RRA,Zp ), o(PLA,Imp), o(ADC,Imm), o(ROR,Acc), o(ARR,Imm), o(JMP,Ind), o(ADC,Abs), o(ROR,Abs), o(RRA,Abs), // 6x
o(BVS,Rel), o(ADC,Izy), o(JAM,Imp), o(RRA,Izy), o(NOP,Zpx), o(ADC,Zpx), o(ROR,Zpx), o(RRA,Zpx), o(SEI,Imp), o(ADC,Aby), o(NOP,Imp), o(RRA,Aby), o(NOP,Abx), o(ADC,Abx), o(ROR,Abx), o(RRA,Abx), // 7x
o(NOP,Imm), o(STA,Izx), o(NOP,Imm), o(SAX,Izx), o(STY,Zp ), o(STA,Zp ), o(STX,Zp ), o(SAX,Zp ), o(DEY,Imp), o(NOP,Imm), o(TXA,Imp), o(XAA,Imm), o(STY,Abs), o(STA,Abs), o(STX,Abs), o(SAX,Abs), // 8x
o(BCC,Rel), o(STA,Izy), o(JAM,Imp), o(SHA,Izy), o(STY,Zpx), o(STA,Zpx), o(STX,Zpy), o(SAX,Zpy), o(TYA,Imp), o(STA,Aby), o(TXS,Imp), o(TAS,Aby), o(SHY,Abx), o(STA,Abx), o(SHX,Aby), o(SHA,Aby), // 9x
o(LDY,Imm), o(LDA,Izx), o(LDX,Imm), o(LAX,Izx), o(LDY,Zp ), o(LDA,Zp ), o(LDX,Zp ), o(LAX,Zp ), o(TAY,Imp), o(LDA,Imm), o(TAX,Imp), o(LXA,Imm), o(LDY,Abs), o(LDA,Abs), o(LDX,Abs), o(LAX,Abs), // Ax
o(BCS,Rel), o(LDA,Izy), o(JAM,Imp), o(LAX,Izy), o(LDY,Zpx), o(LDA,Zpx), o(LDX,Zpy), o(LAX,Zpy), o(CLV,Imp), o(LDA,Aby), o(TSX,Imp), o(LAS,Aby), o(LDY,Abx), o(LDA,Abx), o(LDX,Aby), o(LAX,Aby), // Bx
o(CPY,Imm), o(CMP,Izx), o(NOP,Imm), o(DCP,Izx), o(CPY,Zp ), o(CMP,Zp ), o(DEC,Zp ), o(DCP,Zp ), o(INY,Imp), o(CMP,Imm), o(DEX,Imp), o(AXS,Imm), o(CPY,Abs), o(CMP,Abs), o(DEC,Abs), o(DCP,Abs), // Cx
o(BNE,Rel), o(CMP,Izy), o(JAM,Imp), o(DCP,Izy), o(NOP,Zpx), o(CMP,Zpx), o(DEC,Zpx), o(DCP,Zpx), o(CLD,Imp), o(CMP,Aby), o(NOP,Imp), o(DCP,Aby), o(NOP,Abx), o(CMP,Abx), o(DEC,Abx), o(DCP,Abx), // Dx
o(CPX,Imm), o(SBC,Izx), o(NOP,Imm), o(ISC,Izx), o(CPX,Zp ), o(SBC,Zp ), o(INC,Zp ), o(ISC,Zp ), o(INX,Imp), o(SBC,Imm), o(NOP,Imp), o(SBC,Imm), o(CPX,Abs), o(SBC,Abs), o(INC,Abs), o(ISC,Abs), // Ex
o(BEQ,Rel), o(SBC,Izy), o(JAM,Imp), o(ISC,Izy), o(NOP,Zpx), o(SBC,Zpx), o(INC,Zpx), o(ISC,Zpx), o(SED,Imp), o(SBC,Aby), o(NOP,Imp), o(ISC,Aby), o(NOP,Abx), o(SBC,Abx), o(INC,Abx), o(ISC,Abx), // Fx
];

/// Instruction length in bytes for a mode (used by the tracer/disassembler).
pub const fn len(mode: Mode) -> u16 {
    match mode {
        Imp | Acc => 1,
        Imm | Zp | Zpx | Zpy | Izx | Izy | Rel => 2,
        Abs | Abx | Aby | Ind => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_151_official_opcodes() {
        let official = OPS.iter().filter(|op| !op.mn.unofficial()).count();
        // 151 official opcodes, plus 27 unofficial NOPs and SBC $EB that reuse official mnemonics.
        assert_eq!(official, 151 + 28);
    }

    #[test]
    fn there_are_twelve_jam_opcodes() {
        let jams: usize = OPS.iter().filter(|op| op.mn == Mn::JAM).count();
        assert_eq!(jams, 12);
    }

    #[test]
    fn every_column_2_row_0_to_f_except_a_c_e_8_halts() {
        for hi in 0..16usize {
            let op = OPS[hi * 16 + 2];
            let halts = !matches!(hi, 0x8 | 0xa | 0xc | 0xe);
            assert_eq!(op.mn == Mn::JAM, halts, "opcode {:02X}", hi * 16 + 2);
        }
    }

    #[test]
    fn store_instructions_are_write_access() {
        assert_eq!(OPS[0x9d].mn.access(), Access::Write);
        assert_eq!(OPS[0xfe].mn.access(), Access::Modify);
        assert_eq!(OPS[0xbd].mn.access(), Access::Read);
    }
}

//! Cycle-level facts about the 2A03, checked against a bus that records every access.

use super::*;
use std::vec::Vec;

#[derive(Default)]
struct Recorder {
    mem: Vec<u8>,
    log: Vec<(char, u16, u8)>,
    nmi: bool,
    irq: bool,
}

impl Recorder {
    fn with_program(at: u16, code: &[u8]) -> (Cpu, Recorder) {
        let mut bus = Recorder { mem: std::vec![0; 0x10000], ..Default::default() };
        bus.mem[at as usize..at as usize + code.len()].copy_from_slice(code);
        bus.mem[0xfffc] = at as u8;
        bus.mem[0xfffd] = (at >> 8) as u8;
        let mut cpu = Cpu::new();
        cpu.step(&mut bus); // reset sequence
        bus.log.clear();
        (cpu, bus)
    }
}

impl CpuBus for Recorder {
    fn read(&mut self, addr: u16) -> u8 {
        let v = self.mem[addr as usize];
        self.log.push(('R', addr, v));
        v
    }
    fn write(&mut self, addr: u16, v: u8) {
        self.log.push(('W', addr, v));
        self.mem[addr as usize] = v;
    }
    fn nmi_line(&self) -> bool {
        self.nmi
    }
    fn irq_line(&self) -> bool {
        self.irq
    }
    fn idle(&mut self) {
        self.log.push(('I', 0, 0));
    }
}

#[test]
fn reset_takes_seven_cycles_and_leaves_s_at_fd_with_i_set() {
    let mut bus = Recorder { mem: std::vec![0; 0x10000], ..Default::default() };
    bus.mem[0xfffc] = 0x34;
    bus.mem[0xfffd] = 0x12;
    let mut cpu = Cpu::new();
    cpu.step(&mut bus);
    assert_eq!(bus.log.len(), 7);
    assert!(bus.log.iter().all(|a| a.0 == 'R'), "reset never writes the stack");
    assert_eq!((cpu.pc, cpu.s, cpu.p & I), (0x1234, 0xfd, I));
}

#[test]
fn lda_absolute_x_reads_the_uncarried_address_first_when_crossing_a_page() {
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0xbd, 0xff, 0x20]); // LDA $20FF,X
    cpu.x = 1;
    cpu.step(&mut bus);
    let addrs: Vec<u16> = bus.log.iter().map(|a| a.1).collect();
    assert_eq!(addrs, [0x8000, 0x8001, 0x8002, 0x2000, 0x2100]);
}

#[test]
fn lda_absolute_x_without_a_page_cross_takes_four_cycles() {
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0xbd, 0x00, 0x20]);
    cpu.x = 1;
    cpu.step(&mut bus);
    assert_eq!(bus.log.len(), 4);
}

#[test]
fn sta_absolute_x_always_makes_the_dummy_read() {
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0x9d, 0x00, 0x20]);
    cpu.x = 1;
    cpu.step(&mut bus);
    assert_eq!(bus.log.len(), 5);
    assert_eq!(bus.log[3], ('R', 0x2001, 0));
    assert_eq!(bus.log[4].0, 'W');
}

#[test]
fn read_modify_write_writes_the_old_value_back_before_the_new_one() {
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0xee, 0x00, 0x03]); // INC $0300
    bus.mem[0x300] = 0x41;
    cpu.step(&mut bus);
    let writes: Vec<_> = bus.log.iter().filter(|a| a.0 == 'W').collect();
    assert_eq!(writes, [&('W', 0x300, 0x41), &('W', 0x300, 0x42)]);
    assert_eq!(bus.log.len(), 6);
}

#[test]
fn jmp_indirect_wraps_the_pointer_within_its_page() {
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0x6c, 0xff, 0x02]);
    bus.mem[0x2ff] = 0x34;
    bus.mem[0x200] = 0x12;
    bus.mem[0x300] = 0x99;
    cpu.step(&mut bus);
    assert_eq!(cpu.pc, 0x1234);
}

#[test]
fn a_taken_branch_across_a_page_takes_four_cycles() {
    let (mut cpu, mut bus) = Recorder::with_program(0x80f0, &[0xd0, 0x20]); // BNE +$20
    cpu.p &= !Z;
    cpu.step(&mut bus);
    assert_eq!(bus.log.len(), 4);
    assert_eq!(cpu.pc, 0x8112);
}

#[test]
fn an_irq_after_cli_waits_one_instruction() {
    // CLI; NOP; NOP with the IRQ line held low from the start.
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0x58, 0xea, 0xea]);
    bus.mem[0xfffe] = 0x00;
    bus.mem[0xffff] = 0x90;
    bus.irq = true;
    cpu.step(&mut bus); // CLI
    assert_eq!(cpu.pc, 0x8001, "no interrupt right after CLI");
    cpu.step(&mut bus); // NOP, then the IRQ sequence
    assert_eq!(cpu.pc, 0x9000);
    assert_eq!(bus.mem[0x1fb] & B, 0, "IRQ pushes P with B clear");
}

#[test]
fn an_nmi_during_brk_hijacks_its_vector() {
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0x00, 0x00]);
    bus.mem[0xfffa] = 0x00;
    bus.mem[0xfffb] = 0xa0;
    bus.mem[0xfffe] = 0x00;
    bus.mem[0xffff] = 0x90;
    bus.nmi = true; // rises during the BRK sequence
    cpu.step(&mut bus);
    assert_eq!(cpu.pc, 0xa000);
    assert_ne!(bus.mem[0x1fb] & B, 0, "the pushed P still says BRK");
}

#[test]
fn a_jam_opcode_halts_the_cpu_and_sets_a_fault() {
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0x02]);
    cpu.step(&mut bus);
    assert_eq!(cpu.fault, Some(Fault::Jam { opcode: 0x02, pc: 0x8000 }));
    bus.log.clear();
    cpu.step(&mut bus);
    assert_eq!(bus.log, [('I', 0, 0)], "a halted CPU only lets time pass");
}

#[test]
fn adc_ignores_the_decimal_flag_on_the_2a03() {
    let (mut cpu, mut bus) = Recorder::with_program(0x8000, &[0xf8, 0x69, 0x01]); // SED; ADC #1
    cpu.a = 0x09;
    cpu.step(&mut bus);
    cpu.step(&mut bus);
    assert_eq!(cpu.a, 0x0a);
}

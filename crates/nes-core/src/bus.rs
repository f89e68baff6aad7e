//! The CPU's address space and the console clock.
//!
//! | range        | device |
//! |--------------|--------|
//! | $0000-$1FFF  | 2 KiB RAM, mirrored every $800 |
//! | $2000-$3FFF  | PPU registers, mirrored every 8 |
//! | $4000-$4017  | APU, OAM DMA ($4014), controllers ($4016/$4017) |
//! | $4018-$401F  | disabled test registers: open bus |
//! | $4020-$FFFF  | cartridge |
//!
//! Each CPU access is one CPU cycle: the bus first runs the PPU for 3 dots and the APU for one
//! cycle, then performs the access.
//!
//! The PPU runs lazily ("catch-up"): the bus counts the dots it owes the PPU and runs them in
//! one batch ([`Ppu::run`]) only when something could observe the difference: a CPU access
//! to $2000-$3FFF, $4014 or a mapper register, the dots where the NMI line can change by
//! itself (VBL set at 241/1, cleared at 261/1: `Ppu::dots_to_nmi_event`), and the end of
//! every `Console::step`/`run_frame`, so the PPU's public fields and save states are exact
//! between calls. MMC3 boards run the PPU every cycle: their IRQ line (sampled by the CPU each
//! cycle) depends on the PPU's A12 edges. A batch of dots is where the PPU can render a tile
//! at a time (see `ppu/render.rs`). Reads of unmapped addresses return the last value on the
//! data bus (open bus). DMA units steal cycles by halting the CPU on its next read cycle.

use crate::apu::Apu;
use crate::cart::Cart;
use crate::controller::Controllers;
use crate::cpu::CpuBus;
use crate::ppu::Ppu;
use crate::state::{Snapshot, StateError, StateReader, StateWriter};

#[derive(Clone, Debug)]
pub struct Bus {
    pub ram: [u8; 0x800],
    pub ppu: Ppu,
    pub apu: Apu,
    pub cart: Cart,
    pub pads: Controllers,
    /// CPU cycles since power-on.
    pub cycles: u64,
    /// Last value driven on the CPU data bus.
    pub open_bus: u8,
    /// Page written to $4014, until the DMA runs.
    oam_dma: Option<u8>,
    /// PPU dots owed (lazy catch-up, see the module doc). 0 between `Console` calls; not saved.
    ppu_owed: u32,
    /// Owed dots at which the PPU must catch up (the next dot where the NMI line may change);
    /// 0 means "every dot" (MMC3, or right after a load). Derived, not saved.
    ppu_budget: u32,
    /// False for boards whose IRQ follows PPU fetches (MMC3): the PPU then never lags.
    ppu_lazy: bool,
}

impl Bus {
    pub fn new(cart: Cart) -> Bus {
        let ppu_lazy = cart.kind != crate::mapper::MapperKind::Mmc3;
        Bus {
            ram: [0; 0x800],
            ppu: Ppu::new(),
            apu: Apu::new(),
            cart,
            pads: Controllers::default(),
            cycles: 0,
            open_bus: 0,
            oam_dma: None,
            ppu_owed: 0,
            ppu_budget: 0,
            ppu_lazy,
        }
    }

    /// One CPU cycle of time for everything but the CPU, up to the point where the cycle's
    /// memory access happens: the APU cycle, and 3 PPU dots owed. Only the first 2 of those
    /// dots are before the access (`catch_up_for_access` leaves the third owed); the third
    /// comes after it, so the CPU's end-of-cycle NMI sample sees the PPU one dot after its
    /// access did. That split is what makes the $2002 read race come out as on hardware
    /// (ppu_vbl_nmi 05-08: reads on the VBL dot or one dot after suppress the NMI, two dots
    /// after do not).
    #[inline(always)]
    fn tick(&mut self) {
        self.cycles += 1;
        self.ppu_owed += 3;
        self.apu.tick();
    }

    /// The end of a CPU cycle, before the CPU samples its interrupt lines: run the PPU if the
    /// owed dots reach a dot where the NMI line may change (every cycle on MMC3 boards).
    /// DMA cycles skip this: the CPU samples nothing while halted, and the owed dots carry
    /// over to its next cycle.
    #[inline(always)]
    fn finish_cycle(&mut self) {
        if self.ppu_owed >= self.ppu_budget {
            self.run_ppu(0);
        }
    }

    /// Runs the owed PPU dots but the current cycle's third, before an access that reads or
    /// changes PPU state (registers, OAM DMA writes, mapper banking).
    #[inline(always)]
    fn catch_up_for_access(&mut self) {
        if self.ppu_owed > 1 {
            self.run_ppu(1);
        }
    }

    /// Runs all owed PPU dots: between CPU instructions, so the PPU is exact for observers.
    #[inline(always)]
    pub(crate) fn catch_up_ppu(&mut self) {
        if self.ppu_owed != 0 {
            self.run_ppu(0);
        }
    }

    /// Runs the owed dots but `keep`, then sets the budget: the owed count at which the PPU
    /// reaches the next dot where its NMI output may change by itself.
    #[inline(never)]
    fn run_ppu(&mut self, keep: u32) {
        let n = self.ppu_owed - keep;
        self.ppu_owed = keep;
        self.ppu.run(n, &mut self.cart);
        self.ppu_budget = if self.ppu_lazy { self.ppu.dots_to_nmi_event() } else { 0 };
    }

    /// A read without the clock: what the CPU would see at `addr` now.
    #[inline]
    fn read_mem(&mut self, addr: u16) -> u8 {
        match addr {
            0x0000..=0x1fff => self.ram[addr as usize & 0x7ff],
            0x2000..=0x3fff => {
                self.catch_up_for_access();
                self.ppu.cpu_read(addr, &mut self.cart)
            }
            0x4015 => (self.apu.read_status() & !0x20) | (self.open_bus & 0x20),
            0x4016 | 0x4017 => (self.open_bus & 0xe0) | self.pads.read((addr & 1) as usize),
            0x4000..=0x401f => self.open_bus,
            _ => self.cart.cpu_read(addr).unwrap_or(self.open_bus),
        }
    }

    #[inline]
    fn write_mem(&mut self, addr: u16, v: u8) {
        match addr {
            0x0000..=0x1fff => self.ram[addr as usize & 0x7ff] = v,
            0x2000..=0x3fff => {
                self.catch_up_for_access();
                self.ppu.cpu_write(addr, v, &mut self.cart);
            }
            0x4014 => self.oam_dma = Some(v),
            0x4016 => self.pads.write_strobe(v),
            0x4000..=0x4017 => self.apu.write(addr, v),
            0x4018..=0x401f => {}
            _ => {
                // A mapper register can switch CHR banks or mirroring under the PPU.
                if addr >= 0x8000 {
                    self.catch_up_for_access();
                }
                self.cart.cpu_write(addr, v, self.cycles);
            }
        }
    }

    /// OAM DMA: the CPU halts on its next read, one more cycle aligns to a read ("get")
    /// cycle if needed, then 256 get/put pairs copy page `page` to $2004: 513 or 514 cycles.
    /// Get cycles are the odd ones counted from power-on; the other parity puts an IRQ one
    /// instruction late in cpu_interrupts_v2 test 4 (IRQ at +526 must follow instruction 8).
    fn run_oam_dma(&mut self, page: u8, halted_addr: u16) {
        self.tick();
        self.read_mem(halted_addr);
        if self.cycles & 1 == 0 {
            self.tick();
            self.read_mem(halted_addr);
        }
        let base = (page as u16) << 8;
        for i in 0..256u16 {
            self.tick();
            self.service_dmc_dma();
            let v = self.read_mem(base | i);
            self.open_bus = v;
            self.tick();
            self.catch_up_for_access();
            self.ppu.cpu_write(0x2004, v, &mut self.cart);
        }
    }

    /// DMC sample fetch: stalls the CPU for 4 cycles (3 idle, 1 read) on a read cycle.
    /// The test is inlined into every read; the rare stall itself is not (it was an outlined
    /// call on each of the ~20k reads a frame: perf-notes #5).
    #[inline(always)]
    fn service_dmc_dma(&mut self) {
        if let Some(addr) = self.apu.dmc_dma_request() {
            self.run_dmc_dma(addr);
        }
    }

    #[cold]
    #[inline(never)]
    fn run_dmc_dma(&mut self, addr: u16) {
        for _ in 0..3 {
            self.tick();
        }
        self.tick();
        let v = self.read_mem(addr);
        self.open_bus = v;
        self.apu.dmc_dma_complete(v);
    }

    /// A debug read with no side effects: RAM, PRG RAM and ROM; I/O registers read as 0.
    pub fn peek(&self, addr: u16) -> u8 {
        match addr {
            0x0000..=0x1fff => self.ram[addr as usize & 0x7ff],
            0x4020..=0xffff => self.cart.cpu_read(addr).unwrap_or(0),
            _ => 0,
        }
    }
}

impl CpuBus for Bus {
    #[inline(always)]
    fn read(&mut self, addr: u16) -> u8 {
        // Test before `take`: `take` stores `None` back on every read (perf-notes #7).
        if self.oam_dma.is_some() {
            if let Some(page) = self.oam_dma.take() {
                self.run_oam_dma(page, addr);
            }
        }
        self.service_dmc_dma();
        self.tick();
        if addr >= 0x8000 {
            // PRG ROM: most reads (opcodes, operands), inline (perf-notes #16).
            let v = self.cart.prg_read(addr);
            self.finish_cycle();
            self.open_bus = v;
            return v;
        }
        let v = self.read_mem(addr);
        self.finish_cycle();
        // $4015 is read inside the CPU: the external data bus keeps its old value.
        if addr != 0x4015 {
            self.open_bus = v;
        }
        v
    }

    #[inline(always)]
    fn write(&mut self, addr: u16, v: u8) {
        self.tick();
        self.open_bus = v;
        self.write_mem(addr, v);
        self.finish_cycle();
    }

    #[inline(always)]
    fn nmi_line(&self) -> bool {
        self.ppu.nmi()
    }

    #[inline(always)]
    fn irq_line(&self) -> bool {
        self.apu.irq() || self.cart.irq()
    }

    #[inline(always)]
    fn idle(&mut self) {
        self.tick();
        self.finish_cycle();
    }
}

impl Snapshot for Bus {
    fn save(&self, w: &mut StateWriter<'_>) {
        w.bytes(&self.ram);
        w.u64(self.cycles);
        w.u8(self.open_bus);
        w.bool(self.oam_dma.is_some());
        w.u8(self.oam_dma.unwrap_or(0));
        self.pads.save(w);
        self.cart.save(w);
        self.ppu.save(w);
        self.apu.save(w);
    }

    fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        r.bytes(&mut self.ram)?;
        self.cycles = r.u64()?;
        self.open_bus = r.u8()?;
        let dma = r.bool()?;
        let page = r.u8()?;
        self.oam_dma = if dma { Some(page) } else { None };
        self.pads.load(r)?;
        self.cart.load(r)?;
        self.ppu.load(r)?;
        self.apu.load(r)?;
        self.ppu_owed = 0;
        self.ppu_budget = 0;
        Ok(())
    }
}

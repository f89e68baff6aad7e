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
//! cycle, then performs the access. Both run lazily, and exactly as if they ran every cycle.
//!
//! The PPU runs lazily ("catch-up"): the bus counts the dots it owes the PPU and runs them in
//! one batch ([`Ppu::run`]) only when something could observe the difference: a CPU access
//! to $2000-$3FFF, $4014 or a mapper register, the dots where the NMI line can change by
//! itself (VBL set at 241/1, cleared at 261/1: `Ppu::dots_to_nmi_event`), and the end of
//! every `Console::step`/`run_frame`, so the PPU's public fields and save states are exact
//! between calls. MMC3 boards run the PPU every cycle: their IRQ line (sampled by the CPU each
//! cycle) depends on the PPU's A12 edges. A batch of dots is where the PPU can render a tile
//! at a time (see `ppu/render.rs`).
//!
//! The APU runs lazily too: `cycles` runs ahead of `apu_synced`, and [`Apu::run`] catches it up
//! before `$4015` reads and `$4000-$4017` writes, at the cycle where its IRQ line may rise or
//! the DMC may ask for a DMA (`Apu::cycles_to_event`, kept as `apu_deadline`: the end-of-cycle
//! check catches up there, so the CPU's IRQ sample and the next read's DMA test see the exact
//! APU), and between `Console` calls. Most frames it runs a handful of times, in closed form
//! between frame-counter steps (perf-notes #20).
//!
//! Both catch-up points are kept as cycle numbers (`ppu_deadline`, `apu_deadline`), so a
//! cycle costs `cycles += 1` and one compare against their minimum at its end; a pending OAM
//! DMA sets that minimum to 0 (perf-notes #22). `run_frame` uses the same minimum to skip a
//! game's idle `JMP` loop in bulk (`idle_jmp_iterations`, perf-notes #21).
//!
//! Reads of unmapped addresses return the last value on the data bus (open bus). DMA units
//! steal cycles by halting the CPU on its next read cycle.

use crate::apu::Apu;
use crate::cart::Cart;
use crate::controller::Controllers;
use crate::cpu::CpuBus;
use crate::ppu::{Ppu, DOTS_PER_LINE};
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
    /// PPU dots run, counted so that the dots owed (lazy catch-up, see the module doc) are
    /// `3 * cycles - ppu_done`: 0 between `Console` calls. Not saved.
    ppu_done: u64,
    /// `cycles` at whose end the PPU must catch up (the owed dots reach the next dot where the
    /// NMI line may change); `cycles` itself means "every cycle" (MMC3, or right after a
    /// load). Derived, not saved.
    ppu_deadline: u64,
    /// False for boards whose IRQ follows PPU fetches (MMC3): the PPU then never lags.
    ppu_lazy: bool,
    /// `cycles` at the APU's last catch-up: it has run every cycle up to this one. Not saved
    /// (equal to `cycles` between `Console` calls).
    apu_synced: u64,
    /// `cycles` at which the APU must catch up (its IRQ line may rise or the DMC may want a
    /// DMA on that cycle). Derived, not saved.
    apu_deadline: u64,
    /// `min(ppu_deadline, apu_deadline)`, or 0 while an OAM DMA is pending: the one test at
    /// the end of a cycle (perf-notes #22).
    deadline: u64,
    /// `apu_deadline`, or 0 while an OAM DMA is pending: the one test at the start of a read.
    dma_deadline: u64,
    /// The interrupt lines (`LINE_NMI`, `LINE_IRQ`) as the PPU, APU and cart drive them now,
    /// refreshed after every call that can change them: the CPU samples them every cycle, and
    /// one byte is cheaper than two PPU registers and three IRQ flags (perf-notes #23).
    /// Derived, not saved.
    lines: u8,
    /// Whether an OAM DMA inside vertical blank skips the PPU catch-up before each write
    /// (`oam_dma_in_vblank`); off with the console's other fast-forwards, so tests can compare.
    pub(crate) fast_dma: bool,
}

const LINE_NMI: u8 = 1;
const LINE_IRQ: u8 = 2;

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
            ppu_done: 0,
            ppu_deadline: 0,
            ppu_lazy,
            apu_synced: 0,
            apu_deadline: 0,
            deadline: 0,
            dma_deadline: 0,
            lines: 0,
            fast_dma: true,
        }
    }

    /// One CPU cycle of time for everything but the CPU, up to the point where the cycle's
    /// memory access happens: the APU cycle (owed: `cycles` runs ahead of `apu_synced`), and
    /// 3 PPU dots owed. Only the first 2 of those
    /// dots are before the access (`catch_up_for_access` leaves the third owed); the third
    /// comes after it, so the CPU's end-of-cycle NMI sample sees the PPU one dot after its
    /// access did. That split is what makes the $2002 read race come out as on hardware
    /// (ppu_vbl_nmi 05-08: reads on the VBL dot or one dot after suppress the NMI, two dots
    /// after do not).
    #[inline(always)]
    fn tick(&mut self) {
        self.cycles += 1;
    }

    /// PPU dots owed: 3 per cycle since the last catch-up, plus any it left owed.
    #[inline(always)]
    fn ppu_owed(&self) -> u32 {
        (3 * self.cycles - self.ppu_done) as u32
    }

    /// Reads the interrupt lines again from the chips. `Console` also calls it before running,
    /// in case a caller changed a chip's public fields.
    #[inline(always)]
    pub(crate) fn refresh_lines(&mut self) {
        self.lines = (self.ppu.nmi() as u8 * LINE_NMI) | ((self.apu.irq() || self.cart.irq()) as u8 * LINE_IRQ);
    }

    /// Recomputes the two combined deadlines after one of their parts changed.
    #[inline(always)]
    fn update_deadlines(&mut self) {
        let oam = self.oam_dma.is_some();
        self.deadline = if oam { 0 } else { self.ppu_deadline.min(self.apu_deadline) };
        self.dma_deadline = if oam { 0 } else { self.apu_deadline };
    }

    /// The end of a CPU cycle, before the CPU samples its interrupt lines: run the PPU if the
    /// owed dots reach a dot where the NMI line may change (every cycle on MMC3 boards), and
    /// the APU if this is a cycle where its IRQ line may rise or the DMC may want a DMA.
    /// DMA cycles skip this: the CPU samples nothing while halted, and the owed dots carry
    /// over to its next cycle.
    #[inline(always)]
    fn finish_cycle(&mut self) {
        if self.cycles >= self.deadline {
            self.finish_cycle_events();
        }
    }

    #[inline(never)]
    fn finish_cycle_events(&mut self) {
        if self.cycles >= self.ppu_deadline {
            self.run_ppu(0);
        }
        if self.cycles >= self.apu_deadline {
            self.run_apu();
        }
    }

    /// Runs the owed PPU dots but the current cycle's third, before an access that reads or
    /// changes PPU state (registers, OAM DMA writes, mapper banking).
    #[inline(always)]
    fn catch_up_for_access(&mut self) {
        if self.ppu_owed() > 1 {
            self.run_ppu(1);
        }
    }

    /// Runs all owed PPU dots: between CPU instructions, so the PPU is exact for observers.
    #[inline(always)]
    pub(crate) fn catch_up_ppu(&mut self) {
        if self.ppu_owed() != 0 {
            self.run_ppu(0);
        }
    }

    /// Runs the owed dots but `keep`, then sets `ppu_deadline`: the cycle at which the PPU
    /// reaches the next dot where its NMI output may change by itself.
    #[inline(never)]
    fn run_ppu(&mut self, keep: u32) {
        let n = self.ppu_owed() - keep;
        self.ppu_done = 3 * self.cycles - keep as u64;
        self.ppu.run(n, &mut self.cart);
        self.refresh_lines();
        let budget = if self.ppu_lazy { self.ppu.dots_to_nmi_event() } else { 0 };
        // The first cycle whose end sees `3 * cycles - ppu_done >= budget` owed dots.
        self.ppu_deadline = (self.ppu_done + budget as u64).div_ceil(3);
        self.update_deadlines();
    }

    /// Runs the APU for the cycles it is owed (this one's included), so it can be read or
    /// written.
    #[inline(always)]
    pub(crate) fn catch_up_apu(&mut self) {
        if self.cycles != self.apu_synced {
            self.run_apu();
        }
    }

    /// Runs the owed APU cycles, then sets the deadline: the next cycle at which the CPU
    /// could see the APU change by itself.
    #[inline(never)]
    fn run_apu(&mut self) {
        self.apu.run((self.cycles - self.apu_synced) as u32);
        self.refresh_lines();
        self.apu_synced = self.cycles;
        self.set_apu_deadline();
    }

    #[inline(always)]
    fn set_apu_deadline(&mut self) {
        self.apu_deadline = self.cycles.saturating_add(self.apu.cycles_to_event() as u64);
        self.update_deadlines();
    }

    /// The reset button changed the PPU and APU under their catch-up bookkeeping: recompute
    /// both at the next cycle end. The caller has caught them up before.
    pub(crate) fn after_reset(&mut self) {
        self.refresh_lines();
        self.ppu_deadline = self.cycles;
        self.apu_deadline = self.cycles;
        self.update_deadlines();
    }

    /// A read without the clock: what the CPU would see at `addr` now.
    #[inline]
    fn read_mem(&mut self, addr: u16) -> u8 {
        match addr {
            0x0000..=0x1fff => self.ram[addr as usize & 0x7ff],
            0x2000..=0x3fff => {
                // A `$2002` poll before the status can change needs no catch-up (#28).
                if !(addr & 7 == 2
                    && self.ppu_lazy
                    && self.ppu_owed().saturating_sub(1) < self.ppu.dots_to_status_change(&self.cart))
                {
                    self.catch_up_for_access();
                }
                let v = self.ppu.cpu_read(addr, &mut self.cart);
                self.refresh_lines();
                v
            }
            0x4015 => {
                self.catch_up_apu();
                let v = self.apu.read_status();
                self.refresh_lines();
                (v & !0x20) | (self.open_bus & 0x20)
            }
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
                self.refresh_lines();
            }
            0x4014 => {
                self.oam_dma = Some(v);
                self.update_deadlines();
            }
            0x4016 => self.pads.write_strobe(v),
            0x4000..=0x4017 => {
                self.catch_up_apu();
                self.apu.write(addr, v);
                self.refresh_lines();
                // The write may move the next IRQ or DMA ($4010, $4015, $4017).
                self.set_apu_deadline();
            }
            0x4018..=0x401f => {}
            _ => {
                // A mapper register can switch CHR banks or mirroring under the PPU.
                if addr >= 0x8000 {
                    self.catch_up_for_access();
                }
                self.cart.cpu_write(addr, v, self.cycles);
                // MMC3's IRQ acknowledge.
                self.refresh_lines();
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
        let in_vblank = self.oam_dma_in_vblank();
        if in_vblank {
            // Once, so the PPU itself stands in vertical blank for every write.
            self.catch_up_for_access();
            if page < 0x20 && self.cycles + 512 < self.apu_deadline {
                // From RAM with no APU event (a DMC fetch, an IRQ) due: the 256 read/write
                // pairs touch nothing but OAM, OAMADDR and the latches, so they run as one
                // copy (perf-notes #49).
                let at = (base & 0x7ff) as usize;
                for i in 0..256 {
                    self.ppu.cpu_write(0x2004, self.ram[at + i], &mut self.cart);
                }
                self.open_bus = self.ram[at + 255];
                self.cycles += 512;
                self.refresh_lines();
                return;
            }
        }
        for i in 0..256u16 {
            self.tick();
            self.service_dmc_dma();
            let v = self.read_mem(base | i);
            self.open_bus = v;
            self.tick();
            if !in_vblank {
                self.catch_up_for_access();
            }
            self.ppu.cpu_write(0x2004, v, &mut self.cart);
            self.refresh_lines();
        }
    }

    /// Whether the 256 writes of an OAM DMA that starts now all fall in vertical blank (after
    /// 241/1, before the pre-render line), where rendering is idle: there a `$2004` write
    /// only stores its byte and moves OAMADDR, whatever the dot, so after one catch-up (the
    /// PPU's own position decides) it need not catch up before each write (perf-notes #44); the
    /// next access or deadline catches it up as usual.
    fn oam_dma_in_vblank(&self) -> bool {
        const LINE: u32 = DOTS_PER_LINE as u32;
        let pos = self.ppu.scanline as u32 * LINE + self.ppu.dot as u32 + self.ppu_owed();
        // The 512 cycles of the transfer still to come, with a margin.
        self.fast_dma && self.ppu_lazy && pos >= 241 * LINE + 2 && pos + 3 * 516 < 261 * LINE
    }

    /// DMC sample fetch: stalls the CPU for 4 cycles (3 idle, 1 read) on a read cycle.
    /// The test is inlined into every read; the rare stall itself is not (it was an outlined
    /// call on each of the ~20k reads a frame: perf-notes #5). A request can only have come
    /// up at the APU deadline (the previous cycle end caught the APU up there, or DMA cycles
    /// skipped that check), so the test is one compare.
    #[inline(always)]
    fn service_dmc_dma(&mut self) {
        if self.cycles >= self.apu_deadline {
            self.check_dmc_dma();
        }
    }

    /// The start of a read at the DMA deadline: a pending OAM DMA runs first (the CPU halts
    /// on this read), then a DMC fetch if the APU wants one.
    #[cold]
    #[inline(never)]
    fn start_read_dma(&mut self, addr: u16) {
        if let Some(page) = self.oam_dma.take() {
            self.update_deadlines();
            self.run_oam_dma(page, addr);
        }
        self.service_dmc_dma();
    }

    #[cold]
    #[inline(never)]
    fn check_dmc_dma(&mut self) {
        self.catch_up_apu();
        if let Some(addr) = self.apu.dmc_dma_request() {
            self.run_dmc_dma(addr);
        }
    }

    fn run_dmc_dma(&mut self, addr: u16) {
        for _ in 0..3 {
            self.tick();
        }
        self.tick();
        let v = self.read_mem(addr);
        self.open_bus = v;
        self.catch_up_apu();
        self.apu.dmc_dma_complete(v);
        self.refresh_lines();
        self.set_apu_deadline();
    }

    /// How many more iterations of a `JMP` to itself (3 read cycles of PRG ROM) the CPU can
    /// run before a cycle end where the PPU or APU must catch up (where the NMI or IRQ line
    /// may change, or the DMC may want a DMA): those iterations change nothing but time.
    /// 0 while an OAM DMA is pending, and on boards whose IRQ follows the PPU (their PPU
    /// deadline is every cycle).
    pub(crate) fn idle_jmp_iterations(&self) -> u32 {
        if self.deadline <= self.cycles {
            return 0;
        }
        ((self.deadline - self.cycles - 1) / 3).min(u32::MAX as u64) as u32
    }

    /// `n` iterations of a `JMP` to itself at once: the clock runs 3 cycles each and the data
    /// bus keeps the operand's high byte (the CPU's registers do not change). The caller has
    /// checked `n <= idle_jmp_iterations()`.
    pub(crate) fn skip_idle_jmp(&mut self, n: u32) {
        self.cycles += 3 * n as u64;
    }

    /// How many more iterations of a `$2002` poll loop (`LDA $2002; AND #m; BEQ/BNE` back to
    /// the `LDA`: 9 cycles, the PPU read on the 4th) the CPU can run in bulk: not past a
    /// cycle end where the PPU or APU must catch up (as `idle_jmp_iterations`), and only while
    /// every skipped read comes before the first dot where the status bits may change
    /// (`Ppu::dots_to_status_change`, never late), so each returns what a read now would.
    /// 0 on boards whose IRQ follows the PPU.
    pub(crate) fn status_poll_iterations(&mut self) -> u32 {
        if !self.ppu_lazy || self.deadline <= self.cycles {
            return 0;
        }
        let by_clock = (self.deadline - self.cycles - 1) / 9;
        // The k-th skipped read runs the owed dots but its cycle's third (as `read_mem`):
        // it sees the PPU `owed + 27 (k - 1) + 11` dots ahead of where it is now.
        let seen = self.ppu_owed() as u64 + 11;
        let stable = self.ppu.dots_to_status_change(&self.cart) as u64;
        if stable <= seen {
            return 0;
        }
        let by_status = (stable - seen - 1) / 27 + 1;
        by_clock.min(by_status).min(u32::MAX as u64) as u32
    }

    /// `n` iterations of a `$2002` poll loop at once: 9 cycles each; the caller has checked
    /// that an iteration leaves the CPU, the data bus and the PPU as they are, and
    /// `n <= status_poll_iterations()`.
    pub(crate) fn skip_status_poll(&mut self, n: u32) {
        self.cycles += 9 * n as u64;
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
        // One compare for both DMAs: `dma_deadline` is 0 while an OAM DMA is pending.
        if self.cycles >= self.dma_deadline {
            self.start_read_dma(addr);
        }
        self.tick();
        if addr >= 0x8000 {
            // PRG ROM: most reads (opcodes, operands), inline (perf-notes #16).
            let v = self.cart.prg_read(addr);
            self.finish_cycle();
            self.open_bus = v;
            return v;
        }
        if addr < 0x2000 {
            // RAM (zero page, stack): the next most common, inline too (perf-notes #25).
            let v = self.ram[addr as usize & 0x7ff];
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
        if addr < 0x2000 {
            self.ram[addr as usize & 0x7ff] = v;
        } else {
            self.write_mem(addr, v);
        }
        self.finish_cycle();
    }

    #[inline(always)]
    fn nmi_line(&self) -> bool {
        self.lines & LINE_NMI != 0
    }

    #[inline(always)]
    fn irq_line(&self) -> bool {
        self.lines & LINE_IRQ != 0
    }

    #[inline(always)]
    fn lines(&self) -> u8 {
        // LINE_NMI and LINE_IRQ are the trait's bits 0 and 1.
        self.lines
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
        // 2^60 cycles are 20,000 years of play; past them the clocks' sums (the PPU's 3 dots a
        // cycle, the deadlines) would overflow.
        if self.cycles >= 1 << 60 {
            return Err(StateError::BadField("bus.cycles"));
        }
        self.open_bus = r.u8()?;
        let dma = r.bool()?;
        let page = r.u8()?;
        self.oam_dma = if dma { Some(page) } else { None };
        self.pads.load(r)?;
        self.cart.load(r)?;
        self.ppu.load(r)?;
        self.apu.load(r)?;
        self.ppu_done = 3 * self.cycles;
        self.ppu_deadline = self.cycles;
        self.apu_synced = self.cycles;
        self.apu_deadline = self.cycles;
        self.update_deadlines();
        self.refresh_lines();
        Ok(())
    }
}

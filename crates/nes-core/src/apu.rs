//! The 2A03's audio processing unit, as far as the CPU can observe it.
//!
//! The APU has five channels (pulse 1, pulse 2, triangle, noise, DMC) driven by a frame counter.
//! A program can see only a few of its parts, through `$4015` reads and IRQs:
//! * the **frame counter** ([`frame_counter`]), which clocks the channels' length counters and
//!   raises the frame IRQ, with exact NTSC timing;
//! * the four **length counters** ([`length_counter`]), whose non-zero-ness is `$4015` bits 0-3;
//! * the **DMC** ([`dmc`]), whose sample fetches stall the CPU (DMA), whose bytes-remaining is
//!   `$4015` bit 4 and whose end-of-sample IRQ is bit 7.
//!
//! Nothing here makes sound yet: envelopes, sweeps, the triangle's linear counter, the channels'
//! timers and the mixer are not modelled, as nothing the CPU reads depends on them. They would
//! hang off the frame counter's `QUARTER`/`HALF` events in [`Apu::tick`] and the register writes
//! in [`Apu::write`], each as one more file in `apu/`.
//!
//! Timing contract with the bus: [`Apu::tick`] stands for one CPU cycle *before* the CPU's read
//! or write of that cycle, so a `$4015` read sees the flags of its own cycle. The bus runs the
//! APU lazily, as many ticks at once ([`Apu::run`]) as it owes, before every `$4000-$4017`
//! access, when [`Apu::cycles_to_event`] says the IRQ line or a DMC DMA could come, and
//! between `Console` calls; the result is exactly that of one tick per cycle. The APU proper is
//! clocked every other CPU cycle; `odd_cycle` tracks that phase, which decides the 3-or-4-cycle
//! delay of `$4017` writes (jitter) and the 2-or-3-cycle delay of a DMC start.
//!
//! Integer-only, no heap, no `Option` in the state: the CUDA kernel mirrors it line for line.

pub mod dmc;
pub mod frame_counter;
pub mod length_counter;

use crate::state::{Snapshot, StateError, StateReader, StateWriter};
use dmc::Dmc;
use frame_counter::{FrameCounter, HALF};
use length_counter::LengthCounter;

/// Index of each length counter in [`Apu::length`], which is also its bit in `$4015`.
pub const PULSE1: usize = 0;
pub const PULSE2: usize = 1;
pub const TRIANGLE: usize = 2;
pub const NOISE: usize = 3;

#[derive(Debug, Clone)]
pub struct Apu {
    pub frame: FrameCounter,
    /// Length counters of pulse 1, pulse 2, triangle, noise (the `$4015` bit order).
    pub length: [LengthCounter; 4],
    pub dmc: Dmc,
    /// Parity of the current CPU cycle (counted from power-on, the first tick is cycle 1), so
    /// it equals `Bus::cycles & 1`: odd cycles are the APU's "get" half.
    pub odd_cycle: bool,
    /// A length-counter register write (load or halt) may still have to land: derived, not
    /// saved (true after `load`). Lets `tick` skip the four `apply_writes` calls on the ~99.9%
    /// of cycles without one: 178M of 4,117M instructions for 300 SMB frames (perf-notes #2).
    length_writes_pending: bool,
}

impl Default for Apu {
    fn default() -> Self {
        Apu::new()
    }
}

impl Apu {
    /// Power-on: all channels disabled and silent, $4017 as if $00 had just been written.
    pub fn new() -> Apu {
        Apu {
            frame: FrameCounter::new(),
            length: Default::default(),
            dmc: Dmc::new(),
            odd_cycle: false,
            length_writes_pending: true,
        }
    }

    /// The reset button: as if $00 were written to $4015 (every channel off, DMC IRQ
    /// cleared) and the last $4017 value written again (the frame counter keeps its mode and
    /// restarts; its IRQ flag is cleared).
    pub fn reset(&mut self) {
        self.write(0x4015, 0);
        self.frame.reset();
    }

    /// Advances one CPU cycle. Called by the bus before the CPU's access of that cycle.
    #[inline]
    pub fn tick(&mut self) {
        self.odd_cycle = !self.odd_cycle;
        let events = self.frame.tick();
        // Quarter-frame units (envelopes, linear counter) are not observable: not modelled.
        if events & HALF != 0 {
            for l in self.length.iter_mut() {
                l.clock();
            }
        }
        // Register writes latched on the previous cycle land after this cycle's clock.
        // `apply_writes` is idempotent, so applying once after the last write is exact.
        if self.length_writes_pending {
            self.length_writes_pending = false;
            for l in self.length.iter_mut() {
                l.apply_writes();
            }
        }
        self.dmc.tick();
    }

    /// `n` calls of [`Apu::tick`] at once (the bus runs the APU lazily). Cycles without a
    /// frame-counter step, a pending `$4017` write or a length-counter write move the counters
    /// in closed form (`Dmc::run`); those few others tick one by one.
    pub fn run(&mut self, mut n: u32) {
        while n > 0 {
            let quiet = match self.frame.quiet_cycles_to_step() {
                Some(k) if !self.length_writes_pending => k as u32 - 1,
                _ => 0,
            };
            let k = quiet.min(n);
            if k > 0 {
                self.frame.cycle += k as u16;
                self.dmc.run(k);
                self.odd_cycle ^= k & 1 != 0;
                n -= k;
            }
            if n > 0 {
                self.tick();
                n -= 1;
            }
        }
    }

    /// The ticks after which the CPU could see a change it did not cause: the IRQ line rising
    /// (frame interrupt; the DMC's comes only with a DMA the bus performs) or the DMC asking
    /// for a DMA. 0 when the DMC asks now. The bus must catch the APU up by then.
    pub fn cycles_to_event(&self) -> u32 {
        self.frame.cycles_to_irq().min(self.dmc.cycles_to_dma())
    }

    /// A CPU read of `$4015`. Bit 5 is open bus and returned as 0 for the bus to merge.
    pub fn read_status(&mut self) -> u8 {
        let mut v = 0;
        for (i, l) in self.length.iter().enumerate() {
            if l.counter > 0 {
                v |= 1 << i;
            }
        }
        if self.dmc.bytes_remaining > 0 {
            v |= 0x10;
        }
        if self.frame.irq_flag {
            v |= 0x40;
        }
        if self.dmc.irq_flag {
            v |= 0x80;
        }
        // Reading acknowledges the frame interrupt, not the DMC's (apu_test 7-dmc_basics #10).
        self.frame.irq_flag = false;
        v
    }

    /// A CPU write to `$4000-$4013`, `$4015` or `$4017`. Other addresses are ignored.
    pub fn write(&mut self, addr: u16, v: u8) {
        self.length_writes_pending = true;
        match addr {
            // Pulse duty/envelope; bit 5 is the length counter halt (= envelope loop).
            0x4000 => self.length[PULSE1].set_halt(v & 0x20 != 0),
            0x4004 => self.length[PULSE2].set_halt(v & 0x20 != 0),
            // Triangle linear counter; bit 7 is its control flag, which is also the halt.
            0x4008 => self.length[TRIANGLE].set_halt(v & 0x80 != 0),
            0x400C => self.length[NOISE].set_halt(v & 0x20 != 0),
            // Length load in bits 7-3; bits 2-0 are timer high bits (not modelled).
            0x4003 => self.length[PULSE1].load(v >> 3),
            0x4007 => self.length[PULSE2].load(v >> 3),
            0x400B => self.length[TRIANGLE].load(v >> 3),
            0x400F => self.length[NOISE].load(v >> 3),
            0x4010..=0x4013 => self.dmc.write(addr, v),
            0x4015 => {
                for (i, l) in self.length.iter_mut().enumerate() {
                    l.set_enabled(v & (1 << i) != 0);
                }
                // Any $4015 write acknowledges the DMC interrupt (apu_test 7-dmc_basics #11).
                self.dmc.irq_flag = false;
                self.dmc.set_enabled(v & 0x10 != 0, self.odd_cycle);
            }
            0x4017 => self.frame.write(v, self.odd_cycle),
            // Sweeps, timers, noise period: not observable, not modelled.
            _ => {}
        }
    }

    /// The APU's IRQ line (level): frame interrupt or DMC interrupt.
    #[inline]
    pub fn irq(&self) -> bool {
        self.frame.irq_flag || self.dmc.irq_flag
    }

    /// The address of the sample byte the DMC wants now, if any. The bus stalls the CPU,
    /// reads it and hands it to [`Apu::dmc_dma_complete`].
    #[inline]
    pub fn dmc_dma_request(&self) -> Option<u16> {
        self.dmc.dma_request()
    }

    /// The bus fetched the byte that [`Apu::dmc_dma_request`] asked for.
    pub fn dmc_dma_complete(&mut self, v: u8) {
        self.dmc.dma_complete(v);
    }
}

impl Snapshot for Apu {
    fn save(&self, w: &mut StateWriter<'_>) {
        self.frame.save(w);
        for l in self.length.iter() {
            l.save(w);
        }
        self.dmc.save(w);
        w.bool(self.odd_cycle);
    }

    fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        self.frame.load(r)?;
        for l in self.length.iter_mut() {
            l.load_state(r)?;
        }
        self.dmc.load(r)?;
        self.odd_cycle = r.bool()?;
        self.length_writes_pending = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks `n` cycles, serving DMC DMA at once with a zero byte (a bus without stall).
    fn run(apu: &mut Apu, n: u32) {
        for _ in 0..n {
            apu.tick();
            if apu.dmc_dma_request().is_some() {
                apu.dmc_dma_complete(0);
            }
        }
    }

    /// Writes $4017 and ticks up to the cycle on which the sequencer restarts.
    /// Returns how many cycles that took.
    fn restart_frame_counter(apu: &mut Apu, v: u8) -> u32 {
        apu.write(0x4017, v);
        let mut n = 0;
        while apu.frame.write_delay > 0 {
            run(apu, 1);
            n += 1;
        }
        n
    }

    /// A console past its power-on $4017 write, length counters enabled.
    fn powered() -> Apu {
        let mut apu = Apu::new();
        run(&mut apu, 10);
        apu.write(0x4015, 0x0F);
        apu
    }

    #[test]
    fn four_step_mode_sets_the_frame_irq_on_cycles_29828_to_29830_after_the_restart() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x00);
        run(&mut apu, 29827);
        assert!(!apu.irq());
        for _ in 0..3 {
            run(&mut apu, 1);
            assert!(apu.irq());
            assert_eq!(apu.read_status() & 0x40, 0x40, "set again on each of the three cycles");
        }
        run(&mut apu, 1);
        assert_eq!(apu.read_status() & 0x40, 0, "the fourth cycle does not set it");
    }

    #[test]
    fn four_step_mode_repeats_every_29830_cycles() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x00);
        run(&mut apu, 29830);
        apu.read_status();
        run(&mut apu, 29827);
        assert!(!apu.irq());
        run(&mut apu, 1);
        assert!(apu.irq());
    }

    #[test]
    fn a_4017_write_restarts_the_sequencer_3_or_4_cycles_later_by_cycle_parity() {
        let mut apu = powered();
        let first = restart_frame_counter(&mut apu, 0x00);
        run(&mut apu, 1);
        let second = restart_frame_counter(&mut apu, 0x00);
        let mut both = [first, second];
        both.sort();
        assert_eq!(both, [3, 4]);
    }

    #[test]
    fn the_frame_irq_is_first_set_29831_cycles_after_a_write_on_an_odd_cycle() {
        let mut apu = powered();
        if !apu.odd_cycle {
            run(&mut apu, 1);
        }
        apu.write(0x4017, 0x00);
        run(&mut apu, 29830);
        assert!(!apu.irq());
        run(&mut apu, 1);
        assert!(apu.irq());
    }

    #[test]
    fn reading_4015_clears_the_frame_irq_flag() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x00);
        run(&mut apu, 29830);
        assert_eq!(apu.read_status() & 0x40, 0x40);
        assert_eq!(apu.read_status() & 0x40, 0);
        assert!(!apu.irq());
    }

    #[test]
    fn setting_irq_inhibit_clears_the_flag_at_once_and_keeps_it_clear() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x00);
        run(&mut apu, 29830);
        assert!(apu.irq());
        apu.write(0x4017, 0x40);
        assert!(!apu.irq());
        run(&mut apu, 2 * 29830);
        assert!(!apu.irq());
    }

    #[test]
    fn writing_00_or_80_to_4017_leaves_the_frame_irq_flag_alone() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x00);
        run(&mut apu, 29830);
        restart_frame_counter(&mut apu, 0x80);
        assert!(apu.irq());
    }

    #[test]
    fn five_step_mode_never_sets_the_frame_irq() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x80);
        run(&mut apu, 3 * 37282);
        assert!(!apu.irq());
    }

    #[test]
    fn writing_80_to_4017_clocks_the_length_counters_at_the_restart() {
        let mut apu = powered();
        apu.write(0x4003, 0x18); // index 3: length 2
        run(&mut apu, 1);
        restart_frame_counter(&mut apu, 0x80);
        assert_eq!(apu.length[PULSE1].counter, 1);
    }

    #[test]
    fn writing_00_to_4017_does_not_clock_the_length_counters() {
        let mut apu = powered();
        apu.write(0x4003, 0x18);
        run(&mut apu, 1);
        restart_frame_counter(&mut apu, 0x00);
        assert_eq!(apu.length[PULSE1].counter, 2);
    }

    #[test]
    fn four_step_mode_clocks_length_on_cycles_14913_and_29829() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x00);
        apu.write(0x4003, 0x08); // index 1: length 254
        run(&mut apu, 14912);
        assert_eq!(apu.length[PULSE1].counter, 254);
        run(&mut apu, 1);
        assert_eq!(apu.length[PULSE1].counter, 253);
        run(&mut apu, 29829 - 14913 - 1);
        assert_eq!(apu.length[PULSE1].counter, 253);
        run(&mut apu, 1);
        assert_eq!(apu.length[PULSE1].counter, 252);
    }

    #[test]
    fn five_step_mode_clocks_length_on_cycles_14913_and_37281() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x80);
        apu.write(0x4003, 0x08);
        run(&mut apu, 14913);
        assert_eq!(apu.length[PULSE1].counter, 253);
        run(&mut apu, 37281 - 14913 - 1);
        assert_eq!(apu.length[PULSE1].counter, 253);
        run(&mut apu, 1);
        assert_eq!(apu.length[PULSE1].counter, 252);
    }

    #[test]
    fn the_length_table_maps_all_32_indices() {
        let mut apu = powered();
        for i in 0..32u8 {
            apu.write(0x400F, i << 3);
            run(&mut apu, 1);
            assert_eq!(apu.length[NOISE].counter, length_counter::LENGTH_TABLE[i as usize]);
            apu.write(0x4015, 0x00);
            apu.write(0x4015, 0x0F);
        }
        assert_eq!(length_counter::LENGTH_TABLE[1], 254);
        assert_eq!(length_counter::LENGTH_TABLE[31], 30);
    }

    #[test]
    fn writing_length_while_disabled_is_ignored() {
        let mut apu = powered();
        apu.write(0x4015, 0x00);
        apu.write(0x400B, 0xF8);
        run(&mut apu, 1);
        assert_eq!(apu.read_status() & 0x0F, 0);
    }

    #[test]
    fn disabling_a_channel_clears_its_length_counter() {
        let mut apu = powered();
        apu.write(0x4007, 0xF8);
        run(&mut apu, 1);
        assert_eq!(apu.read_status() & 0x0F, 0x02);
        apu.write(0x4015, 0x0D);
        assert_eq!(apu.read_status() & 0x0F, 0);
    }

    #[test]
    fn the_halt_flag_suspends_length_clocking_and_the_triangle_uses_bit_7() {
        let mut apu = powered();
        apu.write(0x4000, 0x20);
        apu.write(0x4008, 0x80);
        apu.write(0x4003, 0x18);
        apu.write(0x400B, 0x18);
        run(&mut apu, 1);
        restart_frame_counter(&mut apu, 0x80);
        restart_frame_counter(&mut apu, 0x80);
        assert_eq!(apu.length[PULSE1].counter, 2);
        assert_eq!(apu.length[TRIANGLE].counter, 2);
    }

    /// Ticks to the cycle just before the 4-step mode's first half-frame clock (14913).
    fn just_before_first_half_frame() -> Apu {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x00);
        run(&mut apu, 14911);
        apu
    }

    #[test]
    fn a_length_load_latched_into_the_clock_cycle_is_ignored_if_the_counter_was_nonzero() {
        let mut apu = just_before_first_half_frame();
        apu.write(0x4003, 0x18); // length 2
        run(&mut apu, 1);
        apu.write(0x4003, 0x08); // would load 254, lands on the clock
        run(&mut apu, 1);
        assert_eq!(apu.length[PULSE1].counter, 1);
    }

    #[test]
    fn a_length_load_latched_into_the_clock_cycle_is_taken_if_the_counter_was_zero() {
        let mut apu = just_before_first_half_frame();
        run(&mut apu, 1);
        apu.write(0x4003, 0x08);
        run(&mut apu, 1);
        assert_eq!(apu.length[PULSE1].counter, 254);
    }

    #[test]
    fn a_halt_change_latched_into_the_clock_cycle_takes_effect_after_the_clock() {
        let mut apu = just_before_first_half_frame();
        apu.write(0x4003, 0x18);
        run(&mut apu, 1);
        apu.write(0x4000, 0x20); // halt, lands on the clock: the clock still counts
        run(&mut apu, 1);
        assert_eq!(apu.length[PULSE1].counter, 1);

        let mut apu = just_before_first_half_frame();
        apu.write(0x4000, 0x20);
        apu.write(0x4003, 0x18);
        run(&mut apu, 1);
        apu.write(0x4000, 0x00); // unhalt, lands on the clock: the clock is still halted
        run(&mut apu, 1);
        assert_eq!(apu.length[PULSE1].counter, 2);
    }

    /// An APU with the DMC at its fastest rate (54 cycles), sample length 16 * `len` + 1.
    fn dmc_apu(ctrl: u8, len: u8) -> Apu {
        let mut apu = powered();
        apu.write(0x4010, ctrl);
        apu.write(0x4013, len);
        apu
    }

    #[test]
    fn starting_the_dmc_fetches_its_first_byte_2_or_3_cycles_later() {
        let mut apu = dmc_apu(0x0F, 1);
        apu.write(0x4012, 0x01);
        apu.write(0x4015, 0x10);
        assert_eq!(apu.dmc_dma_request(), None);
        let mut n = 0;
        while apu.dmc_dma_request().is_none() {
            apu.tick();
            n += 1;
        }
        assert!(n == 2 || n == 3);
        assert_eq!(apu.dmc_dma_request(), Some(0xC040));
        apu.dmc_dma_complete(0);
        assert_eq!(apu.dmc.bytes_remaining, 16);
        assert_eq!(apu.dmc_dma_request(), None, "the buffer is full");
    }

    #[test]
    fn a_17_byte_sample_reads_as_playing_until_its_last_byte_is_fetched() {
        let mut apu = dmc_apu(0x0F, 1);
        apu.write(0x4015, 0x10);
        run(&mut apu, 54 * 8 * 15);
        assert_eq!(apu.read_status() & 0x10, 0x10);
        run(&mut apu, 54 * 8 * 2);
        assert_eq!(apu.read_status() & 0x10, 0);
    }

    #[test]
    fn dmc_irq_is_set_when_the_last_byte_is_fetched_and_reading_4015_keeps_it() {
        let mut apu = dmc_apu(0x8F, 0);
        apu.write(0x4015, 0x10);
        run(&mut apu, 4);
        assert_eq!(apu.read_status() & 0x90, 0x80);
        assert!(apu.irq());
        assert_eq!(apu.read_status() & 0x80, 0x80);
    }

    #[test]
    fn dmc_irq_is_not_set_when_disabled_or_looping() {
        for ctrl in [0x0F, 0xCF] {
            let mut apu = dmc_apu(ctrl, 0);
            apu.write(0x4015, 0x10);
            run(&mut apu, 54 * 8 * 20);
            assert!(!apu.irq());
        }
    }

    #[test]
    fn writing_4015_or_clearing_irq_enable_clears_the_dmc_irq() {
        let mut apu = dmc_apu(0x8F, 0);
        apu.write(0x4015, 0x10);
        run(&mut apu, 4);
        apu.write(0x4015, 0x00);
        assert!(!apu.irq());
        apu.write(0x4015, 0x10);
        run(&mut apu, 54 * 8 * 4);
        assert!(apu.irq());
        apu.write(0x4010, 0x0F);
        assert!(!apu.irq());
    }

    #[test]
    fn a_looped_sample_reloads_and_keeps_playing() {
        let mut apu = dmc_apu(0x4F, 0);
        apu.write(0x4015, 0x10);
        run(&mut apu, 54 * 8 * 100);
        assert_eq!(apu.read_status() & 0x10, 0x10);
        apu.write(0x4015, 0x00);
        assert_eq!(apu.read_status() & 0x10, 0);
    }

    #[test]
    fn the_sample_address_wraps_from_ffff_to_8000() {
        let mut apu = dmc_apu(0x0F, 5); // 81 bytes from $FFC0: past $FFFF
        apu.write(0x4012, 0xFF);
        apu.write(0x4015, 0x10);
        let mut seen = [0u16; 2];
        let mut k = 0;
        for _ in 0..54 * 8 * 81 {
            if k == 2 {
                break;
            }
            apu.tick();
            if let Some(a) = apu.dmc_dma_request() {
                if !(0xC000..0xFFFF).contains(&a) {
                    seen[k] = a;
                    k += 1;
                }
                apu.dmc_dma_complete(0);
            }
        }
        assert_eq!(seen, [0xFFFF, 0x8000]);
    }

    #[test]
    fn each_dmc_rate_fetches_one_byte_per_8_periods() {
        for (i, &period) in dmc::RATE_TABLE.iter().enumerate() {
            let mut apu = dmc_apu(0x40 | i as u8, 0xFF);
            apu.write(0x4015, 0x10);
            // Let the first two bytes settle into the buffer and shift register.
            let mut fetches = [0u32; 4];
            let mut k = 0;
            let mut t = 0;
            while k < 4 {
                apu.tick();
                t += 1;
                if apu.dmc_dma_request().is_some() {
                    apu.dmc_dma_complete(0);
                    fetches[k] = t;
                    k += 1;
                }
            }
            assert_eq!(fetches[3] - fetches[2], 8 * period as u32, "rate {i}");
        }
    }

    #[test]
    fn reset_silences_every_channel_and_keeps_the_frame_counter_mode() {
        let mut apu = powered();
        restart_frame_counter(&mut apu, 0x80);
        apu.write(0x4003, 0x08);
        apu.write(0x4010, 0x8F);
        apu.write(0x4015, 0x1F);
        run(&mut apu, 100);
        apu.reset();
        assert_eq!(apu.read_status(), 0);
        run(&mut apu, 10);
        assert!(apu.frame.five_step);
        run(&mut apu, 3 * 37282);
        assert!(!apu.irq());
    }

    #[test]
    fn power_on_acts_as_a_00_write_to_4017_three_cycles_before() {
        let mut apu = Apu::new();
        run(&mut apu, 3 + 29827);
        assert!(!apu.irq());
        run(&mut apu, 1);
        assert!(apu.irq());
    }

    fn saved(apu: &Apu) -> ([u8; 64], usize) {
        let mut buf = [0u8; 64];
        let mut w = StateWriter::new(&mut buf);
        apu.save(&mut w);
        let len = w.len();
        (buf, len)
    }

    /// `run(n)` is the bus's lazy catch-up; `cycles_to_event` tells it how far it may lag.
    #[test]
    fn running_cycles_in_bulk_matches_ticking_them_and_no_event_comes_early() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as u32
        };
        for _ in 0..40 {
            let mut bulk = Apu::new();
            let mut ticked = Apu::new();
            for _ in 0..300 {
                // A register write on both (half the time), biased to the timing registers.
                if rand(2) == 0 {
                    let (addr, v) = match rand(6) {
                        0 => (0x4017, [0x00, 0x40, 0x80, 0xC0][rand(4) as usize]),
                        1 => (0x4015, rand(0x20) as u8),
                        2 => (0x4010, rand(0x100) as u8),
                        3 => (0x4013, rand(4) as u8),
                        4 => (0x4003 + 4 * rand(4) as u16, rand(0x100) as u8),
                        _ => (0x4000 + rand(0x10) as u16, rand(0x100) as u8),
                    };
                    bulk.write(addr, v);
                    ticked.write(addr, v);
                }
                let k = bulk.cycles_to_event();
                if k == 0 {
                    // The DMC wants its byte now: the bus would fetch it.
                    assert!(bulk.dmc_dma_request().is_some());
                    let v = rand(256) as u8;
                    bulk.dmc_dma_complete(v);
                    ticked.dmc_dma_complete(v);
                    continue;
                }
                // Lag up to the event, sometimes less, as the bus does.
                let n = if rand(3) == 0 { 1 + rand(k.min(40_000)) } else { k.min(40_000) };
                let irq_before = ticked.irq();
                for i in 1..=n {
                    ticked.tick();
                    if i < k {
                        assert_eq!(ticked.irq(), irq_before, "IRQ rose {i} ticks in, predicted {k}");
                        assert_eq!(ticked.dmc_dma_request(), None, "DMA {i} ticks in, predicted {k}");
                    }
                }
                bulk.run(n);
                assert_eq!(saved(&bulk), saved(&ticked), "after run({n})");
                assert_eq!(bulk.length_writes_pending, ticked.length_writes_pending);
            }
        }
    }

    #[test]
    fn a_saved_state_loads_back_to_the_same_behaviour() {
        let mut apu = dmc_apu(0x4F, 3);
        apu.write(0x4015, 0x1F);
        apu.write(0x4003, 0x08);
        run(&mut apu, 12345);
        let mut buf = [0u8; 256];
        let mut w = StateWriter::new(&mut buf);
        apu.save(&mut w);
        let len = w.len();
        let mut copy = Apu::default();
        copy.load(&mut StateReader::new(&buf[..len])).unwrap();
        run(&mut apu, 40000);
        run(&mut copy, 40000);
        assert_eq!(apu.read_status(), copy.read_status());
        assert_eq!(apu.dmc.addr, copy.dmc.addr);
        assert_eq!(apu.length[PULSE1].counter, copy.length[PULSE1].counter);
    }
}

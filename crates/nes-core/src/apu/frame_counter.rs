//! The frame counter ($4017): the APU's ~240 Hz sequencer.
//!
//! It counts CPU cycles since it was last restarted and, at fixed steps, clocks the
//! quarter-frame units (envelopes, triangle linear counter) and the half-frame units (length
//! counters, sweeps), and in 4-step mode raises the frame IRQ. The hardware counts APU cycles
//! (one per two CPU cycles) and its steps fall on half APU cycles (3728.5, 7456.5, 11185.5,
//! 14914.5 APU cycles), so in CPU cycles they are 7457, 14913, 22371 and 29829 after the restart.
//!
//! | step | 4-step ($4017 bit 7 = 0)        | 5-step ($4017 bit 7 = 1) |
//! |------|---------------------------------|--------------------------|
//! | 0    | 7457: quarter                   | 7457: quarter            |
//! | 1    | 14913: quarter + half           | 14913: quarter + half    |
//! | 2    | 22371: quarter                  | 22371: quarter           |
//! | 3    | 29828: IRQ                      | 29829: nothing           |
//! | 4    | 29829: quarter + half + IRQ     | 37281: quarter + half    |
//! | 5    | 29830: IRQ, restart at 0        | 37282: restart at 0      |
//!
//! The IRQ flag is set on three consecutive cycles: a `$4015` read that clears it on the first
//! is undone by the next (apu_test 6-irq_flag_timing reads it "set three times in a row").
//!
//! A `$4017` write restarts the sequence only once the APU clock lines up: 3 CPU cycles after
//! the write cycle if it fell on one phase of the APU clock, 4 if on the other (apu_test
//! 4-jitter). Its IRQ-inhibit bit acts at once. Entering 5-step mode clocks quarter and half
//! frame at the restart, unless the sequencer itself clocked them on the cycle before (the
//! `block` counter keeps a write from clocking the length counters twice in a row).
//!
//! Everything is a small integer so the CUDA kernel can mirror it field for field.

use crate::state::{StateError, StateReader, StateWriter};

/// Event bit: clock envelopes and the triangle's linear counter.
pub const QUARTER: u8 = 1;
/// Event bit: clock length counters and sweeps.
pub const HALF: u8 = 2;

/// CPU cycles since the restart at which each step fires, per mode (0 = 4-step, 1 = 5-step).
const STEP_CYCLES: [[u16; 6]; 2] =
    [[7457, 14913, 22371, 29828, 29829, 29830], [7457, 14913, 22371, 29829, 37281, 37282]];

/// What each step clocks (`QUARTER | HALF` bits), per mode.
const STEP_EVENTS: [[u8; 6]; 2] = [
    [QUARTER, QUARTER | HALF, QUARTER, 0, QUARTER | HALF, 0],
    [QUARTER, QUARTER | HALF, QUARTER, 0, QUARTER | HALF, 0],
];

/// The cycles after a $4017 write before it restarts the sequencer: the write waits for the
/// APU clock, 3 cycles when written on an odd CPU cycle, 4 on an even one. Odd cycles (counted
/// from power-on, like `Bus::cycles`) are also the bus's OAM-DMA "get" cycles; apu_test alone
/// cannot tell the two parities apart (it syncs to the frame IRQ), but cpu_interrupts_v2
/// test 4 (IRQ during OAM DMA) fails if they are swapped.
const WRITE_DELAY_ODD: u8 = 3;
const WRITE_DELAY_EVEN: u8 = 4;

#[derive(Debug, Clone, Default)]
pub struct FrameCounter {
    /// $4017 bit 7 as the sequencer currently runs it (changes only when a write lands).
    pub five_step: bool,
    /// $4017 bit 6: no frame IRQ; setting it also clears the flag.
    pub irq_inhibit: bool,
    /// The frame interrupt flag ($4015 bit 6).
    pub irq_flag: bool,
    /// Index of the next step in `STEP_CYCLES`.
    pub step: u8,
    /// CPU cycles since the last restart.
    pub cycle: u16,
    /// Cycles until `pending` takes effect; 0 = no write pending.
    pub write_delay: u8,
    /// The $4017 value waiting for `write_delay`.
    pub pending: u8,
    /// The last value written to $4017, rewritten by the reset button.
    pub last_write: u8,
    /// Cycles during which a $4017 write may not clock: 2 after the sequencer clocks.
    pub block: u8,
}

impl FrameCounter {
    /// Power-on: as if $00 were written to $4017 just before the CPU's reset sequence, which
    /// puts it about 10 cycles before the first instruction (blargg's apu_reset: "9-12 clocks").
    pub fn new() -> FrameCounter {
        FrameCounter { write_delay: WRITE_DELAY_ODD, pending: 0x00, ..FrameCounter::default() }
    }

    /// Reset button: the register keeps its value and is applied again, as a fresh write.
    pub fn reset(&mut self) {
        self.irq_flag = false;
        self.step = 0;
        self.cycle = 0;
        self.block = 0;
        self.irq_inhibit = self.last_write & 0x40 != 0;
        self.pending = self.last_write;
        self.write_delay = WRITE_DELAY_ODD;
    }

    /// A CPU write to $4017 on a cycle of the given parity.
    pub fn write(&mut self, v: u8, odd_cycle: bool) {
        self.pending = v;
        self.last_write = v;
        self.write_delay = if odd_cycle { WRITE_DELAY_ODD } else { WRITE_DELAY_EVEN };
        // The inhibit bit is not delayed: it gates and clears the flag right away
        // (apu_test 3-irq_flag #7: "Writing $40 or $C0 to $4017 should clear flag").
        self.irq_inhibit = v & 0x40 != 0;
        if self.irq_inhibit {
            self.irq_flag = false;
        }
    }

    /// One CPU cycle. Returns the `QUARTER | HALF` clocks to apply this cycle.
    #[inline]
    pub fn tick(&mut self) -> u8 {
        let mode = self.five_step as usize;
        let step = self.step as usize;
        let mut events = 0;
        self.cycle += 1;
        if self.cycle == STEP_CYCLES[mode][step] {
            // Steps 3-5 of 4-step mode are the three cycles of the frame IRQ.
            if mode == 0 && step >= 3 && !self.irq_inhibit {
                self.irq_flag = true;
            }
            let e = STEP_EVENTS[mode][step];
            if e != 0 && self.block == 0 {
                events |= e;
                self.block = 2;
            }
            if step == 5 {
                self.step = 0;
                self.cycle = 0;
            } else {
                self.step += 1;
            }
        }
        // One test for the two rare counters (a pending $4017 write, the clock blocker).
        if self.write_delay | self.block == 0 {
            return events;
        }
        if self.write_delay > 0 {
            self.write_delay -= 1;
            if self.write_delay == 0 {
                self.five_step = self.pending & 0x80 != 0;
                self.step = 0;
                self.cycle = 0;
                // "Writing to $4017 with bit 7 set will immediately generate a clock for both
                // the quarter frame and the half frame units" (apu_test 1-len_ctr #4).
                if self.five_step && self.block == 0 {
                    events |= QUARTER | HALF;
                    self.block = 2;
                }
            }
        }
        if self.block > 0 {
            self.block -= 1;
        }
        events
    }

    /// Ticks until the next step fires (at least 1), or `None` when a `$4017` write or the
    /// clock blocker is pending (those few cycles must be ticked one by one) or the state is
    /// off the schedule (only a hand-made save state can be).
    #[inline]
    pub fn quiet_cycles_to_step(&self) -> Option<u16> {
        let next = STEP_CYCLES[self.five_step as usize][self.step as usize];
        if self.write_delay | self.block != 0 || self.cycle >= next {
            return None;
        }
        Some(next - self.cycle)
    }

    /// Ticks until `tick` may next set the IRQ flag (at least 1), `u32::MAX` if never without
    /// a `$4017` write. A pending write counts as an event: it restarts the schedule.
    pub fn cycles_to_irq(&self) -> u32 {
        let mut k = u32::MAX;
        if !self.five_step && !self.irq_inhibit {
            // Steps 3, 4 and 5 of the 4-step mode set the flag.
            let next = STEP_CYCLES[0][(self.step as usize).max(3)];
            k = if self.cycle < next { (next - self.cycle) as u32 } else { 1 };
        }
        if self.write_delay > 0 {
            k = k.min(self.write_delay as u32);
        }
        k
    }

    pub fn save(&self, w: &mut StateWriter<'_>) {
        w.bool(self.five_step);
        w.bool(self.irq_inhibit);
        w.bool(self.irq_flag);
        w.u8(self.step);
        w.u16(self.cycle);
        w.u8(self.write_delay);
        w.u8(self.pending);
        w.u8(self.last_write);
        w.u8(self.block);
    }

    pub fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        self.five_step = r.bool()?;
        self.irq_inhibit = r.bool()?;
        self.irq_flag = r.bool()?;
        self.step = r.u8()?;
        self.cycle = r.u16()?;
        self.write_delay = r.u8()?;
        self.pending = r.u8()?;
        self.last_write = r.u8()?;
        self.block = r.u8()?;
        if self.step > 5 {
            return Err(StateError::BadField("apu.frame.step"));
        }
        // The step fires on the cycle that reaches its count and moves on, so no tick leaves
        // the counter on it: a state there would never fire again.
        if self.cycle >= STEP_CYCLES[self.five_step as usize][self.step as usize] {
            return Err(StateError::BadField("apu.frame.cycle"));
        }
        if self.write_delay > WRITE_DELAY_EVEN || self.block > 2 {
            return Err(StateError::BadField("apu.frame.delay"));
        }
        Ok(())
    }
}

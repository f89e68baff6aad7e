//! The delta modulation channel (DMC): 1-bit delta samples fetched from PRG by DMA.
//!
//! Three parts, as on the chip:
//! * the **memory reader** holds the sample's current address and bytes remaining. Whenever the
//!   one-byte sample buffer is empty and bytes remain, it asks the bus for a DMA read (the CPU is
//!   stalled for it); each byte fetched advances the address ($FFFF wraps to $8000) and, on the
//!   last byte, restarts the sample (loop flag) or raises the DMC IRQ (IRQ enable);
//! * the **timer** counts CPU cycles at one of 16 rates ($4010 bits 3-0) and clocks the output
//!   unit once per period;
//! * the **output unit** shifts out 8 bits per byte; when its 8-bit cycle ends it takes the next
//!   byte from the buffer, emptying it (which is what triggers the next DMA), or goes silent if
//!   the buffer is empty. So a sample of N bytes lasts about N * 8 timer periods.
//!
//! `$4015` bit 4 reads "bytes remaining > 0": it drops when the last byte is *fetched*, one
//! byte ahead of the sound. Writing 1 starts the sample only if none is in progress; writing 0
//! stops it (bytes remaining = 0) but lets the buffered byte play. Either write clears the IRQ.
//! The DMA that a start with an empty buffer triggers comes 2 or 3 cycles after the write,
//! as it waits for the APU clock (Mesen's dmc_dma_start_test timing).

use crate::state::{StateError, StateReader, StateWriter};

/// Timer periods in CPU cycles, NTSC, indexed by $4010 bits 3-0.
pub const RATE_TABLE: [u16; 16] = [428, 380, 340, 320, 286, 254, 226, 214, 190, 160, 142, 128, 106, 84, 72, 54];

#[derive(Debug, Clone, Default)]
pub struct Dmc {
    /// $4010 bit 7.
    pub irq_enable: bool,
    /// $4010 bit 6.
    pub loop_flag: bool,
    /// $4010 bits 3-0.
    pub rate: u8,
    /// $4011: 7-bit output level (no audio yet, kept for growth and save states).
    pub output_level: u8,
    /// $4012: sample start, $C000 + 64 * value.
    pub sample_addr: u16,
    /// $4013: sample length, 16 * value + 1.
    pub sample_len: u16,
    /// Memory reader: next byte to fetch.
    pub addr: u16,
    /// Memory reader: bytes still to fetch.
    pub bytes_remaining: u16,
    /// The one-byte sample buffer.
    pub buffer: u8,
    pub buffer_empty: bool,
    /// Output unit.
    pub shift: u8,
    pub bits_remaining: u8,
    pub silence: bool,
    /// Cycles until the timer next clocks the output unit, counting down to 0.
    pub timer: u16,
    /// The DMC interrupt flag ($4015 bit 7).
    pub irq_flag: bool,
    /// Cycles before a sample started by $4015 may request its first DMA; 0 = no wait.
    pub start_delay: u8,
}

impl Dmc {
    pub fn new() -> Dmc {
        Dmc {
            sample_addr: 0xC000,
            sample_len: 1,
            buffer_empty: true,
            bits_remaining: 8,
            silence: true,
            timer: RATE_TABLE[0] - 1,
            ..Dmc::default()
        }
    }

    /// $4010-$4013.
    pub fn write(&mut self, reg: u16, v: u8) {
        match reg & 3 {
            0 => {
                self.irq_enable = v & 0x80 != 0;
                self.loop_flag = v & 0x40 != 0;
                // The new rate is used when the timer next reloads, not mid-period.
                self.rate = v & 0x0F;
                // Clearing IRQ enable acknowledges the interrupt (apu_test 7-dmc_basics #12).
                if !self.irq_enable {
                    self.irq_flag = false;
                }
            }
            1 => self.output_level = v & 0x7F,
            2 => self.sample_addr = 0xC000 | ((v as u16) << 6),
            _ => self.sample_len = ((v as u16) << 4) | 1,
        }
    }

    /// $4015 bit 4, written on a CPU cycle of the given parity. The caller has already
    /// cleared the IRQ flag (any $4015 write does).
    pub fn set_enabled(&mut self, enabled: bool, odd_cycle: bool) {
        if !enabled {
            self.bytes_remaining = 0;
        } else if self.bytes_remaining == 0 {
            self.restart();
            // The fetch waits for the APU clock: 2 or 3 cycles depending on parity.
            self.start_delay = if odd_cycle { 3 } else { 2 };
        }
    }

    fn restart(&mut self) {
        self.addr = self.sample_addr;
        self.bytes_remaining = self.sample_len;
    }

    /// One CPU cycle.
    #[inline]
    pub fn tick(&mut self) {
        if self.start_delay > 0 {
            self.start_delay -= 1;
        }
        if self.timer > 0 {
            self.timer -= 1;
            return;
        }
        self.timer = RATE_TABLE[self.rate as usize] - 1;
        self.clock_output();
    }

    /// The output unit's clock: play one bit (the level moves by 2 within 0..=127).
    #[inline]
    fn clock_output(&mut self) {
        if !self.silence {
            if self.shift & 1 != 0 {
                if self.output_level <= 125 {
                    self.output_level += 2;
                }
            } else if self.output_level >= 2 {
                self.output_level -= 2;
            }
        }
        self.shift >>= 1;
        self.bits_remaining -= 1;
        if self.bits_remaining == 0 {
            // A new 8-bit output cycle takes the buffered byte, emptying the buffer, which
            // makes the reader request the next one.
            self.bits_remaining = 8;
            if self.buffer_empty {
                self.silence = true;
            } else {
                self.silence = false;
                self.shift = self.buffer;
                self.buffer_empty = true;
            }
        }
    }

    /// `n` calls of [`Dmc::tick`] at once: the timer in closed form, then one step of the
    /// output unit per period, and once it is silent with an empty buffer (the usual idle
    /// state) the rest of its 8-bit cycles in closed form.
    pub fn run(&mut self, n: u32) {
        self.start_delay = self.start_delay.saturating_sub(n.min(255) as u8);
        if n <= self.timer as u32 {
            self.timer -= n as u16;
            return;
        }
        // The first output clock comes on tick `timer + 1`, then one every `period` ticks.
        let period = RATE_TABLE[self.rate as usize] as u32;
        let rest = n - (self.timer as u32 + 1);
        self.timer = (period - 1 - rest % period) as u16;
        let mut clocks = 1 + rest / period;
        while clocks > 0 {
            if self.silence && self.buffer_empty {
                // Nothing can refill the buffer here (only DMA does): the level stays, the
                // shift register empties, the bit counter wraps every 8 clocks.
                let b = self.bits_remaining as u32 - 1;
                self.bits_remaining = ((b + 8 - clocks % 8) % 8 + 1) as u8;
                self.shift = if clocks >= 8 { 0 } else { self.shift >> clocks };
                return;
            }
            self.clock_output();
            clocks -= 1;
        }
    }

    /// The ticks until [`Dmc::dma_request`] may turn on (0: it is on now), `u32::MAX` if no
    /// byte remains to fetch (only a register write can change that).
    pub fn cycles_to_dma(&self) -> u32 {
        if self.bytes_remaining == 0 {
            return u32::MAX;
        }
        if self.buffer_empty {
            return self.start_delay as u32;
        }
        // The output unit takes the buffered byte when its bit counter runs out.
        let period = RATE_TABLE[self.rate as usize] as u32;
        let empty = self.timer as u32 + 1 + (self.bits_remaining as u32 - 1) * period;
        empty.max(self.start_delay as u32)
    }

    /// The address the memory reader wants fetched, if it wants one now.
    #[inline]
    pub fn dma_request(&self) -> Option<u16> {
        if self.buffer_empty && self.bytes_remaining > 0 && self.start_delay == 0 {
            Some(self.addr)
        } else {
            None
        }
    }

    /// The bus fetched `v` from `dma_request()`'s address.
    pub fn dma_complete(&mut self, v: u8) {
        // The sample may have been stopped while the bus was stalling for it.
        if self.bytes_remaining == 0 {
            return;
        }
        self.buffer = v;
        self.buffer_empty = false;
        self.addr = if self.addr == 0xFFFF { 0x8000 } else { self.addr + 1 };
        self.bytes_remaining -= 1;
        if self.bytes_remaining == 0 {
            if self.loop_flag {
                self.restart();
            } else if self.irq_enable {
                self.irq_flag = true;
            }
        }
    }

    pub fn save(&self, w: &mut StateWriter<'_>) {
        w.bool(self.irq_enable);
        w.bool(self.loop_flag);
        w.u8(self.rate);
        w.u8(self.output_level);
        w.u16(self.sample_addr);
        w.u16(self.sample_len);
        w.u16(self.addr);
        w.u16(self.bytes_remaining);
        w.u8(self.buffer);
        w.bool(self.buffer_empty);
        w.u8(self.shift);
        w.u8(self.bits_remaining);
        w.bool(self.silence);
        w.u16(self.timer);
        w.bool(self.irq_flag);
        w.u8(self.start_delay);
    }

    pub fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        self.irq_enable = r.bool()?;
        self.loop_flag = r.bool()?;
        self.rate = r.u8()?;
        self.output_level = r.u8()?;
        self.sample_addr = r.u16()?;
        self.sample_len = r.u16()?;
        self.addr = r.u16()?;
        self.bytes_remaining = r.u16()?;
        self.buffer = r.u8()?;
        self.buffer_empty = r.bool()?;
        self.shift = r.u8()?;
        self.bits_remaining = r.u8()?;
        self.silence = r.bool()?;
        self.timer = r.u16()?;
        self.irq_flag = r.bool()?;
        self.start_delay = r.u8()?;
        if self.rate > 15 || self.output_level > 127 {
            return Err(StateError::BadField("apu.dmc.rate"));
        }
        if self.bits_remaining == 0 || self.bits_remaining > 8 {
            return Err(StateError::BadField("apu.dmc.bits_remaining"));
        }
        if self.timer >= RATE_TABLE[0] {
            return Err(StateError::BadField("apu.dmc.timer"));
        }
        Ok(())
    }
}

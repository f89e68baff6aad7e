//! The length counter: the note-duration timer of pulse 1, pulse 2, triangle and noise.
//!
//! A write to the channel's length register ($4003/$4007/$400B/$400F, bits 7-3) loads an entry
//! of a 32-entry table; each half-frame clock counts it down unless the halt flag is set; at 0
//! the channel is silent and its `$4015` status bit reads 0. Disabling the channel through
//! `$4015` zeroes it and makes loads ignored until it is enabled again.
//!
//! Two timing quirks are visible to the CPU (apu_test 5-len_timing, and the len_reload_timing
//! and len_halt_timing tests), both because the hardware latches the write and applies it after
//! the half-frame clock of the next cycle:
//! * a load on the cycle the counter is clocked is dropped if the counter was non-zero (the
//!   clock changed it, so it no longer equals the value seen at the write); a zero counter,
//!   which the clock leaves alone, takes the load;
//! * a halt-flag change takes effect after that clock, so the clock still sees the old flag.

use crate::state::{StateError, StateReader, StateWriter};

/// Lengths in half-frames, indexed by bits 7-3 of the length register.
pub const LENGTH_TABLE: [u8; 32] = [
    10, 254, 20, 2, 40, 4, 80, 6, 160, 8, 60, 10, 14, 12, 26, 14, //
    12, 16, 24, 18, 48, 20, 96, 22, 192, 24, 72, 26, 16, 28, 32, 30,
];

#[derive(Debug, Clone, Default)]
pub struct LengthCounter {
    /// Half-frames left; 0 = silent.
    pub counter: u8,
    /// The channel's `$4015` enable bit.
    pub enabled: bool,
    /// Halt flag as the half-frame clock sees it.
    pub halt: bool,
    /// Halt flag written by the CPU, copied to `halt` after the next clock.
    pub new_halt: bool,
    /// Table value of a pending load; 0 = none (the table has no 0).
    pub reload: u8,
    /// `counter` at the time of the pending load.
    pub reload_seen: u8,
}

impl LengthCounter {
    /// A write to the length register (the index is bits 7-3 of the value).
    pub fn load(&mut self, index: u8) {
        // While disabled the load is ignored (apu_test 1-len_ctr #7).
        if self.enabled {
            self.reload = LENGTH_TABLE[(index & 0x1F) as usize];
            self.reload_seen = self.counter;
        }
    }

    /// A write to the register holding the halt flag.
    pub fn set_halt(&mut self, halt: bool) {
        self.new_halt = halt;
    }

    /// The channel's `$4015` bit.
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
        if !enabled {
            self.counter = 0;
            self.reload = 0;
        }
    }

    /// Half-frame clock.
    #[inline]
    pub fn clock(&mut self) {
        if self.counter > 0 && !self.halt {
            self.counter -= 1;
        }
    }

    /// Runs every cycle after the frame counter: applies the writes of the previous cycle.
    #[inline]
    pub fn apply_writes(&mut self) {
        if self.reload != 0 {
            if self.counter == self.reload_seen {
                self.counter = self.reload;
            }
            self.reload = 0;
        }
        self.halt = self.new_halt;
    }

    pub fn save(&self, w: &mut StateWriter<'_>) {
        w.u8(self.counter);
        w.bool(self.enabled);
        w.bool(self.halt);
        w.bool(self.new_halt);
        w.u8(self.reload);
        w.u8(self.reload_seen);
    }

    pub fn load_state(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        self.counter = r.u8()?;
        self.enabled = r.bool()?;
        self.halt = r.bool()?;
        self.new_halt = r.bool()?;
        self.reload = r.u8()?;
        self.reload_seen = r.u8()?;
        Ok(())
    }
}

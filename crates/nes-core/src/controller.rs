//! Standard controllers on $4016/$4017: an 8-bit parallel-in shift register each.
//!
//! While the strobe bit ($4016 bit 0) is 1 the registers reload continuously, so reads return
//! button A; after the strobe falls, each read shifts out A, B, Select, Start, Up, Down, Left,
//! Right, then 1s (official pads pull the serial line high once empty).

use crate::state::{Snapshot, StateError, StateReader, StateWriter};

pub const A: u8 = 0x01;
pub const B: u8 = 0x02;
pub const SELECT: u8 = 0x04;
pub const START: u8 = 0x08;
pub const UP: u8 = 0x10;
pub const DOWN: u8 = 0x20;
pub const LEFT: u8 = 0x40;
pub const RIGHT: u8 = 0x80;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Controllers {
    /// Buttons currently held, bit 0 = A ... bit 7 = Right.
    pub buttons: [u8; 2],
    shift: [u8; 2],
    strobe: bool,
}

impl Controllers {
    pub fn write_strobe(&mut self, v: u8) {
        self.strobe = v & 1 != 0;
        if self.strobe {
            self.shift = self.buttons;
        }
    }

    /// Serial bit of pad `port & 1` (bit 0 of the $4016/$4017 read), as the bus decodes it.
    pub fn read(&mut self, port: usize) -> u8 {
        let port = port & 1;
        if self.strobe {
            return self.buttons[port] & 1;
        }
        let bit = self.shift[port] & 1;
        self.shift[port] = (self.shift[port] >> 1) | 0x80;
        bit
    }
}

impl Snapshot for Controllers {
    fn save(&self, w: &mut StateWriter<'_>) {
        w.bytes(&self.buttons);
        w.bytes(&self.shift);
        w.bool(self.strobe);
    }
    fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError> {
        r.bytes(&mut self.buttons)?;
        r.bytes(&mut self.shift)?;
        self.strobe = r.bool()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_the_strobe_falls_reads_shift_out_a_first_then_ones() {
        let mut c = Controllers::default();
        c.buttons[0] = A | START | RIGHT;
        c.write_strobe(1);
        c.write_strobe(0);
        let bits: [u8; 10] = core::array::from_fn(|_| c.read(0));
        assert_eq!(bits, [1, 0, 0, 1, 0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn while_strobed_every_read_returns_button_a() {
        let mut c = Controllers::default();
        c.buttons[1] = A;
        c.write_strobe(1);
        assert_eq!(c.read(1), 1);
        assert_eq!(c.read(1), 1);
    }
}

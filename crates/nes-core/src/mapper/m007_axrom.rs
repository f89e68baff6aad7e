//! AxROM (mapper 7): bits 0-2 select a 32 KiB PRG bank, bit 4 the one-screen nametable page.

use crate::cart::{Cart, Mirroring};

pub(crate) fn write(cart: &mut Cart, v: u8) {
    cart.regs[0] = v;
}

pub(crate) fn update(cart: &mut Cart) {
    super::set_prg_32k(cart, (cart.regs[0] & 0x07) as usize);
    super::set_chr_8k(cart, 0);
    cart.mirroring = if cart.regs[0] & 0x10 != 0 { Mirroring::SingleHigh } else { Mirroring::SingleLow };
}

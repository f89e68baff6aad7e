//! GxROM (mapper 66): bits 4-5 select a 32 KiB PRG bank, bits 0-1 an 8 KiB CHR bank.

use crate::cart::Cart;

pub(crate) fn write(cart: &mut Cart, v: u8) {
    cart.regs[0] = v;
}

pub(crate) fn update(cart: &mut Cart) {
    super::set_prg_32k(cart, ((cart.regs[0] >> 4) & 0x03) as usize);
    super::set_chr_8k(cart, (cart.regs[0] & 0x03) as usize);
}

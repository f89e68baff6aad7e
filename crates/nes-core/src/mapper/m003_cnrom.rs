//! CNROM (mapper 3): fixed PRG like NROM; any write to $8000-$FFFF selects an 8 KiB CHR bank.

use crate::cart::Cart;

pub(crate) fn write(cart: &mut Cart, v: u8) {
    cart.regs[0] = v;
}

pub(crate) fn update(cart: &mut Cart) {
    super::set_prg_16k(cart, 0, super::prg_16k_count(cart) - 1);
    super::set_chr_8k(cart, cart.regs[0] as usize);
}

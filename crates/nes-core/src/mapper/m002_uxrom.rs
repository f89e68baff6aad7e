//! UxROM (mapper 2): a 16 KiB bank at $8000 selected by any write to $8000-$FFFF; the last
//! bank is fixed at $C000. CHR is 8 KiB, usually RAM.

use crate::cart::Cart;

pub(crate) fn write(cart: &mut Cart, v: u8) {
    cart.regs[0] = v;
}

pub(crate) fn update(cart: &mut Cart) {
    let last = super::prg_16k_count(cart) - 1;
    super::set_prg_16k(cart, cart.regs[0] as usize, last);
    super::set_chr_8k(cart, 0);
}

//! NROM (mapper 0): no registers. 16 KiB PRG appears at both $8000 and $C000; 8 KiB CHR.

use crate::cart::Cart;

pub(crate) fn update(cart: &mut Cart) {
    super::set_prg_16k(cart, 0, super::prg_16k_count(cart) - 1);
    super::set_chr_8k(cart, 0);
}

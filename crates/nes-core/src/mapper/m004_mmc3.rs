//! MMC3 (mapper 4, TxROM): 8 KiB PRG / 1-2 KiB CHR banking and a scanline counter clocked by
//! rising edges of PPU address line A12.
//!
//! `regs` holds bank registers R0-R7; `latch` is the bank-select register ($8000).
//! The counter: on a filtered A12 rise, if it is 0 or a reload was requested it is reloaded
//! from `irq_latch`, else decremented; if it is then 0 and IRQs are enabled, /IRQ is asserted.
//! That is the behaviour of the common ("new", Sharp) MMC3; the alternate chip only fires
//! when the counter reaches 0 by decrementing, which test ROM 6-MMC3_alt checks.
//!
//! A12 filter: the chip ignores a rise unless A12 stayed low for a few CPU cycles, so the
//! eight sprite-pattern fetches of one scanline count once. We measure the low period in PPU
//! dots; 10 dots (3+ CPU cycles) separates the 2-dot gaps between fetches from real edges.

use super::{set_chr_1k, set_prg_8k};
use crate::cart::{Cart, Mirroring};

const A12_MIN_LOW_DOTS: u64 = 10;

pub(crate) fn power_on(cart: &mut Cart) {
    cart.regs = [0, 2, 4, 5, 6, 7, 0, 1];
    cart.latch = 0;
    cart.latch_count = (cart.header_mirroring == Mirroring::Horizontal) as u8;
}

pub(crate) fn write(cart: &mut Cart, addr: u16, v: u8) {
    match (addr & 0xe000, addr & 1) {
        (0x8000, 0) => cart.latch = v,
        (0x8000, _) => cart.regs[(cart.latch & 7) as usize] = v,
        (0xa000, 0) => {
            if cart.header_mirroring != Mirroring::FourScreen {
                cart.regs_mirroring_set(v & 1);
            }
        }
        (0xa000, _) => {
            cart.prg_ram_enabled = v & 0x80 != 0;
            cart.prg_ram_writable = v & 0x40 == 0;
        }
        (0xc000, 0) => cart.irq_latch = v,
        (0xc000, _) => {
            cart.irq_counter = 0;
            cart.irq_reload = true;
        }
        (0xe000, 0) => {
            cart.irq_enabled = false;
            cart.irq_line = false;
        }
        _ => cart.irq_enabled = true,
    }
}

impl Cart {
    fn regs_mirroring_set(&mut self, horizontal: u8) {
        // Kept in `latch_count` (unused by MMC3's serial logic) so `update` can rebuild it.
        self.latch_count = horizontal;
    }
}

pub(crate) fn update(cart: &mut Cart) {
    let r = cart.regs;
    let second_last = cart.prg_len() / 0x2000 - 2;
    let last = second_last + 1;
    if cart.latch & 0x40 == 0 {
        set_prg_8k(cart, [r[6] as usize, r[7] as usize, second_last, last]);
    } else {
        set_prg_8k(cart, [second_last, r[7] as usize, r[6] as usize, last]);
    }
    let two_k = [r[0] as usize & !1, (r[0] as usize & !1) + 1, r[1] as usize & !1, (r[1] as usize & !1) + 1];
    let one_k = [r[2] as usize, r[3] as usize, r[4] as usize, r[5] as usize];
    if cart.latch & 0x80 == 0 {
        set_chr_1k(cart, [two_k[0], two_k[1], two_k[2], two_k[3], one_k[0], one_k[1], one_k[2], one_k[3]]);
    } else {
        set_chr_1k(cart, [one_k[0], one_k[1], one_k[2], one_k[3], two_k[0], two_k[1], two_k[2], two_k[3]]);
    }
    if cart.header_mirroring != Mirroring::FourScreen {
        cart.mirroring = if cart.latch_count & 1 != 0 { Mirroring::Horizontal } else { Mirroring::Vertical };
    }
}

#[inline]
pub(crate) fn watch_a12(cart: &mut Cart, addr: u16, dot: u64) {
    let high = addr & 0x1000 != 0;
    if high && !cart.a12_high {
        if dot.wrapping_sub(cart.a12_low_since) >= A12_MIN_LOW_DOTS {
            clock_counter(cart);
        }
    } else if !high && cart.a12_high {
        cart.a12_low_since = dot;
    }
    cart.a12_high = high;
}

fn clock_counter(cart: &mut Cart) {
    if cart.irq_counter == 0 || cart.irq_reload {
        cart.irq_counter = cart.irq_latch;
        cart.irq_reload = false;
    } else {
        cart.irq_counter -= 1;
    }
    if cart.irq_counter == 0 && cart.irq_enabled {
        cart.irq_line = true;
    }
}

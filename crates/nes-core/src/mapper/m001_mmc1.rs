//! MMC1 (mapper 1, SxROM): registers are loaded serially, one bit per write to $8000-$FFFF.
//!
//! Five writes shift bit 0 into `latch`; the fifth copies it into the register chosen by
//! address bits 13-14: control ($8000), CHR bank 0 ($A000), CHR bank 1 ($C000), PRG bank
//! ($E000). A write with bit 7 set resets the shifter and sets PRG mode 3. The chip ignores a
//! write on the cycle right after another one, which swallows the dummy write of an RMW
//! instruction (games such as Bill & Ted rely on it).
//!
//! `regs`: 0 control, 1 CHR bank 0, 2 CHR bank 1, 3 PRG bank.
//! 512 KiB boards (SUROM) use CHR bank 0 bit 4 to pick the 256 KiB PRG half.

use super::{set_chr_4k, set_chr_8k, set_prg_16k, set_prg_32k};
use crate::cart::{Cart, Mirroring};

pub(crate) fn power_on(cart: &mut Cart) {
    cart.regs[0] = 0x0c;
    cart.latch = 0;
    cart.latch_count = 0;
}

pub(crate) fn reset(cart: &mut Cart) {
    cart.regs[0] |= 0x0c;
    cart.latch = 0;
    cart.latch_count = 0;
}

pub(crate) fn write(cart: &mut Cart, addr: u16, v: u8, cycle: u64) {
    let consecutive = cycle == cart.last_write_cycle.wrapping_add(1);
    cart.last_write_cycle = cycle;
    if consecutive {
        return;
    }
    if v & 0x80 != 0 {
        cart.latch = 0;
        cart.latch_count = 0;
        cart.regs[0] |= 0x0c;
        return;
    }
    cart.latch |= (v & 1) << cart.latch_count;
    cart.latch_count += 1;
    if cart.latch_count == 5 {
        let reg = ((addr >> 13) & 3) as usize;
        cart.regs[reg] = cart.latch;
        cart.latch = 0;
        cart.latch_count = 0;
    }
}

pub(crate) fn update(cart: &mut Cart) {
    let control = cart.regs[0];
    cart.mirroring = match control & 3 {
        0 => Mirroring::SingleLow,
        1 => Mirroring::SingleHigh,
        2 => Mirroring::Vertical,
        _ => Mirroring::Horizontal,
    };
    let outer = if cart.prg_len() > 0x40000 { cart.regs[1] as usize & 0x10 } else { 0 };
    let bank = (cart.regs[3] & 0x0f) as usize | outer;
    let last = (cart.prg_len() / 0x4000).clamp(1, 16) - 1;
    match (control >> 2) & 3 {
        0 | 1 => set_prg_32k(cart, bank >> 1),
        2 => set_prg_16k(cart, outer, bank),
        _ => set_prg_16k(cart, bank, outer | last),
    }
    if control & 0x10 != 0 {
        set_chr_4k(cart, cart.regs[1] as usize, cart.regs[2] as usize);
    } else {
        set_chr_8k(cart, (cart.regs[1] >> 1) as usize);
    }
    // MMC1B: PRG bank bit 4 set disables PRG RAM.
    cart.prg_ram_enabled = cart.regs[3] & 0x10 == 0;
}

//! Mappers: the boards that bank-switch PRG and CHR and, for MMC3, count scanlines.
//!
//! Each board is one file, `mapper/mNNN_name.rs`, with three free functions over [`Cart`]:
//! `power_on` (initial registers), `write` (a CPU write to $8000-$FFFF) and `update` (recompute
//! `prg_map`/`chr_map`/mirroring from the registers). Dispatch is a `match` on [`MapperKind`],
//! a plain enum the CUDA kernel mirrors with a `switch`, one arm per row below.
//!
//! Adding a mapper:
//! 1. add `mapper/mNNN_name.rs` with `power_on`, `write`, `update` (and `reset` if it has one);
//!    `update` sets PRG banks only through `set_prg_8k`, which keeps `Cart::prg_window` (the
//!    copy CPU reads come from) in step with `prg_map`;
//! 2. add a variant to `MapperKind` and its row to `from_number` and to each `match` here;
//! 3. if it needs state beyond `Cart::regs`/`latch`/IRQ fields, add fields to `Cart` and to its
//!    `Snapshot` impl, and bump `console::STATE_VERSION`;
//! 4. mirror it in `kernels/mapper.cuh` and add a test ROM or unit test.

use crate::cart::Cart;

pub mod m000_nrom;
pub mod m001_mmc1;
pub mod m002_uxrom;
pub mod m003_cnrom;
pub mod m004_mmc3;
pub mod m007_axrom;
pub mod m066_gxrom;

/// The boards nesle implements, numbered as in iNES.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum MapperKind {
    Nrom = 0,
    Mmc1 = 1,
    Uxrom = 2,
    Cnrom = 3,
    Mmc3 = 4,
    Axrom = 7,
    Gxrom = 66,
}

impl MapperKind {
    pub fn from_number(n: u16) -> Option<MapperKind> {
        Some(match n {
            0 => MapperKind::Nrom,
            1 => MapperKind::Mmc1,
            2 => MapperKind::Uxrom,
            3 => MapperKind::Cnrom,
            4 => MapperKind::Mmc3,
            7 => MapperKind::Axrom,
            66 => MapperKind::Gxrom,
            _ => return None,
        })
    }

    pub fn number(self) -> u16 {
        self as u16
    }
}

pub(crate) fn power_on(cart: &mut Cart) {
    match cart.kind {
        MapperKind::Nrom => {}
        MapperKind::Mmc1 => m001_mmc1::power_on(cart),
        MapperKind::Uxrom | MapperKind::Cnrom | MapperKind::Axrom | MapperKind::Gxrom => {}
        MapperKind::Mmc3 => m004_mmc3::power_on(cart),
    }
    update(cart);
}

pub(crate) fn reset(cart: &mut Cart) {
    if cart.kind == MapperKind::Mmc1 {
        m001_mmc1::reset(cart);
    }
    update(cart);
}

#[inline]
pub(crate) fn write_register(cart: &mut Cart, addr: u16, v: u8, cycle: u64) {
    match cart.kind {
        MapperKind::Nrom => return,
        MapperKind::Mmc1 => m001_mmc1::write(cart, addr, v, cycle),
        MapperKind::Uxrom => m002_uxrom::write(cart, v),
        MapperKind::Cnrom => m003_cnrom::write(cart, v),
        MapperKind::Mmc3 => m004_mmc3::write(cart, addr, v),
        MapperKind::Axrom => m007_axrom::write(cart, v),
        MapperKind::Gxrom => m066_gxrom::write(cart, v),
    }
    update(cart);
}

pub(crate) fn update(cart: &mut Cart) {
    match cart.kind {
        MapperKind::Nrom => m000_nrom::update(cart),
        MapperKind::Mmc1 => m001_mmc1::update(cart),
        MapperKind::Uxrom => m002_uxrom::update(cart),
        MapperKind::Cnrom => m003_cnrom::update(cart),
        MapperKind::Mmc3 => m004_mmc3::update(cart),
        MapperKind::Axrom => m007_axrom::update(cart),
        MapperKind::Gxrom => m066_gxrom::update(cart),
    }
}

/// Points the four 8 KiB CPU windows at `banks` (in 8 KiB units, wrapped to the ROM size).
pub(crate) fn set_prg_8k(cart: &mut Cart, banks: [usize; 4]) {
    let count = (cart.prg_len() / 0x2000).max(1);
    for (slot, bank) in banks.into_iter().enumerate() {
        let offset = ((bank % count) * 0x2000) as u32;
        if cart.prg_map[slot] != offset {
            cart.prg_map[slot] = offset;
            cart.fill_prg_slot(slot);
        }
    }
}

/// Points the eight 1 KiB PPU windows at `banks` (in 1 KiB units, wrapped to the CHR size).
pub(crate) fn set_chr_1k(cart: &mut Cart, banks: [usize; 8]) {
    let count = (cart.chr_len() / 0x400).max(1);
    for (slot, bank) in banks.into_iter().enumerate() {
        cart.chr_map[slot] = ((bank % count) * 0x400) as u32;
    }
}

/// 32 KiB PRG bank `b` at $8000.
pub(crate) fn set_prg_32k(cart: &mut Cart, b: usize) {
    set_prg_8k(cart, [b * 4, b * 4 + 1, b * 4 + 2, b * 4 + 3]);
}

/// 16 KiB PRG banks `lo` at $8000 and `hi` at $C000.
pub(crate) fn set_prg_16k(cart: &mut Cart, lo: usize, hi: usize) {
    set_prg_8k(cart, [lo * 2, lo * 2 + 1, hi * 2, hi * 2 + 1]);
}

/// 8 KiB CHR bank `b`.
pub(crate) fn set_chr_8k(cart: &mut Cart, b: usize) {
    set_chr_1k(cart, core::array::from_fn(|i| b * 8 + i));
}

/// 4 KiB CHR banks `lo` at $0000 and `hi` at $1000.
pub(crate) fn set_chr_4k(cart: &mut Cart, lo: usize, hi: usize) {
    set_chr_1k(cart, core::array::from_fn(|i| if i < 4 { lo * 4 + i } else { hi * 4 + i - 4 }));
}

/// Number of 16 KiB PRG banks.
pub(crate) fn prg_16k_count(cart: &Cart) -> usize {
    (cart.prg_len() / 0x4000).max(1)
}

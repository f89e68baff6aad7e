//! A ROM split the way the kernels want it: PRG and CHR bytes shared by every env.

use crate::Error;
use nes_core::cart::{Cart, Header};
use nes_core::flat::FlatState;
use nes_core::Console;

/// A parsed ROM: its PRG/CHR images and a powered-on cartridge template. Read-only once made:
/// states are validated against the cartridge, and the kernels index the images by them.
#[derive(Clone)]
pub struct RomImage {
    pub(crate) prg: Vec<u8>,
    /// CHR ROM; empty when the board has CHR RAM (which lives in each FlatState).
    pub(crate) chr: Vec<u8>,
    /// One code word per PRG ROM byte (kernels/quiet.cuh `cpu_code_word`): the quiet path's
    /// fetch, built once here for the host build and for the GPU's copy.
    code: Vec<u32>,
    cart: Cart,
}

/// Sizes, not bytes: a `{:?}` of a batch would otherwise print the whole ROM (2 MB for Contra).
impl std::fmt::Debug for RomImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RomImage")
            .field("prg", &self.prg.len())
            .field("chr", &self.chr.len())
            .field("cart", &self.cart)
            .finish()
    }
}

impl RomImage {
    pub fn new(rom: &[u8]) -> Result<RomImage, Error> {
        let h = Header::parse(rom)?;
        let at = h.prg_offset();
        let prg = rom[at..at + h.prg_rom].to_vec();
        let chr = rom[at + h.prg_rom..at + h.prg_rom + h.chr_rom].to_vec();
        let cart = Cart::from_ines(rom)?;
        let code = crate::launch::code_words(&prg);
        Ok(RomImage { prg, chr, code, cart })
    }

    /// PRG ROM.
    pub fn prg(&self) -> &[u8] {
        &self.prg
    }

    /// CHR ROM; empty when the board has CHR RAM (which lives in each FlatState).
    pub fn chr(&self) -> &[u8] {
        &self.chr
    }

    /// The code words of `prg` (kernels/quiet.cuh `cpu_code_word`), one per byte, then 8 KiB
    /// of QF_NONE words (`launch::code_words`).
    pub(crate) fn code(&self) -> &[u32] {
        &self.code
    }

    /// The state of a console just powered on with this ROM.
    pub fn power_on(&self) -> FlatState {
        Console::with_cart(self.cart.clone()).to_flat()
    }

    /// A nes-core console in state `flat` (for checks against the reference).
    pub fn console(&self, flat: &FlatState) -> Result<Console, Error> {
        Ok(Console::from_flat(flat, &self.cart)?)
    }

    /// `flat` as nes-core loads it ([`Console::from_flat`]), or why it cannot run on this ROM:
    /// another board or sizes, or a field no console can be in (a banking map outside the ROM, a
    /// counter out of range). Bits the loader drops (a palette entry's top two bits, `v`'s bit
    /// 15, ...) are cleared, so the kernels run what nes-core would and never read out of bounds.
    pub fn loadable_state(&self, flat: &FlatState) -> Result<FlatState, Error> {
        Ok(Console::from_flat(flat, &self.cart)?.to_flat())
    }
}

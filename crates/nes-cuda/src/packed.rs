//! How a batch stores its consoles on the device: each [`FlatState`] without the regions its
//! cartridge can never touch (the upper 2 KiB of CIRAM without four-screen mirroring, 8 KiB of
//! PRG RAM on a board without it, 8 KiB of CHR RAM on a board with CHR ROM). Which regions those
//! are depends only on fields no code path changes (the ROM's header and board), so every state
//! of a batch has the same [`Packing`] and the same stride. Super Mario Bros. needs 12,896 bytes
//! an env instead of 23,136 (its iNES 1.0 header implies 8 KiB of PRG RAM, so that stays). The kernels unpack a state into their launch-local copy and pack
//! it back (kernels/console.cuh, `nes_unpack`/`nes_pack`, the same regions in the same order).

use crate::FlatState;
use core::mem::offset_of;

const MIR_FOUR_SCREEN: u8 = 4;

// The FlatState regions, in layout order: head | CIRAM hi | PRG RAM | CHR RAM | tail.
const CIRAM_HI: usize = offset_of!(FlatState, cart_ciram) + 0x800;
const PRG_RAM: usize = offset_of!(FlatState, cart_prg_ram);
const CHR_RAM: usize = offset_of!(FlatState, cart_chr_ram);
const TAIL: usize = offset_of!(FlatState, cart_prg_len);
const SIZE: usize = core::mem::size_of::<FlatState>();
const _: () = assert!(PRG_RAM == CIRAM_HI + 0x800 && CHR_RAM == PRG_RAM + 8192 && TAIL == CHR_RAM + 8192);
const _: () = assert!(CIRAM_HI % 8 == 0 && TAIL % 8 == 0 && SIZE % 8 == 0, "the kernels copy 8 bytes at a time");

/// Which optional regions a batch's states keep (bit 0 CIRAM hi, 1 PRG RAM, 2 CHR RAM: the
/// kernels' `packing` argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packing(u32);

impl Packing {
    /// The packing of every state of `state`'s ROM.
    pub fn of(state: &FlatState) -> Packing {
        let four = state.cart_header_mirroring == MIR_FOUR_SCREEN || state.cart_mirroring == MIR_FOUR_SCREEN;
        let prg_ram = state.cart_prg_ram_size != 0;
        let chr_ram = state.cart_chr_is_ram != 0;
        Packing(four as u32 | (prg_ram as u32) << 1 | (chr_ram as u32) << 2)
    }

    /// The kernels' `packing` argument.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// The (start, end) byte ranges of FlatState kept, in order.
    fn regions(self) -> impl Iterator<Item = (usize, usize)> {
        let b = self.0;
        [
            (0, CIRAM_HI, true),
            (CIRAM_HI, PRG_RAM, b & 1 != 0),
            (PRG_RAM, CHR_RAM, b & 2 != 0),
            (CHR_RAM, TAIL, b & 4 != 0),
            (TAIL, SIZE, true),
        ]
        .into_iter()
        .filter(|r| r.2)
        .map(|r| (r.0, r.1))
    }

    /// Bytes per packed state (a multiple of 8).
    pub fn stride(self) -> usize {
        self.regions().map(|(a, b)| b - a).sum()
    }

    // The packing itself is the crate's (callers size the buffers): a user reads the layout
    // (`stride`, `bits`) to find a state in `DevicePointers::states`.

    /// Writes `state` packed into `out` (`stride()` bytes).
    pub(crate) fn pack(self, state: &FlatState, out: &mut [u8]) {
        let mut bytes = [0u8; SIZE];
        state.to_bytes(&mut bytes);
        let mut at = 0;
        for (a, b) in self.regions() {
            out[at..at + b - a].copy_from_slice(&bytes[a..b]);
            at += b - a;
        }
    }

    /// The state packed in `packed` (`stride()` bytes); the regions not kept are zero, as the
    /// cartridge never touched them.
    pub(crate) fn unpack(self, packed: &[u8]) -> FlatState {
        let mut bytes = [0u8; SIZE];
        let mut at = 0;
        for (a, b) in self.regions() {
            bytes[a..b].copy_from_slice(&packed[at..at + b - a]);
            at += b - a;
        }
        FlatState::from_bytes(&bytes)
    }

    /// `states` packed one after another.
    pub(crate) fn pack_all(self, states: &[FlatState]) -> Vec<u8> {
        let s = self.stride();
        let mut out = vec![0u8; states.len() * s];
        for (st, chunk) in states.iter().zip(out.chunks_exact_mut(s)) {
            self.pack(st, chunk);
        }
        out
    }

    /// The states packed one after another in `packed`.
    pub(crate) fn unpack_all(self, packed: &[u8]) -> Vec<FlatState> {
        packed.chunks_exact(self.stride()).map(|c| self.unpack(c)).collect()
    }

    /// Whether `state` has nothing in the regions this packing drops (what [`Packing::unpack`]
    /// assumes: a state made by nes-core for this ROM always has zeros there).
    pub(crate) fn keeps_everything_of(self, state: &FlatState) -> bool {
        let mut packed = vec![0u8; self.stride()];
        self.pack(state, &mut packed);
        self.unpack(&packed) == *state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered() -> FlatState {
        let mut bytes = [0u8; SIZE];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        FlatState::from_bytes(&bytes)
    }

    #[test]
    fn strides_per_board() {
        let mut s = FlatState::zeroed();
        assert_eq!(Packing::of(&s).stride(), SIZE - 2048 - 8192 - 8192);
        assert_eq!(Packing::of(&s).stride(), 4704);
        s.cart_chr_is_ram = 1;
        s.cart_prg_ram_size = 8192;
        assert_eq!(Packing::of(&s).stride(), SIZE - 2048);
        s.cart_header_mirroring = MIR_FOUR_SCREEN;
        assert_eq!(Packing::of(&s).stride(), SIZE);
        for bits in 0..8 {
            assert_eq!(Packing(bits).stride() % 8, 0);
        }
    }

    #[test]
    fn pack_then_unpack_keeps_the_kept_regions_and_zeroes_the_rest() {
        let s = numbered();
        for bits in 0..8 {
            let p = Packing(bits);
            let mut buf = vec![0u8; p.stride()];
            p.pack(&s, &mut buf);
            let back = p.unpack(&buf);
            let (mut a, mut b) = ([0u8; SIZE], [0u8; SIZE]);
            s.to_bytes(&mut a);
            back.to_bytes(&mut b);
            for i in 0..SIZE {
                let kept = p.regions().any(|(x, y)| x <= i && i < y);
                assert_eq!(b[i], if kept { a[i] } else { 0 }, "packing {bits} byte {i}");
            }
            assert_eq!(p.keeps_everything_of(&s), bits == 7);
            assert!(p.keeps_everything_of(&back));
            assert_eq!(p.unpack_all(&p.pack_all(&[back, back])), vec![back, back]);
        }
    }

    #[test]
    fn the_ram_write_kernel_changes_one_byte_of_each_masked_envs_ram_in_every_packing() {
        let mut states = [numbered(), numbered(), numbered()];
        for (i, s) in states.iter_mut().enumerate() {
            s.ram[0x7FF] = i as u8; // the envs differ
        }
        let mask = [1u8, 0, 7]; // any nonzero byte masks
        for bits in 0..8 {
            let p = Packing(bits);
            for (addr, values) in [(0x000, None), (0x7FF, Some([0x101u32, 0x22, 0x33])), (0x3AB, Some([9, 9, 0xFF]))] {
                let mut packed = p.pack_all(&states);
                crate::launch::host_write_ram(
                    &mut packed,
                    p.stride(),
                    &mask,
                    values.as_ref().map(|v| &v[..]),
                    0xA5,
                    addr,
                );
                let mut want = p.unpack_all(&p.pack_all(&states));
                for (i, w) in want.iter_mut().enumerate().filter(|(i, _)| mask[*i] != 0) {
                    w.ram[addr] = values.map_or(0xA5, |v| v[i] as u8);
                }
                assert_eq!(p.unpack_all(&packed), want, "packing {bits} address {addr:#x}");
            }
        }
    }
}

//! Turning the PPU's palette indices into RGB.
//!
//! The 2C02 does not output RGB: it generates an NTSC signal directly from a 6-bit colour index
//! (4 bits of hue, 2 of luminance), so "the" NES palette is a measurement or a model of what a
//! TV shows. [`NTSC_RGB`] is the widely used 2C02 palette with the grey `$00` = (84, 84, 84) and
//! blue `$01` = (0, 30, 116), as listed on the NESdev wiki's "PPU palettes" page and used by
//! many emulators (e.g. javidx9's olcNES, cynes). Columns `$0E`/`$0F` and `$1D`-`$1F` are black.
//!
//! Colour emphasis (PPUMASK bits 5-7) is not applied here: the PPU reports it separately
//! ([`crate::ppu::Ppu::emphasis`]).

/// RGB of each of the 64 colour indices.
#[rustfmt::skip]
pub const NTSC_RGB: [[u8; 3]; 64] = [
    // $00-$0F
    [84, 84, 84], [0, 30, 116], [8, 16, 144], [48, 0, 136],
    [68, 0, 100], [92, 0, 48], [84, 4, 0], [60, 24, 0],
    [32, 42, 0], [8, 58, 0], [0, 64, 0], [0, 60, 0],
    [0, 50, 60], [0, 0, 0], [0, 0, 0], [0, 0, 0],
    // $10-$1F
    [152, 150, 152], [8, 76, 196], [48, 50, 236], [92, 30, 228],
    [136, 20, 176], [160, 20, 100], [152, 34, 32], [120, 60, 0],
    [84, 90, 0], [40, 114, 0], [8, 124, 0], [0, 118, 40],
    [0, 102, 120], [0, 0, 0], [0, 0, 0], [0, 0, 0],
    // $20-$2F
    [236, 238, 236], [76, 154, 236], [120, 124, 236], [176, 98, 236],
    [228, 84, 236], [236, 88, 180], [236, 106, 100], [212, 136, 32],
    [160, 170, 0], [116, 196, 0], [76, 208, 32], [56, 204, 108],
    [56, 180, 204], [60, 60, 60], [0, 0, 0], [0, 0, 0],
    // $30-$3F
    [236, 238, 236], [168, 204, 236], [188, 188, 236], [212, 178, 236],
    [236, 174, 236], [236, 174, 212], [236, 180, 176], [228, 196, 144],
    [204, 210, 120], [180, 222, 120], [168, 226, 144], [152, 226, 180],
    [160, 214, 228], [160, 162, 160], [0, 0, 0], [0, 0, 0],
];

/// [`NTSC_RGB`] as little-endian words (R in the low byte, 0 in the high one), so that eight
/// pixels' 24 bytes can be assembled in three 8-byte words.
const NTSC_RGB32: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut i = 0;
    while i < 64 {
        let [r, g, b] = NTSC_RGB[i];
        t[i] = r as u32 | (g as u32) << 8 | (b as u32) << 16;
        i += 1;
    }
    t
};

/// Converts palette indices (as in [`crate::ppu::Ppu::pixels`]) to packed RGB, 3 bytes per
/// pixel. Indices are taken modulo 64; converts `min(indices.len(), out.len() / 3)` pixels.
/// Eight pixels at a time, as three 8-byte stores (perf-notes #33: ~5 instructions a pixel,
/// 9 with a 3-byte copy each).
pub fn indices_to_rgb(indices: &[u8], out: &mut [u8]) {
    let n = indices.len().min(out.len() / 3);
    let (indices, out) = (&indices[..n], &mut out[..n * 3]);
    let rgb = |px: u8| NTSC_RGB32[(px & 0x3f) as usize] as u64;
    // `chunks_exact` plus array conversions, not `as_chunks` (Rust 1.88, above the MSRV):
    // with the lengths fixed the stores need no bounds checks.
    let mut octs_out = out.chunks_exact_mut(24);
    for (px, dst) in indices.chunks_exact(8).zip(&mut octs_out) {
        let px: &[u8; 8] = px.try_into().unwrap();
        let dst: &mut [u8; 24] = dst.try_into().unwrap();
        let c: [u64; 8] = core::array::from_fn(|i| rgb(px[i]));
        dst[0..8].copy_from_slice(&(c[0] | c[1] << 24 | c[2] << 48).to_le_bytes());
        let mid = c[2] >> 16 | c[3] << 8 | c[4] << 32 | c[5] << 56;
        dst[8..16].copy_from_slice(&mid.to_le_bytes());
        dst[16..24].copy_from_slice(&(c[5] >> 8 | c[6] << 16 | c[7] << 40).to_le_bytes());
    }
    let rest_in = &indices[n / 8 * 8..];
    for (px, dst) in rest_in.iter().zip(octs_out.into_remainder().chunks_exact_mut(3)) {
        dst.copy_from_slice(&NTSC_RGB[(*px & 0x3f) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_0f_is_black_and_30_is_near_white() {
        assert_eq!(NTSC_RGB[0x0f], [0, 0, 0]);
        assert!(NTSC_RGB[0x30].iter().all(|&c| c > 200));
    }

    #[test]
    fn indices_to_rgb_matches_the_table_for_every_length_and_ignores_bits_6_7() {
        let indices: [u8; 11] = [0x01, 0x20, 0x7f, 0xc5, 0x3d, 0x16, 0x00, 0x2a, 0x30, 0x11, 0x0f];
        for n in 0..=indices.len() {
            // An output buffer one byte short of n pixels converts n - 1.
            for extra in [0usize, 1, 5] {
                let len = (n * 3 + extra).saturating_sub(1);
                let mut out = [0xeeu8; 40];
                indices_to_rgb(&indices[..n], &mut out[..len]);
                let done = n.min(len / 3);
                for (i, px) in indices[..done].iter().enumerate() {
                    let want = NTSC_RGB[(px & 0x3f) as usize];
                    assert_eq!(out[i * 3..i * 3 + 3], want, "n {n} len {len} px {i}");
                }
                let untouched = out[done * 3..].iter().all(|&b| b == 0xee);
                assert!(untouched, "n {n} len {len}: wrote past the end");
            }
        }
    }

    #[test]
    fn indices_to_rgb_writes_three_bytes_per_pixel() {
        let mut out = [0u8; 6];
        indices_to_rgb(&[0x01, 0x20], &mut out);
        assert_eq!(out, [0, 30, 116, 236, 238, 236]);
    }
}

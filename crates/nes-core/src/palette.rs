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

/// Converts palette indices (as in [`crate::ppu::Ppu::pixels`]) to packed RGB, 3 bytes per
/// pixel. Indices are taken modulo 64; converts `min(indices.len(), out.len() / 3)` pixels.
pub fn indices_to_rgb(indices: &[u8], out: &mut [u8]) {
    for (px, rgb) in indices.iter().zip(out.chunks_exact_mut(3)) {
        rgb.copy_from_slice(&NTSC_RGB[(*px & 0x3f) as usize]);
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
    fn indices_to_rgb_writes_three_bytes_per_pixel() {
        let mut out = [0u8; 6];
        indices_to_rgb(&[0x01, 0x20], &mut out);
        assert_eq!(out, [0, 30, 116, 236, 238, 236]);
    }
}

//! The observations made from the palette-index pictures on the device: full-size RGB
//! (`obs="rgb"`) and 84x84 grayscale (`obs="gray84"`). Their tables, and the CPU run of the same
//! C++ code the GPU runs (kernels/picture.cuh), so both backends give the same bytes.

use crate::{launch, Error, PIXELS_PER_ENV};

/// Output side of the grayscale picture.
pub const GRAY_SIZE: usize = 84;
/// Bytes of one env's grayscale picture.
pub const GRAY_PIXELS: usize = GRAY_SIZE * GRAY_SIZE;
const ROW_TAPS: usize = 4; // ceil(240 / 84) + 1
const COL_TAPS: usize = 5; // ceil(256 / 84) + 1
/// BT.601 luma weights (what OpenCV's RGB2GRAY and gymnasium's AtariPreprocessing use).
pub const LUMA: [f64; 3] = [0.299, 0.587, 0.114];

/// The tables of `kernels/picture.cuh` (same layout: `#[repr(C)]`, sizes checked there and in
/// a test here).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrayTables {
    /// Luma of each palette index (`nes_core::palette::NTSC_RGB`).
    pub lut: [f32; 64],
    pub row_idx: [u32; GRAY_SIZE * ROW_TAPS],
    pub row_w: [f32; GRAY_SIZE * ROW_TAPS],
    pub col_idx: [u32; GRAY_SIZE * COL_TAPS],
    pub col_w: [f32; GRAY_SIZE * COL_TAPS],
}

impl GrayTables {
    pub fn new() -> GrayTables {
        let mut lut = [0f32; 64];
        for (l, rgb) in lut.iter_mut().zip(nes_core::palette::NTSC_RGB.iter()) {
            *l = (rgb[0] as f64 * LUMA[0] + rgb[1] as f64 * LUMA[1] + rgb[2] as f64 * LUMA[2]) as f32;
        }
        let (row_idx, row_w) = area_taps::<{ GRAY_SIZE * ROW_TAPS }>(240, ROW_TAPS);
        let (col_idx, col_w) = area_taps::<{ GRAY_SIZE * COL_TAPS }>(256, COL_TAPS);
        GrayTables { lut, row_idx, row_w, col_idx, col_w }
    }
}

impl Default for GrayTables {
    fn default() -> Self {
        GrayTables::new()
    }
}

/// Bytes of one env's RGB picture (240 x 256 x 3).
pub const RGB_BYTES: usize = PIXELS_PER_ENV * 3;

/// kernels/picture.cuh's `RgbTable`: palette index i's red | green << 8 | blue << 16.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RgbTable {
    pub rgb: [u32; 64],
}

impl RgbTable {
    pub fn new() -> RgbTable {
        let mut rgb = [0u32; 64];
        for (w, c) in rgb.iter_mut().zip(nes_core::palette::NTSC_RGB.iter()) {
            *w = c[0] as u32 | (c[1] as u32) << 8 | (c[2] as u32) << 16;
        }
        RgbTable { rgb }
    }
}

impl Default for RgbTable {
    fn default() -> Self {
        RgbTable::new()
    }
}

/// `pixels` (envs x 240 x 256 palette indices) to `out` (envs x 240 x 256 x 3) through the host
/// build of `nesle_rgb`: the kernel's code, checked against nes-core's palette by the tests.
pub fn rgb(pixels: &[u8], out: &mut [u8]) -> Result<(), Error> {
    if pixels.len() % PIXELS_PER_ENV != 0 || out.len() != pixels.len() * 3 {
        return Err(Error::BadArgument(format!(
            "rgb: {} picture bytes and {} output bytes are not n x 240 x 256 and n x 240 x 256 x 3",
            pixels.len(),
            out.len()
        )));
    }
    launch::host_rgb(pixels, &RgbTable::new(), out);
    Ok(())
}

/// Area averaging from `src` pixels to 84 as taps: output i is `sum_k w[i][k] * in[idx[i][k]]`
/// over the source pixels covering `[i, i+1) * src/84`, weighted by their overlap; unused taps
/// have weight 0 (and index 0).
fn area_taps<const N: usize>(src: usize, taps: usize) -> ([u32; N], [f32; N]) {
    let scale = src as f64 / GRAY_SIZE as f64;
    let (mut idx, mut w) = ([0u32; N], [0f32; N]);
    for i in 0..GRAY_SIZE {
        let (lo, hi) = (i as f64 * scale, (i + 1) as f64 * scale);
        let first = lo.floor() as usize;
        let last = (hi.ceil() as usize).min(src);
        for (k, j) in (first..last).enumerate() {
            idx[i * taps + k] = j as u32;
            w[i * taps + k] = ((hi.min(j as f64 + 1.0) - lo.max(j as f64)) / scale) as f32;
        }
    }
    (idx, w)
}

/// `pixels` (envs x 240 x 256 palette indices) to `out` (envs x 84 x 84), on the CPU.
pub fn gray84(pixels: &[u8], out: &mut [u8]) -> Result<(), Error> {
    if pixels.len() % PIXELS_PER_ENV != 0 || out.len() != pixels.len() / PIXELS_PER_ENV * GRAY_PIXELS {
        return Err(Error::BadArgument(format!(
            "gray84: {} picture bytes and {} output bytes are not n x 240 x 256 and n x 84 x 84",
            pixels.len(),
            out.len()
        )));
    }
    launch::host_gray84(pixels, &GrayTables::new(), out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_match_the_c_layout_and_weights_sum_to_one() {
        assert_eq!(std::mem::size_of::<GrayTables>(), 4 * (64 + 2 * GRAY_SIZE * (ROW_TAPS + COL_TAPS)));
        let t = GrayTables::new();
        for (w, taps) in [(&t.row_w[..], ROW_TAPS), (&t.col_w[..], COL_TAPS)] {
            for row in w.chunks(taps) {
                assert!((row.iter().map(|&x| x as f64).sum::<f64>() - 1.0).abs() < 1e-6);
            }
        }
        assert_eq!(t.lut[0x0f], 0.0);
        assert!((t.lut[0x30] - 237.174).abs() < 1e-3); // (236, 238, 236)
    }

    /// Output pixel (oy, ox) as the sum over its 5 x 4 taps, pixel by pixel (the kernels' first
    /// form): the two-pass kernels must give these bytes exactly.
    fn gray84_by_taps(t: &GrayTables, px: &[u8], oy: usize, ox: usize) -> u8 {
        let mut out = 0f32;
        for j in 0..COL_TAPS {
            let x = t.col_idx[ox * COL_TAPS + j] as usize;
            let mut row = 0f32;
            for k in 0..ROW_TAPS {
                let y = t.row_idx[oy * ROW_TAPS + k] as usize;
                row += t.row_w[oy * ROW_TAPS + k] * t.lut[(px[y * 256 + x] & 63) as usize];
            }
            out += t.col_w[ox * COL_TAPS + j] * row;
        }
        out.round_ties_even().clamp(0.0, 255.0) as u8
    }

    #[test]
    fn the_two_passes_give_the_bytes_of_the_sum_over_taps() {
        // Noise, and noise over a few palette entries (many ties between neighbours).
        let mut seed = 0x2545_f491u32;
        let mut px = vec![0u8; 3 * PIXELS_PER_ENV];
        for (i, p) in px.iter_mut().enumerate() {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            *p = if i < 2 * PIXELS_PER_ENV { seed as u8 } else { [0x0f, 0x30, 0x21, 0x16][(seed >> 7) as usize % 4] };
        }
        let mut out = vec![0u8; 3 * GRAY_PIXELS];
        gray84(&px, &mut out).unwrap();
        let t = GrayTables::new();
        for (env, (pic, got)) in px.chunks(PIXELS_PER_ENV).zip(out.chunks(GRAY_PIXELS)).enumerate() {
            for oy in 0..GRAY_SIZE {
                for ox in 0..GRAY_SIZE {
                    assert_eq!(
                        got[oy * GRAY_SIZE + ox],
                        gray84_by_taps(&t, pic, oy, ox),
                        "env {env} pixel ({oy}, {ox})"
                    );
                }
            }
        }
    }

    #[test]
    fn a_flat_picture_stays_flat_and_a_bad_size_is_an_error() {
        let px = vec![0x30u8; 2 * PIXELS_PER_ENV];
        let mut out = vec![0u8; 2 * GRAY_PIXELS];
        gray84(&px, &mut out).unwrap();
        assert!(out.iter().all(|&v| v == 237));
        assert!(gray84(&px[1..], &mut out).is_err());
    }

    #[test]
    fn the_rgb_kernel_code_gives_nes_cores_colours() {
        assert_eq!(std::mem::size_of::<RgbTable>(), 256);
        // Every index in every position of a 4-pixel group, and the top two bits set (the
        // kernels read an index's low 6 bits, as the palette lookups everywhere do).
        let px: Vec<u8> = (0..2 * PIXELS_PER_ENV).map(|i| ((i * 7 + i / 256) % 256) as u8).collect();
        let mut out = vec![0u8; 2 * RGB_BYTES];
        rgb(&px, &mut out).unwrap();
        for (i, (&p, got)) in px.iter().zip(out.chunks(3)).enumerate() {
            assert_eq!(got, &nes_core::palette::NTSC_RGB[(p & 63) as usize][..], "pixel {i} (index {p:#04x})");
        }
        let mut short = vec![0u8; 2 * RGB_BYTES - 1];
        assert!(rgb(&px, &mut short).is_err());
        assert!(rgb(&px[1..], &mut out).is_err());
    }
}

//! `nesle._native`: the Python bindings of nesle, and nothing else.
//!
//! This crate only translates: NumPy arrays and `bytes` in, NumPy arrays and `bytes` out, Rust
//! errors to Python exceptions (all in the `error` module). Emulation lives in `nes-core`; environments,
//! rewards and ROM files live in the pure-Python package `python/nesle`. The module is private
//! (`nesle._native`); its contract is the stub `python/nesle/_native.pyi`, which
//! `tests/python/test_native_stub.py` checks against the built module.
//!
//! Every batch call releases the GIL (`Python::detach`). `CpuBatch` fans out over consoles with
//! rayon, so one Python thread drives all cores; `CudaBatch` (module `cuda`) drives nes-cuda's
//! `Batch` on one GPU, and its device buffers cross to torch zero-copy through DLPack (module
//! `dlpack`, the crate's only `unsafe` code).

mod batch;
mod cuda;
mod dlpack;
mod error;

use nes_core::cart::{Header, Mirroring};
use nes_cuda::picture::{GRAY_PIXELS, GRAY_SIZE};
use numpy::PyArrayMethods;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

/// The NES picture: 256 x 240 pixels, one palette index (0..63) each.
pub const WIDTH: usize = 256;
pub const HEIGHT: usize = 240;
/// The console's internal work RAM ($0000-$07FF).
pub const RAM_SIZE: usize = 2048;

/// Parse an iNES / NES 2.0 header and return what it declares.
///
/// Raises `nesle.RomError` for anything `CpuBatch` would refuse (bad magic, truncated file,
/// unsupported mapper or memory size).
#[pyfunction]
fn rom_info<'py>(py: Python<'py>, rom: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let h = Header::parse(rom).map_err(error::rom_error)?;
    let d = PyDict::new(py);
    d.set_item("mapper", h.mapper)?;
    d.set_item("submapper", h.submapper)?;
    d.set_item("prg_rom", h.prg_rom)?;
    d.set_item("chr_rom", h.chr_rom)?;
    d.set_item("prg_ram", h.prg_ram)?;
    d.set_item("chr_ram", h.chr_ram)?;
    let mirroring = match h.mirroring {
        Mirroring::Horizontal => "horizontal",
        Mirroring::Vertical => "vertical",
        Mirroring::SingleLow => "single-low",
        Mirroring::SingleHigh => "single-high",
        Mirroring::FourScreen => "four-screen",
    };
    d.set_item("mirroring", mirroring)?;
    d.set_item("battery", h.battery)?;
    d.set_item("trainer", h.trainer)?;
    d.set_item("nes2", h.nes2)?;
    Ok(d)
}

/// The NTSC palette nes-core renders with, as a (64, 3) uint8 array of RGB.
#[pyfunction]
fn palette<'py>(py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<u8>>> {
    let flat: Vec<u8> = nes_core::palette::NTSC_RGB.iter().flatten().copied().collect();
    batch::to_numpy(py, flat, [64, 3])
}

/// 84x84 grayscale of palette-index pictures (`obs="gray84"`: BT.601 luma, area averaged):
/// `pixels` a (N, 240, 256) uint8 array; returns a (N, 84, 84) uint8 array, new or `out`
/// filled in place. `CudaBatch.gray84` runs the same code on the GPU, to the same bytes.
#[pyfunction]
#[pyo3(signature = (pixels, *, out = None))]
fn gray84<'py>(
    py: Python<'py>,
    pixels: &Bound<'py, PyAny>,
    out: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let pixels = pixels
        .cast::<numpy::PyArrayDyn<u8>>()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "pixels must be a numpy.ndarray of dtype uint8 and shape (N, {HEIGHT}, {WIDTH}), \
                 got {}",
                batch::describe(pixels)
            ))
        })?
        .try_readonly()
        .map_err(|e| PyValueError::new_err(format!("pixels: {e}")))?;
    let shape = pixels.as_array().shape().to_vec();
    if shape.len() != 3 || shape[1] != HEIGHT || shape[2] != WIDTH {
        return Err(PyValueError::new_err(format!("pixels must have shape (N, {HEIGHT}, {WIDTH}), got {shape:?}")));
    }
    let n = shape[0];
    let owned: Vec<u8>;
    let src: &[u8] = match pixels.as_slice() {
        Ok(s) => s,
        Err(_) => {
            owned = pixels.as_array().iter().copied().collect();
            &owned
        }
    };
    // The kernel's tables hold 64 colours; it would wrap a larger index silently.
    if let Some(bad) = py.detach(|| src.par_iter().copied().find_any(|&v| v >= 64)) {
        return Err(PyValueError::new_err(format!("pixels are palette indices 0..63, got a pixel of {bad}")));
    }
    batch::fill_out(py, out, &[n, GRAY_SIZE, GRAY_SIZE], |dst| {
        py.detach(|| {
            // A few pictures per task: each is ~140k multiply-adds.
            src.par_chunks(8 * HEIGHT * WIDTH)
                .zip(dst.par_chunks_mut(8 * GRAY_PIXELS))
                .try_for_each(|(s, d)| nes_cuda::picture::gray84(s, d))
        })
        .map_err(error::cuda_error)
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("RomError", py.get_type::<error::RomError>())?;
    m.add("StateError", py.get_type::<error::StateError>())?;
    m.add("WIDTH", WIDTH)?;
    m.add("HEIGHT", HEIGHT)?;
    m.add("RAM_SIZE", RAM_SIZE)?;
    m.add("REGROUP_EVERY", nes_cuda::REGROUP_EVERY)?;
    m.add("BackendUnavailableError", py.get_type::<error::BackendUnavailableError>())?;
    m.add_class::<batch::CpuBatch>()?;
    m.add_class::<cuda::CudaBatch>()?;
    m.add_class::<dlpack::DLPackView>()?;
    m.add_function(wrap_pyfunction!(cuda::cuda_available, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::_host_view, m)?)?;
    m.add_function(wrap_pyfunction!(rom_info, m)?)?;
    m.add_function(wrap_pyfunction!(palette, m)?)?;
    m.add_function(wrap_pyfunction!(gray84, m)?)?;
    Ok(())
}

//! The one mapping from Rust errors to Python exceptions.
//!
//! - `nes_core::RomError`   -> `nesle.RomError`   (a `ValueError`)
//! - `nes_core::StateError` -> `nesle.StateError` (a `ValueError`)
//! - bad arguments          -> `TypeError` (wrong type/dtype), `ValueError` (wrong shape/value),
//!   `IndexError` (environment index out of range)
//! - `nes_cuda::Error`: no kernels in this build / no driver / no GPU -> `nesle.BackendUnavailableError`
//!   (a `RuntimeError`); the batch does not fit in GPU memory -> `MemoryError`; a failed CUDA
//!   call -> `RuntimeError`; ROM, state and argument errors as above
//! - a panic inside nes-core -> `RuntimeError`, and the batch refuses further calls: a panic is a
//!   bug, and the consoles may be half-way through a frame. No panic ever crosses the FFI.

use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyTimeoutError, PyValueError};
use pyo3::PyErr;

create_exception!(
    nesle,
    RomError,
    PyValueError,
    "The ROM file was refused: not iNES, truncated, or an unsupported mapper or size."
);
create_exception!(
    nesle,
    StateError,
    PyValueError,
    "A save state was refused: corrupted, from another ROM, or from another format version."
);

create_exception!(
    nesle,
    BackendUnavailableError,
    PyRuntimeError,
    "The requested backend is not in this build of nesle, or has no device to run on."
);

pub fn cuda_error(e: nes_cuda::Error) -> PyErr {
    use nes_cuda::Error as E;
    match e {
        E::Rom(e) => rom_error(e),
        E::State(e) => state_error(e),
        E::NoKernels | E::NoDevice(_) => BackendUnavailableError::new_err(format!("CUDA backend unavailable: {e}")),
        // The picture buffer's hint only where the size counted one.
        E::OutOfMemory { pixels: true, .. } => PyMemoryError::new_err(format!(
            "{e}: use fewer environments (or render=False: pixels take 60 KiB per environment)"
        )),
        E::OutOfMemory { .. } => PyMemoryError::new_err(format!("{e}: use fewer environments")),
        E::BadArgument(_) => PyValueError::new_err(e.to_string()),
        E::Cuda(_) => PyRuntimeError::new_err(e.to_string()),
        E::Timeout { .. } => PyTimeoutError::new_err(e.to_string()),
        E::HostMemory { .. } => PyMemoryError::new_err(e.to_string()),
    }
}

pub fn rom_error(e: nes_core::RomError) -> PyErr {
    RomError::new_err(e.to_string())
}

pub fn state_error(e: nes_core::StateError) -> PyErr {
    StateError::new_err(e.to_string())
}

/// Turns a caught panic payload into a `RuntimeError`.
pub fn panic_error(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    };
    PyRuntimeError::new_err(format!(
        "nes-core panicked: {msg}. This is a bug in nesle; this batch can no longer be used"
    ))
}

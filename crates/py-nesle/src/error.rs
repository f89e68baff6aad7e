//! The one mapping from Rust errors to Python exceptions.
//!
//! - `nes_core::RomError`   -> `nesle.RomError`   (a `ValueError`)
//! - `nes_core::StateError` -> `nesle.StateError` (a `ValueError`)
//! - bad arguments          -> `TypeError` (wrong type/dtype), `ValueError` (wrong shape/value),
//!   `IndexError` (environment index out of range)
//! - a panic inside nes-core -> `RuntimeError`, and the batch refuses further calls: a panic is a
//!   bug, and the consoles may be half-way through a frame. No panic ever crosses the FFI.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
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

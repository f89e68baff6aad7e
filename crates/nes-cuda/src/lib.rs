//! nes-cuda: batches of NES consoles as hand-written CUDA kernels (see `kernels/`).
//!
//! The kernels implement exactly the emulation model of `nes-core`, which is the parity
//! oracle. This crate will load them through cudarc with dynamic loading, so that building
//! or importing it needs no CUDA toolkit and a machine without a GPU gets a clear error.
//!
//! Status: the kernels are not written yet; [`Error::NoDevice`] is what every constructor
//! returns until they are.

/// Errors of the CUDA backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No CUDA driver or GPU is available, or the backend is not built yet.
    NoDevice(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NoDevice(why) => write!(f, "CUDA backend unavailable: {why}"),
        }
    }
}

impl std::error::Error for Error {}

/// Whether a CUDA backend can be used on this machine.
pub fn available() -> Result<(), Error> {
    Err(Error::NoDevice("the CUDA kernels are not part of this build yet".into()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_kernels_the_backend_reports_itself_unavailable() {
        assert!(super::available().is_err());
    }
}

//! The one error type of the CUDA backend.

/// Everything that can go wrong in nes-cuda. Nothing in this crate panics or exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The ROM could not be parsed or uses an unsupported board.
    Rom(nes_core::RomError),
    /// This build has no GPU kernels (nvcc was missing at build time).
    NoKernels,
    /// No CUDA driver (libcuda) on this machine, or no GPU with that index.
    NoDevice(String),
    /// The batch does not fit in the GPU's free memory; `pixels`: its size counts a picture
    /// buffer (`BatchConfig::pixels`).
    OutOfMemory { needed: usize, free: usize, n_envs: usize, pixels: bool },
    /// A call's arguments do not match the batch (lengths, indices).
    BadArgument(String),
    /// A state could not be converted (another ROM, impossible values).
    State(nes_core::StateError),
    /// A CUDA driver call failed.
    Cuda(String),
    /// The GPU did not finish the queued work within `NESLE_SYNC_TIMEOUT` milliseconds.
    Timeout { millis: u64 },
    /// A host buffer for data copied from the GPU could not be allocated.
    HostMemory { bytes: usize },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Rom(e) => write!(f, "bad ROM: {e}"),
            Error::NoKernels => write!(
                f,
                "this build of nes-cuda has no GPU kernels: nvcc was not found when it was built \
                 (pip install nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
                 nvidia-cuda-runtime==13.0.96, or set NESLE_NVCC, then rebuild)"
            ),
            Error::NoDevice(why) => write!(f, "no CUDA device: {why}"),
            Error::OutOfMemory { needed, free, n_envs, .. } => write!(
                f,
                "{n_envs} envs need {:.1} MiB of GPU memory but only {:.1} MiB are free",
                *needed as f64 / 1048576.0,
                *free as f64 / 1048576.0
            ),
            Error::BadArgument(why) => write!(f, "bad argument: {why}"),
            Error::State(e) => write!(f, "bad state: {e}"),
            Error::Cuda(why) => write!(f, "CUDA error: {why}"),
            Error::Timeout { millis } => write!(
                f,
                "the GPU did not finish within {:.1} s (NESLE_SYNC_TIMEOUT): a kernel may be stuck; \
                 this batch, and CUDA work of this process, cannot be trusted any more",
                *millis as f64 / 1000.0
            ),
            Error::HostMemory { bytes } => {
                write!(
                    f,
                    "could not allocate {:.1} MiB of host memory for data from the GPU",
                    *bytes as f64 / 1048576.0
                )
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<nes_core::RomError> for Error {
    fn from(e: nes_core::RomError) -> Self {
        Error::Rom(e)
    }
}

impl From<nes_core::StateError> for Error {
    fn from(e: nes_core::StateError) -> Self {
        Error::State(e)
    }
}

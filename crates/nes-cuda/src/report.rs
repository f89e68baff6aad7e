//! What a batch runs on and what its step launch takes, for benchmark records: the issue's
//! "memory per env, registers per thread and occupancy", read from the driver for the kernels
//! that actually loaded rather than copied from a profile (`Batch::report`, `nesle bench`).

/// The step kernel (`nesle_step`) as loaded, and its launch for a batch's next step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepLaunch {
    /// Registers a thread.
    pub registers: u32,
    /// Local memory a thread, in bytes: mostly the env's unpacked state while it runs.
    pub local_bytes: u32,
    /// Threads a block for this batch's env count (and whether its envs run in lockstep).
    pub block: u32,
    /// Blocks of that size one SM holds at once (the driver's occupancy calculator).
    pub blocks_per_sm: u32,
    /// The most warps one SM holds.
    pub max_warps_per_sm: u32,
}

impl StepLaunch {
    /// Warps resident on one SM when the grid fills it.
    pub fn warps_per_sm(&self) -> u32 {
        self.blocks_per_sm * self.block.div_ceil(32)
    }

    /// Resident warps over the most an SM holds: the theoretical occupancy, an upper bound on
    /// what a profiler reports as achieved (a grid smaller than the GPU, or blocks ending at
    /// different times, leave it lower).
    pub fn occupancy(&self) -> f64 {
        if self.max_warps_per_sm == 0 {
            return 0.0;
        }
        f64::from(self.warps_per_sm()) / f64::from(self.max_warps_per_sm)
    }
}

/// A batch's GPU, kernels and device memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceReport {
    /// The GPU's name, as the driver gives it.
    pub device: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    pub sms: u32,
    /// The driver's CUDA version as cuDriverGetVersion gives it (12040 = 12.4).
    pub driver: i32,
    /// Which kernel image loaded (the fatbin, an NVRTC cubin or PTX, or a run-time compile).
    pub image: String,
    pub step: StepLaunch,
    /// Device memory the batch's buffers hold, in bytes: states, actions, the ROM, pictures and
    /// drawing buffers when on, the sort's buffers, the start-state bank.
    pub device_bytes: usize,
    pub n_envs: usize,
}

impl DeviceReport {
    /// Device memory an env, the batch's fixed buffers (the ROM, tables) shared out.
    pub fn bytes_per_env(&self) -> usize {
        self.device_bytes / self.n_envs.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::StepLaunch;

    #[test]
    fn occupancy_is_the_resident_warps_over_the_sms_limit() {
        // 128 registers a thread: one block of 512 an SM on an H200, 16 of its 64 warps.
        let big =
            StepLaunch { registers: 128, local_bytes: 23_176, block: 512, blocks_per_sm: 1, max_warps_per_sm: 64 };
        assert_eq!(big.warps_per_sm(), 16);
        assert_eq!(big.occupancy(), 0.25);
        // Four blocks of 128 hold the same warps.
        let small = StepLaunch { block: 128, blocks_per_sm: 4, ..big.clone() };
        assert_eq!((small.warps_per_sm(), small.occupancy()), (16, 0.25));
        // A block that is not a whole number of warps still takes whole warps.
        assert_eq!(StepLaunch { block: 100, blocks_per_sm: 2, ..big.clone() }.warps_per_sm(), 8);
        assert_eq!(StepLaunch { max_warps_per_sm: 0, ..big }.occupancy(), 0.0);
    }
}

//! nes-cuda: batches of NES consoles as CUDA kernels, one thread per console.
//!
//! The kernels (`kernels/*.cuh`, one file per chip) mirror nes-core function by function and
//! must agree with it bit for bit. Each console's whole state is one
//! [`nes_core::flat::FlatState`], a `#[repr(C)]` struct whose C header is generated from Rust
//! ([`header`]). The same kernel sources are compiled twice by build.rs: as host C++ for the
//! parity tests that run in CI without a GPU ([`host`]), and by nvcc into an embedded fatbin
//! that [`Batch`] launches through cudarc (dynamically loaded: building or importing needs
//! no CUDA toolkit, and a machine without a GPU gets [`Error::NoDevice`]). A build made without
//! nvcc embeds no kernels: its `Batch` gets [`Error::NoKernels`] on any machine, unless
//! `NESLE_KERNEL_SOURCE` points the NVRTC fallback at the kernel sources.
//!
//! All unsafe code and every CUDA call live in the private `launch` module.

mod batch;
mod entry_points;
mod error;
pub mod header;
mod launch;
pub mod packed;
pub mod picture;
mod report;
mod rom;

pub use batch::{
    regroup_order, Batch, BatchConfig, DevicePointers, LinesPolicy, SortPolicy, LINES_PAUSE, LINES_WINDOW,
    REGROUP_EVERY, SORT_CALM_MAX,
};
pub use cudarc::driver::CudaSlice;
pub use error::Error;
pub use launch::{check_aligned, host_zeros, Fence, OUT_ALIGN};
pub use nes_core::flat::{FlatState, FLAT_STATE_SIZE};
pub use report::{DeviceReport, StepLaunch};
pub use rom::RomImage;

/// An env order (`Batch::set_order`, `host::step_in_order`) must name every env once.
fn check_order(order: &[u32], n_envs: usize) -> Result<(), Error> {
    if order.len() != n_envs {
        return Err(Error::BadArgument(format!("an order of {} entries for {n_envs} envs", order.len())));
    }
    let mut seen = vec![false; n_envs];
    for &e in order {
        match seen.get_mut(e as usize) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(Error::BadArgument(format!(
                    "the order is not a permutation of the envs: {e} is out of range or repeated"
                )))
            }
        }
    }
    Ok(())
}

/// Picture size of the optional pixel output: 256x240 palette indices per env.
pub const PIXELS_PER_ENV: usize = 256 * 240;

/// The kernels compiled as host C++: the CPU twin of [`Batch::step`], for parity tests.
pub mod host {
    use crate::{launch, Error, FlatState, RomImage, PIXELS_PER_ENV};

    /// For each env: pad-0 buttons = `actions[env]`, then `frames` frames, exactly as the GPU
    /// kernel `nesle_step` does. `pixels`, if given, receives each env's last frame.
    pub fn step(
        states: &mut [FlatState],
        rom: &RomImage,
        actions: &[u8],
        frames: u32,
        pixels: Option<&mut [u8]>,
    ) -> Result<(), Error> {
        let loaded = loaded_states(states, rom, actions)?;
        check_pixels(pixels.as_deref(), states.len())?;
        states.copy_from_slice(&loaded);
        // SAFETY: the states are what nes-core loads for `rom` (just made so).
        unsafe { step_unvalidated(states, rom, actions, frames, pixels) }
    }

    /// [`step`] on states taken as they are, for tests of what no loadable state reaches (the
    /// frame loop's guard on a PPU line that does not exist). The lengths are still checked.
    ///
    /// # Safety
    /// Every state must be of `rom`'s board with its banking maps inside `rom`'s images and its
    /// table indices (the APU's steps and rates) in range, as in any state nes-core loads; the
    /// C++ code indexes memory with them unchecked.
    pub unsafe fn step_unvalidated(
        states: &mut [FlatState],
        rom: &RomImage,
        actions: &[u8],
        frames: u32,
        pixels: Option<&mut [u8]>,
    ) -> Result<(), Error> {
        if actions.len() != states.len() {
            return Err(Error::BadArgument(format!("{} actions for {} envs", actions.len(), states.len())));
        }
        check_pixels(pixels.as_deref(), states.len())?;
        launch::host_step(states, rom, actions, None, frames, pixels, None);
        Ok(())
    }

    /// [`step`] with the envs run in `order` (a permutation of the env indices), as
    /// [`crate::Batch::set_order`] makes the GPU run them: the same results as `step`. `ran`
    /// receives each env's regrouping key, its instructions in its last frame << 16 | the PC
    /// that frame ended at ([`crate::Batch::sort_keys_to_host`]).
    pub fn step_in_order(
        states: &mut [FlatState],
        rom: &RomImage,
        actions: &[u8],
        order: &[u32],
        frames: u32,
        ran: &mut [u32],
    ) -> Result<(), Error> {
        crate::check_order(order, states.len())?;
        let loaded = loaded_states(states, rom, actions)?;
        if ran.len() != states.len() {
            return Err(Error::BadArgument(format!("{} instruction counts for {} envs", ran.len(), states.len())));
        }
        states.copy_from_slice(&loaded);
        launch::host_step(states, rom, actions, Some(order), frames, None, Some(ran));
        Ok(())
    }

    /// [`step`] for the envs where `mask[i]` only, as [`crate::Batch::step_masked`] runs them
    /// on the GPU (a slot each, in env order); the others, and their pictures, are not touched.
    pub fn step_masked(
        states: &mut [FlatState],
        rom: &RomImage,
        actions: &[u8],
        mask: &[bool],
        frames: u32,
        pixels: Option<&mut [u8]>,
    ) -> Result<(), Error> {
        if mask.len() != states.len() {
            return Err(Error::BadArgument(format!("a mask of {} for {} envs", mask.len(), states.len())));
        }
        let loaded = loaded_states(states, rom, actions)?;
        check_pixels(pixels.as_deref(), states.len())?;
        states.copy_from_slice(&loaded);
        let envs: Vec<u32> = (0..states.len() as u32).filter(|&i| mask[i as usize]).collect();
        if !envs.is_empty() {
            launch::host_step(states, rom, actions, Some(&envs), frames, pixels, None);
        }
        Ok(())
    }

    /// [`step`] with the last frame's picture drawn after it ran, line by line
    /// (kernels/lines.cuh), as `BatchConfig::draw_lines` makes the GPU draw it: the same states
    /// and pictures as `step`. With `gray`, every env's 84x84 picture made as
    /// `Batch::step_gray84` makes it (by the line renderer, then for the redrawn envs): the same
    /// bytes as [`crate::picture::gray84`] of the pictures. Returns how many envs were drawn line
    /// by line (the others' frames ran again, drawn as they ran).
    pub fn step_drawn_by_lines(
        states: &mut [FlatState],
        rom: &RomImage,
        actions: &[u8],
        frames: u32,
        pixels: &mut [u8],
        gray: Option<&mut [u8]>,
    ) -> Result<u32, Error> {
        let loaded = loaded_states(states, rom, actions)?;
        check_pixels(Some(pixels), states.len())?;
        if let Some(g) = &gray {
            if g.len() != states.len() * crate::picture::GRAY_PIXELS {
                return Err(Error::BadArgument(format!("84x84 buffer of {} bytes for {} envs", g.len(), states.len())));
            }
        }
        states.copy_from_slice(&loaded);
        if frames == 0 {
            // No frame runs: the pictures stay, and `gray` is made from them, as the batch does.
            if let Some(g) = gray {
                crate::picture::gray84(pixels, g)?;
            }
            return Ok(0);
        }
        Ok(launch::host_step_lines(states, rom, actions, frames, pixels, gray))
    }

    /// `dots` PPU dots of one console as the bus's catch-up runs them (in bulk where it can)
    /// or, with `one_by_one`, dot by dot: the kernels' PPU tests compare the two. `pixels`, if
    /// given, is one 256x240 picture that receives the dots drawn.
    pub fn ppu_run(
        state: &mut FlatState,
        rom: &RomImage,
        dots: u32,
        one_by_one: bool,
        pixels: Option<&mut [u8]>,
    ) -> Result<(), Error> {
        let loaded = loaded_states(std::slice::from_ref(state), rom, &[0])?;
        check_pixels(pixels.as_deref(), 1)?;
        *state = loaded[0];
        launch::host_ppu_run(state, rom, dots, one_by_one, pixels);
        Ok(())
    }

    /// One frame drawn twice: as the step kernel draws it and by replaying the PPU from the
    /// frame's logged accesses (kernels/replay.cuh). See `launch::host_replay_check`.
    pub fn replay_check(
        state: &mut FlatState,
        rom: &RomImage,
        reference: &mut [u8],
        replayed: &mut [u8],
    ) -> Result<i32, Error> {
        let loaded = loaded_states(std::slice::from_ref(state), rom, &[0])?;
        if reference.len() != PIXELS_PER_ENV || replayed.len() != PIXELS_PER_ENV {
            return Err(Error::BadArgument(format!(
                "picture buffers of {} and {} bytes for one env",
                reference.len(),
                replayed.len()
            )));
        }
        *state = loaded[0];
        Ok(launch::host_replay_check(state, rom, reference, replayed))
    }

    /// The number of dots from now within which the PPU's `$2002` bits (5-7) cannot change,
    /// as the kernels' bus trusts it to answer a read without catching the PPU up
    /// (`ppu_dots_to_status_change`): the kernels' PPU tests check it against ticking.
    pub fn status_bound(state: &FlatState, rom: &RomImage) -> Result<u32, Error> {
        let state = loaded_states(std::slice::from_ref(state), rom, &[0])?[0];
        Ok(launch::host_status_bound(&state, rom))
    }

    /// Each state as nes-core loads it (validated against `rom`, as [`crate::Batch`] loads
    /// states), or the first one's error: the C++ code trusts a state's banking maps to index
    /// inside the ROM, so a state nes-core refuses must never reach it. The callers write them
    /// back only once every argument has passed, so a refused call changes nothing.
    fn loaded_states(states: &[FlatState], rom: &RomImage, actions: &[u8]) -> Result<Vec<FlatState>, Error> {
        if actions.len() != states.len() {
            return Err(Error::BadArgument(format!("{} actions for {} envs", actions.len(), states.len())));
        }
        let Some(first) = states.first() else { return Ok(Vec::new()) };
        let packing = crate::packed::Packing::of(first);
        states.iter().map(|s| crate::batch::loadable(rom, packing, s)).collect()
    }

    fn check_pixels(pixels: Option<&[u8]>, n_envs: usize) -> Result<(), Error> {
        match pixels {
            Some(p) if p.len() != n_envs * PIXELS_PER_ENV => {
                Err(Error::BadArgument(format!("pixel buffer of {} bytes for {n_envs} envs", p.len())))
            }
            _ => Ok(()),
        }
    }

    /// One CPU step (an instruction, or an interrupt sequence) of one console: pinpoints the
    /// first diverging instruction when a frame-level parity check fails.
    pub fn cpu_step(state: &mut FlatState, rom: &RomImage) -> Result<(), Error> {
        let pad = state.pad_buttons[0];
        step(std::slice::from_mut(state), rom, &[pad], 0, None)?;
        launch::host_cpu_step(state, rom);
        Ok(())
    }

    /// `sizeof(FlatState)` as the C++ compiler sees it (must equal Rust's).
    pub fn c_state_size() -> usize {
        launch::host_state_size()
    }
}

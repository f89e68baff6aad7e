//! [`Batch`]: N consoles of one ROM on one GPU, stepped by the `nesle_step` kernel.
//!
//! Buffers stay on the device: states (one packed [`FlatState`] per env, see
//! [`crate::packed`]), actions, the optional picture buffer, the ROM, and an optional bank of
//! start states for masked resets. The host sees them only when asked (`states_to_host`,
//! `ram_to_host`, ...); zero-copy consumers get raw addresses from [`Batch::device_pointers`].

mod policies;
mod states;

pub use policies::{LinesPolicy, SortPolicy, LINES_PAUSE, LINES_WINDOW, SORT_CALM_MAX};

use crate::launch::{self, host_zeros, Fence, Gpu, LINES_REDRAW, LINE_LOG_BYTES, LINE_LOG_FLAGS_AT};
use crate::packed::Packing;
use crate::{DeviceReport, Error, FlatState, RomImage, PIXELS_PER_ENV};
use cudarc::driver::{CudaEvent, CudaSlice, PinnedHostSlice};

/// Threads in a warp: the kernel's unit of divergence.
const WARP: usize = 32;

/// How to build a [`Batch`].
#[derive(Debug, Clone, Copy)]
pub struct BatchConfig {
    /// CUDA device ordinal.
    pub device: usize,
    /// Allocate a 256x240 picture per env, written for the last frame of every step.
    pub pixels: bool,
    /// Before every `regroup_every`-th step, put the envs in order of their instructions in the
    /// last frame, as [`Batch::regroup`] does (0: never, and an order given with
    /// [`Batch::set_order`] stays). Results are the same in any order; only the speed changes
    /// (protocol B on an H200: +18.5% every 10 steps, +14% more every step; docs/kernel-notes.md
    /// #63, #66).
    pub regroup_every: u32,
    /// Sort on the device (kernels/order.cuh), queued on the stream with nothing for the host to
    /// wait on (the default); `false` reads the counts back and sorts on the host, which waits
    /// for the steps queued before it but keeps the envs' own order without an indirection
    /// when all counts are equal (protocol A). On the device, sorts that leave the order as it
    /// was make the batch skip the next ones for a while ([`SortPolicy`]).
    pub regroup_on_device: bool,
    /// A step that regroups (every `regroup_every`-th) regroups between its frames too (each
    /// frame is a launch of its own), when sorted on the device (the default; protocol B on an
    /// H200 +5.8%, kernel-notes #68).
    pub regroup_frames: bool,
    /// With pixels: run each step's last frame undrawn, then draw it line by line, a warp an
    /// env (kernels/lines.cuh; the default), instead of drawing it while it runs: the same
    /// pictures (a frame the line renderer does not model runs again, drawn as it runs, from a
    /// copy of the state before it). Costs 2,040 bytes and a copy of the state per env; protocol
    /// B + 84x84 gray on an H200 +79% (kernel-notes #74). A batch whose frames are mostly run
    /// again (a game that splits its screen mid-frame every frame) draws while running for a
    /// while instead ([`LinesPolicy`]).
    pub draw_lines: bool,
}

/// [`BatchConfig::regroup_every`]'s default: every step.
pub const REGROUP_EVERY: u32 = 1;

impl Default for BatchConfig {
    fn default() -> BatchConfig {
        BatchConfig {
            device: 0,
            pixels: false,
            regroup_every: REGROUP_EVERY,
            regroup_on_device: true,
            regroup_frames: true,
            draw_lines: true,
        }
    }
}

/// Raw device addresses of a batch's buffers, valid while the batch lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePointers {
    /// `n_envs` packed states of `state_size` bytes each (see [`crate::packed`]; CPU RAM sits at
    /// its FlatState offset in each).
    pub states: u64,
    pub state_size: usize,
    /// `n_envs` bytes: the buttons used by `step`.
    pub actions: u64,
    /// `n_envs * 256 * 240` palette indices, if the batch has pixels.
    pub pixels: Option<u64>,
    pub n_envs: usize,
}

/// N consoles of one ROM on one GPU.
#[derive(Debug)]
pub struct Batch {
    gpu: Gpu,
    rom: RomImage,
    n_envs: usize,
    /// How `states` (and the bank) hold each console: see [`crate::packed`].
    packing: Packing,
    states: CudaSlice<u8>,
    actions: CudaSlice<u8>,
    pixels: Option<CudaSlice<u8>>,
    prg: CudaSlice<u8>,
    /// The ROM's code words (kernels/quiet.cuh `cpu_code_word`), 4 bytes a PRG byte.
    code: CudaSlice<u8>,
    chr: CudaSlice<u8>,
    bank: Option<(CudaSlice<u8>, usize)>,
    mask: CudaSlice<u8>,
    pick: CudaSlice<u32>,
    /// `picture::GrayTables`, uploaded on the first `gray84`.
    gray_tables: Option<CudaSlice<u8>>,
    /// `picture::RgbTable`, uploaded on the first `rgb`.
    rgb_table: Option<CudaSlice<u8>>,
    /// The order the step kernel runs the envs in (`set_order`), if not their own.
    order: Option<CudaSlice<u32>>,
    /// Each env's regrouping key after the last step (`sort_keys_to_host`): its instructions in
    /// the last frame << 16 | the PC that frame ended at.
    ran: CudaSlice<u32>,
    /// `BatchConfig::regroup_every`, and the steps run so far.
    regroup_every: u32,
    steps: u64,
    /// `BatchConfig::regroup_on_device`, and the sorting network's pairs (allocated with the
    /// batch when it will sort on the device).
    regroup_on_device: bool,
    pairs: Option<CudaSlice<u64>>,
    /// `BatchConfig::regroup_frames`, when it applies (regrouping on, sorted on the device).
    regroup_frames: bool,
    /// `BatchConfig::draw_lines` (with pixels): the states before the drawn frame, and its logs.
    lines: Option<(CudaSlice<u8>, CudaSlice<u8>, CudaSlice<u32>)>,
    /// With `lines`: the envs the line renderer left to a redraw since the last look (one
    /// counter), and when to draw line by line.
    redrawn: CudaSlice<u32>,
    policy: LinesPolicy,
    /// Regrouping on the device: when to sort, and what the last sort found (the word
    /// `nesle_order_out` sets when an env moved, its copy in pinned host memory, and the event
    /// after the copy, while not yet read).
    sorts: SortPolicy,
    moved: Option<(CudaSlice<u32>, PinnedHostSlice<u32>)>,
    moved_event: Option<CudaEvent>,
}

impl Batch {
    /// `n_envs` consoles of `rom`, all just powered on.
    pub fn new(rom: &[u8], n_envs: usize, config: BatchConfig) -> Result<Batch, Error> {
        let image = RomImage::new(rom)?;
        let start = image.power_on();
        Batch::with_state(image, n_envs, config, &start)
    }

    /// `n_envs` consoles of `rom`, all in state `start` (e.g. the first frame of a level).
    pub fn with_state(rom: RomImage, n_envs: usize, config: BatchConfig, start: &FlatState) -> Result<Batch, Error> {
        let packing = Packing::of(start);
        let start = &loadable(&rom, packing, start)?;
        let gpu = Gpu::new(config.device)?;
        let stride = packing.stride();
        // State, action, reset mask, reset pick, instruction count, order.
        let per_env = stride + 1 + 1 + 4 + 4 + 4 + if config.pixels { PIXELS_PER_ENV } else { 0 };
        // The device sort's pairs: 8 bytes for each env, rounded up to a power of two.
        let sorts = config.regroup_on_device && regroup_due(config.regroup_every, n_envs, config.regroup_every as u64);
        let pair_count = if sorts { n_envs.checked_next_power_of_two().unwrap_or(usize::MAX) } else { 0 };
        let draws_lines = config.pixels && config.draw_lines;
        let lines_per_env = if draws_lines { stride + LINE_LOG_BYTES + 4 } else { 0 };
        let rom_bytes = rom.prg.len() + rom.code().len() * 4 + rom.chr.len();
        // Checked: an n_envs whose bytes overflow needs more than any GPU has.
        let needed = n_envs
            .checked_mul(per_env + lines_per_env)
            .and_then(|b| b.checked_add(pair_count.checked_mul(8)?))
            .and_then(|b| b.checked_add(rom_bytes))
            .unwrap_or(usize::MAX);
        let (free, _) = gpu.memory()?;
        // Leave 5% for the driver, the module and the kernel's local memory.
        if needed > free / 20 * 19 {
            return Err(Error::OutOfMemory { needed, free, n_envs, pixels: config.pixels });
        }
        let mut states = gpu.alloc(n_envs * stride)?;
        // Upload in chunks of 4096 states (at most 95 MB) to bound host memory.
        let chunk = 4096.min(n_envs.max(1));
        let block = packing.pack_all(&vec![*start; chunk]);
        let mut at = 0;
        while at < n_envs {
            let k = chunk.min(n_envs - at);
            gpu.upload(&block[..k * stride], &mut states, at * stride)?;
            at += k;
        }
        let mut prg = gpu.alloc(rom.prg.len())?;
        gpu.upload(&rom.prg, &mut prg, 0)?;
        let words: Vec<u8> = rom.code().iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut code = gpu.alloc(words.len())?;
        gpu.upload(&words, &mut code, 0)?;
        let mut chr = gpu.alloc(rom.chr.len())?;
        gpu.upload(&rom.chr, &mut chr, 0)?;
        let pixels = if config.pixels { Some(gpu.alloc(n_envs * PIXELS_PER_ENV)?) } else { None };
        // The step kernel stores 8 pixels at a time (kernels/ppu_batches.cuh `nes_store8`): CUDA's
        // allocations are 256-byte aligned, so this only guards against a future allocator.
        if let Some(p) = &pixels {
            if gpu.ptr(p) % 8 != 0 {
                return Err(Error::Cuda("the picture buffer is not 8-byte aligned".into()));
            }
        }
        let actions = gpu.alloc(n_envs)?;
        let mask = gpu.alloc(n_envs)?;
        let pick = gpu.stream.alloc_zeros::<u32>(n_envs.max(1)).map_err(|e| Error::Cuda(format!("{e:?}")))?;
        let ran = gpu.stream.alloc_zeros::<u32>(n_envs.max(1)).map_err(|e| Error::Cuda(format!("{e:?}")))?;
        let pairs = if sorts {
            Some(gpu.stream.alloc_zeros::<u64>(pair_count).map_err(|e| Error::Cuda(format!("{e:?}")))?)
        } else {
            None
        };
        // The states before the drawn frame, its LineLogs, and the queue of envs whose frame ended.
        let lines = if draws_lines {
            let queue = gpu.stream.alloc_zeros::<u32>(n_envs + 3).map_err(|e| Error::Cuda(format!("{e:?}")))?;
            Some((gpu.alloc(n_envs * stride)?, gpu.alloc(n_envs * LINE_LOG_BYTES)?, queue))
        } else {
            None
        };
        let redrawn = gpu.stream.alloc_zeros::<u32>(1).map_err(|e| Error::Cuda(format!("{e:?}")))?;
        gpu.synchronize()?;
        Ok(Batch {
            gpu,
            rom,
            n_envs,
            packing,
            states,
            actions,
            pixels,
            prg,
            code,
            chr,
            bank: None,
            mask,
            pick,
            gray_tables: None,
            rgb_table: None,
            order: None,
            ran,
            regroup_every: config.regroup_every,
            steps: 0,
            regroup_on_device: config.regroup_on_device,
            pairs,
            regroup_frames: sorts && config.regroup_frames,
            lines,
            redrawn,
            policy: LinesPolicy::default(),
            sorts: SortPolicy::default(),
            moved: None,
            moved_event: None,
        })
    }

    pub fn n_envs(&self) -> usize {
        self.n_envs
    }

    /// The GPU's name, for reports.
    pub fn device_name(&self) -> String {
        self.gpu.name()
    }

    /// The GPU, the kernel image that loaded, the step kernel's registers and occupancy at the
    /// launch this batch's next step takes, and the device memory the batch holds: what a
    /// benchmark records beside its figures.
    pub fn report(&self) -> Result<DeviceReport, Error> {
        self.gpu.report(self.n_envs, self.sorts.calm(), self.device_bytes())
    }

    /// Bytes of device memory in the batch's buffers.
    fn device_bytes(&self) -> usize {
        fn b<T>(s: &CudaSlice<T>) -> usize {
            s.len() * std::mem::size_of::<T>()
        }
        let mut n = b(&self.states) + b(&self.actions) + b(&self.prg) + b(&self.code) + b(&self.chr);
        n += b(&self.mask) + b(&self.pick) + b(&self.ran) + b(&self.redrawn);
        n += self.pixels.as_ref().map_or(0, b) + self.bank.as_ref().map_or(0, |(s, _)| b(s));
        n += self.gray_tables.as_ref().map_or(0, b) + self.rgb_table.as_ref().map_or(0, b);
        n += self.order.as_ref().map_or(0, b) + self.pairs.as_ref().map_or(0, b);
        n += self.lines.as_ref().map_or(0, |(states, logs, queue)| b(states) + b(logs) + b(queue));
        n + self.moved.as_ref().map_or(0, |(word, _)| b(word))
    }

    pub fn rom(&self) -> &RomImage {
        &self.rom
    }

    /// Sets pad-0 buttons of env i to `actions[i]` and runs `frames` frames on every env.
    /// Asynchronous: call [`Batch::synchronize`] (or any `*_to_host`) to wait.
    pub fn step(&mut self, actions: &[u8], frames: u32) -> Result<(), Error> {
        if actions.len() != self.n_envs {
            return Err(Error::BadArgument(format!("{} actions for {} envs", actions.len(), self.n_envs)));
        }
        self.gpu.upload(actions, &mut self.actions, 0)?;
        let regrouped = self.auto_regroup()?;
        self.launch_step(None, frames, regrouped, None, None)
    }

    /// [`Batch::step`], then every env's 84x84 picture into `out` as [`Batch::gray84`] makes it
    /// (the same bytes), made by the line renderer as it draws each env, beside the step's last
    /// frame where the GPU can (kernel-notes #168), instead of in a pass after the step.
    pub fn step_gray84(&mut self, actions: &[u8], frames: u32, out: &mut CudaSlice<u8>) -> Result<(), Error> {
        if actions.len() != self.n_envs {
            return Err(Error::BadArgument(format!("{} actions for {} envs", actions.len(), self.n_envs)));
        }
        self.check_gray84(out)?;
        self.gpu.upload(actions, &mut self.actions, 0)?;
        let regrouped = self.auto_regroup()?;
        self.launch_step(None, frames, regrouped, Some(out), None)
    }

    /// Like [`Batch::step`] with actions already on the device (`n_envs` bytes).
    pub fn step_device(&mut self, actions: &CudaSlice<u8>, frames: u32) -> Result<(), Error> {
        if actions.len() < self.n_envs {
            return Err(Error::BadArgument(format!("{} actions for {} envs", actions.len(), self.n_envs)));
        }
        let regrouped = self.auto_regroup()?;
        self.launch_step(Some(actions), frames, regrouped, None, None)
    }

    /// Like [`Batch::step`], recording every env's work RAM after every frame into `trace`:
    /// `frames * n_envs * 2048` bytes, frame-major (frame f, env i at `(f * n_envs + i) * 2048`).
    /// `actions` are device buttons (`n_envs` bytes), or `None` for the last uploaded ones.
    /// One launch per frame; pictures, if enabled, are drawn for the last frame only, as by `step`.
    pub fn step_trace(
        &mut self,
        actions: Option<&CudaSlice<u8>>,
        frames: u32,
        trace: &mut CudaSlice<u8>,
    ) -> Result<(), Error> {
        self.step_trace_inner(actions, frames, trace, None)
    }

    /// [`Batch::step_trace`] with every env's 84x84 picture into `out`, as
    /// [`Batch::step_gray84`] makes it.
    pub fn step_trace_gray84(
        &mut self,
        actions: Option<&CudaSlice<u8>>,
        frames: u32,
        trace: &mut CudaSlice<u8>,
        out: &mut CudaSlice<u8>,
    ) -> Result<(), Error> {
        self.check_gray84(out)?;
        self.step_trace_inner(actions, frames, trace, Some(out))
    }

    fn step_trace_inner(
        &mut self,
        actions: Option<&CudaSlice<u8>>,
        frames: u32,
        trace: &mut CudaSlice<u8>,
        gray: Option<&mut CudaSlice<u8>>,
    ) -> Result<(), Error> {
        // Checked: a count of frames whose bytes overflow fits no buffer.
        let needed = (self.n_envs * 0x800).checked_mul(frames as usize);
        if needed.is_none_or(|b| trace.len() < b) {
            return Err(Error::BadArgument(format!(
                "trace buffer holds {} bytes, too few for {frames} frames of {} envs ({} bytes each)",
                trace.len(),
                self.n_envs,
                self.n_envs * 0x800
            )));
        }
        let regrouped = self.auto_regroup()?;
        self.launch_step(actions, frames, regrouped, gray, Some(trace))
    }

    /// Like [`Batch::step`] for the envs where `mask[i] != 0` only; the others are not touched
    /// (state, picture, regrouping key). The chosen envs run packed into a launch of their own,
    /// a thread each, in env order, so a step of a few envs costs what a batch of that size
    /// would: what a game's env needs to run some consoles on alone (gym-super-mario-bros'
    /// frames without control). Pictures, if enabled, are drawn as the last frame runs.
    pub fn step_masked(&mut self, actions: &[u8], frames: u32, mask: &[u8]) -> Result<(), Error> {
        if actions.len() != self.n_envs || mask.len() != self.n_envs {
            return Err(Error::BadArgument(format!(
                "{} actions and a mask of {} for {} envs",
                actions.len(),
                mask.len(),
                self.n_envs
            )));
        }
        let envs: Vec<u32> = (0..self.n_envs as u32).filter(|&i| mask[i as usize] != 0).collect();
        if envs.is_empty() || frames == 0 {
            return Ok(());
        }
        self.gpu.upload(actions, &mut self.actions, 0)?;
        // The env list rides in the reset's pick buffer: the stream orders its uses.
        self.gpu.stream.memcpy_htod(&envs, &mut self.pick).map_err(|e| Error::Cuda(format!("{e:?}")))?;
        self.gpu.step(
            &mut self.states,
            self.packing,
            &self.prg,
            &self.code,
            &self.chr,
            &self.actions,
            self.n_envs,
            envs.len(),
            frames,
            self.pixels.as_mut(),
            Some(&self.pick),
            &mut self.ran,
            None,
            None,
            false,
        )
    }

    /// Uploads host buttons for the next [`Batch::step_trace`] with `actions: None`.
    pub fn set_actions(&mut self, actions: &[u8]) -> Result<(), Error> {
        if actions.len() != self.n_envs {
            return Err(Error::BadArgument(format!("{} actions for {} envs", actions.len(), self.n_envs)));
        }
        self.gpu.upload(actions, &mut self.actions, 0)
    }

    /// One launch per frame, the picture drawn in the last: a launch's end makes each warp's
    /// threads start the next frame together; inside one multi-frame launch they drift apart
    /// and a warp runs different parts of the frame one after the other (protocol B on an H200:
    /// 242k frames/s one frame per launch vs 188k four; docs/kernel-notes.md, row 13). Envs in
    /// lockstep do not drift: with nothing to record between frames, their step is one launch.
    /// `regrouped`: this step regrouped first (`auto_regroup`).
    /// `gray`: the last frame's 84x84 pictures (checked by the caller); with no frame, made of
    /// the pictures as they are. `trace`: every env's RAM after each frame (checked by the caller).
    fn launch_step(
        &mut self,
        actions: Option<&CudaSlice<u8>>,
        frames: u32,
        regrouped: bool,
        mut gray: Option<&mut CudaSlice<u8>>,
        mut trace: Option<&mut CudaSlice<u8>>,
    ) -> Result<(), Error> {
        if frames > 1 && self.sorts.calm() && trace.is_none() && gray.is_none() && self.pixels.is_none() {
            // Envs in lockstep cannot drift apart inside a launch, and with nothing to record
            // between frames the step's frames run in one: each env's state is copied in and
            // out once instead of once a frame (kernel-notes #175).
            for k in lockstep_launches(frames) {
                self.launch_step_drawing(actions, k, false, None)?;
            }
            return Ok(());
        }
        for f in 0..frames {
            self.regroup_before_frame(f, regrouped)?;
            let last = f + 1 == frames;
            self.launch_step_drawing(actions, 1, last, if last { gray.as_deref_mut() } else { None })?;
            if let Some(trace) = trace.as_deref_mut() {
                let at = f as usize * self.n_envs * 0x800;
                self.gpu.gather_ram_at(&self.states, trace, at, self.n_envs, self.packing)?;
            }
        }
        match gray {
            Some(out) if frames == 0 => self.gray84(out),
            _ => Ok(()),
        }
    }

    /// [`BatchConfig::regroup_frames`]: a step that regrouped first regroups again before each
    /// of its frames after the first.
    fn regroup_before_frame(&mut self, frame: u32, regrouped: bool) -> Result<(), Error> {
        if frame > 0 && regrouped && self.regroup_frames {
            self.regroup_device_sort()?;
        }
        Ok(())
    }

    /// `gray` (with `draw`): the 84x84 pictures of the frame drawn, made by the line renderer when
    /// it draws this frame, else by `gray84` after it.
    fn launch_step_drawing(
        &mut self,
        actions: Option<&CudaSlice<u8>>,
        frames: u32,
        draw: bool,
        gray: Option<&mut CudaSlice<u8>>,
    ) -> Result<(), Error> {
        let gray = match gray {
            Some(out) => Some((gray_tables(&self.gpu, &mut self.gray_tables)?, out)),
            None => None,
        };
        let actions = actions.unwrap_or(&self.actions);
        let order = self.order.as_ref();
        let lockstep = self.sorts.calm();
        let drawn = draw && frames == 1 && self.pixels.is_some();
        if let (true, true, Some(pixels), Some((snapshot, logs, queue))) =
            (drawn, self.policy.by_lines_now(), self.pixels.as_mut(), self.lines.as_mut())
        {
            // Drawn after the frame (BatchConfig::draw_lines): the states before it, the frame
            // run undrawn with its logs, then the line renderer.
            self.gpu.stream.memcpy_dtod(&self.states, snapshot).map_err(|e| Error::Cuda(format!("{e:?}")))?;
            self.gpu.stream.memset_zeros(queue).map_err(|e| Error::Cuda(format!("{e:?}")))?;
            self.gpu.step(
                &mut self.states,
                self.packing,
                &self.prg,
                &self.code,
                &self.chr,
                actions,
                self.n_envs,
                self.n_envs,
                frames,
                None,
                order,
                &mut self.ran,
                Some(logs),
                Some(&mut *queue),
                lockstep,
            )?;
            self.gpu.draw_lines(
                &self.states,
                snapshot,
                self.packing,
                &self.prg,
                &self.code,
                &self.chr,
                actions,
                logs,
                pixels,
                &mut self.redrawn,
                queue,
                gray,
                self.n_envs,
            )?;
            if self.policy.drawn() {
                let mut count = [0u32];
                self.gpu.stream.memcpy_dtoh(&self.redrawn, &mut count).map_err(|e| Error::Cuda(format!("{e:?}")))?;
                self.gpu.stream.memset_zeros(&mut self.redrawn).map_err(|e| Error::Cuda(format!("{e:?}")))?;
                self.policy.window_ended(count[0] as u64, self.n_envs);
            }
            return Ok(());
        }
        if drawn && self.lines.is_some() {
            self.policy.drawn();
        }
        let pixels = if draw { self.pixels.as_mut() } else { None };
        self.gpu.step(
            &mut self.states,
            self.packing,
            &self.prg,
            &self.code,
            &self.chr,
            actions,
            self.n_envs,
            self.n_envs,
            frames,
            pixels,
            order,
            &mut self.ran,
            None,
            None,
            lockstep,
        )?;
        let Some((tables, out)) = gray else { return Ok(()) };
        let pixels =
            self.pixels.as_ref().ok_or_else(|| Error::BadArgument("gray84 needs a batch with pixels".into()))?;
        self.gpu.gray84(pixels, tables, out, self.n_envs)
    }

    /// With [`BatchConfig::draw_lines`]: how the drawn steps so far were drawn ([`LinesPolicy`]).
    pub fn lines_policy(&self) -> Option<LinesPolicy> {
        self.lines.as_ref().map(|_| self.policy)
    }

    /// Each env's instructions in the last frame of the last step (0 before the first step): a
    /// measure of the work its next frame will likely take, the first part of
    /// [`Batch::regroup`]'s key. Exact: the frame loop halts a console after 60,000 steps in a
    /// frame (`NES_MAX_STEPS_PER_FRAME`), under the key's 16-bit cap.
    pub fn instructions_to_host(&self) -> Result<Vec<u32>, Error> {
        Ok(self.sort_keys_to_host()?.into_iter().map(|k| k >> 16).collect())
    }

    /// Each env's regrouping key after the last step (0 before the first step): its
    /// instructions in the last frame (at most 0xffff) << 16 | the PC that frame ended at. The
    /// sort orders the envs by it, the most first, then each block of 512 by the PC alone
    /// (kernel-notes #179).
    pub fn sort_keys_to_host(&self) -> Result<Vec<u32>, Error> {
        let mut out = vec![0u32; self.n_envs];
        self.gpu.download(&self.ran, 0, &mut out)?;
        Ok(out)
    }

    /// With pictures drawn line by line ([`BatchConfig::draw_lines`]): how many envs' last
    /// drawn frame the line renderer left to be run again, drawing as it ran (frames it does not
    /// model, e.g. rendering off while the palette is written); `None` when the batch draws
    /// while running, 0 when its last drawn step did ([`LinesPolicy`]). Counts the last step that
    /// drew; waits for the work queued before it.
    pub fn redrawn_to_host(&self) -> Result<Option<usize>, Error> {
        let Some((_, logs, _)) = &self.lines else { return Ok(None) };
        if !self.policy.last_by_lines {
            return Ok(Some(0));
        }
        let mut out = host_zeros(self.n_envs * LINE_LOG_BYTES)?;
        self.gpu.download(logs, 0, &mut out)?;
        let flags = |l: &[u8]| u32::from_le_bytes(l[LINE_LOG_FLAGS_AT..LINE_LOG_FLAGS_AT + 4].try_into().unwrap());
        Ok(Some(out.chunks(LINE_LOG_BYTES).filter(|l| flags(l) & LINES_REDRAW != 0).count()))
    }

    /// With pictures drawn line by line: how many envs of the last step that drew so the line
    /// renderer's warps came to before their frame had ended, i.e. drew beside the step
    /// (kernel-notes #166, #167); `None` when the batch does not draw line by line. Waits for
    /// the work queued before it.
    pub fn lines_waits_to_host(&self) -> Result<Option<u32>, Error> {
        let Some((_, _, queue)) = &self.lines else { return Ok(None) };
        if !self.policy.last_by_lines {
            return Ok(Some(0));
        }
        let mut w = [0u32];
        self.gpu.download(queue, 2, &mut w)?;
        Ok(Some(w[0]))
    }

    /// Orders the envs by their instructions in the last frame ([`Batch::set_order`]), then each
    /// block of 512 by the PC that frame ended at (kernel-notes #179), so each block holds envs
    /// that did about as much work and each warp envs at one point of the game's loop. The count
    /// alone was, in the warp model (docs/kernel-notes.md #21), as good a grouping as a game's own
    /// phase bytes; neither needs any knowledge of the game. Envs that did the same work
    /// (protocol A's lockstep) keep their own order, with no indirection in the kernel.
    pub fn regroup(&mut self) -> Result<(), Error> {
        let keys = self.sort_keys_to_host()?;
        self.set_order(order_by_work(&keys).as_deref())
    }

    /// [`BatchConfig::regroup_every`]: regroups before every k-th step (not the first: no
    /// instructions have run yet). One warp's worth of envs or fewer has nothing to regroup.
    /// Whether it regrouped.
    fn auto_regroup(&mut self) -> Result<bool, Error> {
        let mut due = regroup_due(self.regroup_every, self.n_envs, self.steps);
        if due {
            if self.regroup_on_device {
                if let Some(moved) = self.last_sort_moved() {
                    self.sorts.learn(moved);
                }
                due = self.sorts.sort_now();
                if due {
                    self.regroup_device_sort()?;
                }
            } else {
                self.regroup()?;
            }
        }
        self.steps += 1;
        Ok(due)
    }

    /// Whether the last sort moved an env, if its word has reached the host (without waiting
    /// for it); each answer is read once. Every sort clears the word first, so a step's last
    /// sort (its last frame's) is the one that answers.
    fn last_sort_moved(&mut self) -> Option<bool> {
        if !self.moved_event.as_ref()?.is_complete() {
            return None;
        }
        self.moved_event = None;
        let (_, host) = self.moved.as_ref()?;
        // The event after the copy completed: as_slice does not wait.
        host.as_slice().ok().map(|w| w[0] != 0)
    }

    /// With [`BatchConfig::regroup_on_device`]: the steps that sorted and skipped ([`SortPolicy`]).
    pub fn sort_policy(&self) -> SortPolicy {
        self.sorts
    }

    /// [`Batch::regroup`] on the device: the same order, queued on the stream (the kernel always
    /// reads the order then, even when it is the envs' own). Whether it moved an env reaches
    /// the host later, for [`SortPolicy`].
    pub fn regroup_device_sort(&mut self) -> Result<(), Error> {
        let err = |e| Error::Cuda(format!("{e:?}"));
        let mut pairs = match self.pairs.take() {
            Some(p) => p,
            None => self.gpu.stream.alloc_zeros::<u64>(self.n_envs.next_power_of_two()).map_err(err)?,
        };
        let mut order = match self.order.take() {
            Some(o) => o,
            None => self.gpu.stream.alloc_zeros::<u32>(self.n_envs.max(1)).map_err(err)?,
        };
        let (mut word, mut host) = match self.moved.take() {
            Some(m) => m,
            None => self.gpu.moved_word()?,
        };
        let done = self.gpu.order_by_work(&self.ran, &mut pairs, &mut order, &mut word, self.n_envs);
        self.pairs = Some(pairs);
        self.order = Some(order);
        let told = done.and_then(|()| {
            // Whether this sort moved an env, on its way to the host (SortPolicy); a frame's sort
            // after the step's first overwrites it, so the last sort of a step is what is read.
            self.gpu.stream.memcpy_dtoh(&word, &mut host).map_err(|e| Error::Cuda(format!("{e:?}")))?;
            self.gpu.stream.record_event(None).map_err(|e| Error::Cuda(format!("{e:?}")))
        });
        self.moved = Some((word, host));
        self.moved_event = Some(told?);
        Ok(())
    }

    /// Runs the envs in `order` from the next step on (thread slot t steps env `order[t]`; a
    /// permutation of `0..n_envs`), or in their own order with `None`. Envs that run the same
    /// code (e.g. sorted by game phase) then share warps (docs/kernel-notes.md #21); which
    /// thread runs an env changes nothing in it, so results are the same in any order.
    pub fn set_order(&mut self, order: Option<&[u32]>) -> Result<(), Error> {
        let Some(order) = order else {
            self.order = None;
            return Ok(());
        };
        crate::check_order(order, self.n_envs)?;
        // One device buffer for the batch's life: regrouping every few steps reuses it.
        let mut buf = match self.order.take() {
            Some(buf) => buf,
            None => {
                self.gpu.stream.alloc_zeros::<u32>(self.n_envs.max(1)).map_err(|e| Error::Cuda(format!("{e:?}")))?
            }
        };
        self.gpu.stream.memcpy_htod(order, &mut buf).map_err(|e| Error::Cuda(format!("{e:?}")))?;
        self.order = Some(buf);
        Ok(())
    }

    /// The order the envs run in ([`Batch::set_order`]), or `None` for their own.
    pub fn order_to_host(&self) -> Result<Option<Vec<u32>>, Error> {
        let Some(order) = &self.order else { return Ok(None) };
        let mut out = vec![0u32; self.n_envs];
        self.gpu.download(order, 0, &mut out)?;
        Ok(Some(out))
    }

    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<(), Error> {
        self.gpu.synchronize()
    }

    /// A mark after the work queued so far, to ask later, without waiting, whether the GPU
    /// has finished it (for memory of another library that a queued step still reads).
    pub fn fence(&self) -> Result<Fence, Error> {
        self.gpu.fence()
    }

    /// Every env's 2 KiB of CPU RAM, env-major (`n_envs * 2048` bytes).
    pub fn ram_to_host(&self) -> Result<Vec<u8>, Error> {
        let mut dense = self.gpu.alloc(self.n_envs * 0x800)?;
        self.gpu.gather_ram(&self.states, &mut dense, self.n_envs, self.packing)?;
        let mut out = host_zeros(self.n_envs * 0x800)?;
        self.gpu.download(&dense, 0, &mut out)?;
        Ok(out)
    }

    /// Every env's whole state.
    pub fn states_to_host(&self) -> Result<Vec<FlatState>, Error> {
        let mut packed = host_zeros(self.n_envs * self.packing.stride())?;
        self.gpu.download(&self.states, 0, &mut packed)?;
        let mut states = Vec::new();
        let bytes = self.n_envs * std::mem::size_of::<FlatState>();
        states.try_reserve_exact(self.n_envs).map_err(|_| Error::HostMemory { bytes })?;
        states.extend(packed.chunks_exact(self.packing.stride()).map(|c| self.packing.unpack(c)));
        Ok(states)
    }

    /// The last frame of every env (`n_envs * 256 * 240` palette indices), if enabled.
    pub fn pixels_to_host(&self) -> Result<Vec<u8>, Error> {
        let px = self.pixels.as_ref().ok_or_else(|| Error::BadArgument("batch built without pixels".into()))?;
        let mut out = host_zeros(self.n_envs * PIXELS_PER_ENV)?;
        self.gpu.download(px, 0, &mut out)?;
        Ok(out)
    }

    /// The last frame of every env in RGB (`n_envs * 240 * 256 * 3` bytes), made on the device
    /// by [`Batch::rgb`], if enabled.
    pub fn rgb_to_host(&mut self) -> Result<Vec<u8>, Error> {
        let mut dense = self.gpu.alloc(self.n_envs * crate::picture::RGB_BYTES)?;
        self.rgb(&mut dense)?;
        let mut out = host_zeros(self.n_envs * crate::picture::RGB_BYTES)?;
        self.gpu.download(&dense, 0, &mut out)?;
        Ok(out)
    }

    /// A zeroed device buffer of `bytes` bytes on this batch's GPU (e.g. for [`Batch::gray84`]).
    pub fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>, Error> {
        self.gpu.alloc(bytes)
    }

    /// Every env's last picture as 84x84 grayscale (`picture.rs`, the same bytes the CPU
    /// backend makes) into `out`: `n_envs * 84 * 84` bytes on the device. Asynchronous.
    pub fn gray84(&mut self, out: &mut CudaSlice<u8>) -> Result<(), Error> {
        self.check_gray84(out)?;
        let tables = gray_tables(&self.gpu, &mut self.gray_tables)?;
        let pixels =
            self.pixels.as_ref().ok_or_else(|| Error::BadArgument("gray84 needs a batch with pixels".into()))?;
        self.gpu.gray84(pixels, tables, out, self.n_envs)
    }

    /// Every env's last picture in RGB (240 x 256 x 3 bytes an env, the bytes of
    /// `nes_core::palette::indices_to_rgb`) into `out`: `n_envs * 240 * 256 * 3` bytes on the
    /// device. Asynchronous.
    pub fn rgb(&mut self, out: &mut CudaSlice<u8>) -> Result<(), Error> {
        let pixels = self.pixels.as_ref().ok_or_else(|| Error::BadArgument("rgb needs a batch with pixels".into()))?;
        let need = self.n_envs * crate::picture::RGB_BYTES;
        if out.len() < need.max(1) {
            return Err(Error::BadArgument(format!("rgb buffer holds {} bytes, {need} needed", out.len())));
        }
        let table = uploaded(&self.gpu, &mut self.rgb_table, || {
            crate::picture::RgbTable::new().rgb.iter().flat_map(|w| w.to_le_bytes()).collect()
        })?;
        self.gpu.rgb(pixels, table, out, self.n_envs)
    }

    /// An error unless the batch keeps pictures and `out` holds n_envs 84x84 pictures.
    fn check_gray84(&self, out: &CudaSlice<u8>) -> Result<(), Error> {
        if self.pixels.is_none() {
            return Err(Error::BadArgument("gray84 needs a batch with pixels".into()));
        }
        let need = self.n_envs * crate::picture::GRAY_PIXELS;
        if out.len() < need.max(1) {
            return Err(Error::BadArgument(format!("gray84 buffer holds {} bytes, {need} needed", out.len())));
        }
        Ok(())
    }

    /// Raw device addresses for zero-copy consumers (valid while `self` lives).
    pub fn device_pointers(&self) -> DevicePointers {
        DevicePointers {
            states: self.gpu.ptr(&self.states),
            state_size: self.packing.stride(),
            actions: self.gpu.ptr(&self.actions),
            pixels: self.pixels.as_ref().map(|p| self.gpu.ptr(p)),
            n_envs: self.n_envs,
        }
    }
}

/// `picture::GrayTables` on the device, uploaded into `slot` on first use.
fn gray_tables<'a>(gpu: &Gpu, slot: &'a mut Option<CudaSlice<u8>>) -> Result<&'a CudaSlice<u8>, Error> {
    uploaded(gpu, slot, || launch::tables_as_bytes(&crate::picture::GrayTables::new()).to_vec())
}

/// A read-only table on the device, uploaded into `slot` from `bytes()` on first use (a
/// function of the two fields, so the batch's other fields stay free to borrow beside it).
fn uploaded<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<CudaSlice<u8>>,
    bytes: impl FnOnce() -> Vec<u8>,
) -> Result<&'a CudaSlice<u8>, Error> {
    match slot {
        Some(buf) => Ok(buf),
        None => {
            let bytes = bytes();
            let mut buf = gpu.alloc(bytes.len())?;
            gpu.upload(&bytes, &mut buf, 0)?;
            Ok(slot.insert(buf))
        }
    }
}

/// `state` as nes-core loads it, in the batch's packing; refused if nes-core refuses it or if it
/// holds data in memory the packing leaves out (its board never uses it).
pub(crate) fn loadable(rom: &RomImage, packing: Packing, state: &FlatState) -> Result<FlatState, Error> {
    let loaded = rom.loadable_state(state)?;
    if Packing::of(state) != packing || !packing.keeps_everything_of(state) {
        return Err(Error::BadArgument(
            "state has data in memory its cartridge cannot use (not a state of this ROM's console)".into(),
        ));
    }
    Ok(loaded)
}

impl Drop for Batch {
    fn drop(&mut self) {
        // cudarc frees asynchronously: let queued kernels finish with the buffers first.
        let _ = self.gpu.synchronize();
    }
}

/// [`regroup_order`] of `ran`, or `None` when that is the envs' own order.
fn order_by_work(ran: &[u32]) -> Option<Vec<u32>> {
    let order = regroup_order(ran);
    if order.windows(2).all(|w| w[0] < w[1]) {
        None
    } else {
        Some(order)
    }
}

/// The order [`Batch::regroup`] and the device sort give envs of regrouping keys `keys`
/// ([`Batch::sort_keys_to_host`]: each env's instructions in its last frame << 16 | the PC it
/// ended at), as a whole permutation: the most first, ties in env order, then each block of
/// `ORDER_BLOCK` by the PC, ties in that order (kernel-notes #179, kernels/order.cuh).
pub fn regroup_order(keys: &[u32]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_by_key(|&e| std::cmp::Reverse(keys[e as usize]));
    for block in order.chunks_mut(launch::ORDER_BLOCK) {
        block.sort_by_key(|&e| keys[e as usize] & 0xffff);
    }
    order
}

/// The most frames a lockstep step runs in one launch ([`Batch::launch_step`]): a launch's length
/// stays bounded by a few frames, as it is one frame otherwise (a GPU that also drives a display
/// may stop a kernel that runs too long, and with it the context). 4 is the protocols' frameskip,
/// which kernel-notes #175 measured.
pub const LOCKSTEP_FRAMES_PER_LAUNCH: u32 = 4;

/// The launches of a lockstep step of `frames` frames: their frame counts, in order.
fn lockstep_launches(frames: u32) -> impl Iterator<Item = u32> {
    (0..frames.div_ceil(LOCKSTEP_FRAMES_PER_LAUNCH))
        .map(move |i| (frames - i * LOCKSTEP_FRAMES_PER_LAUNCH).min(LOCKSTEP_FRAMES_PER_LAUNCH))
}

/// Whether the step after `steps` steps regroups first: every `every`-th (0: never), not the
/// first, and only with more than one warp of envs.
fn regroup_due(every: u32, n_envs: usize, steps: u64) -> bool {
    every > 0 && n_envs > WARP && steps > 0 && steps % every as u64 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lockstep_step_runs_its_frames_in_launches_of_at_most_four() {
        let launches = |frames| lockstep_launches(frames).collect::<Vec<u32>>();
        assert_eq!(launches(2), [2]);
        assert_eq!(launches(4), [4]);
        assert_eq!(launches(10), [4, 4, 2]);
        assert_eq!(launches(12), [4, 4, 4]);
    }

    #[test]
    fn envs_are_ordered_by_their_work_the_most_first_then_each_block_by_pc() {
        let key = |count: u32, pc: u32| count << 16 | pc;
        // One block: by PC, ties in order of the work, the most first.
        let ran = [key(5, 0x8000), key(3, 0x8000), key(5, 0x9000), key(1, 0x8000)];
        assert_eq!(order_by_work(&ran), Some(vec![0, 1, 3, 2]));
        // Protocol A: every env did the same, so the envs keep their own order, no indirection.
        assert_eq!(order_by_work(&[key(7, 0x8000); 64]), None);
        assert_eq!(order_by_work(&[key(3, 0x8000), key(2, 0x8000), key(1, 0x8000)]), None);
        // Two blocks: the longer envs in the first, each block by PC.
        let n = launch::ORDER_BLOCK * 2;
        let ran: Vec<u32> = (0..n as u32).map(|e| key(e / 2, 0xc000 - e % 7)).collect();
        let order = order_by_work(&ran).unwrap();
        let (first, second) = order.split_at(launch::ORDER_BLOCK);
        assert!(first.iter().all(|&e| e as usize >= launch::ORDER_BLOCK), "the longer half first");
        for block in [first, second] {
            assert!(block.windows(2).all(|w| ran[w[0] as usize] & 0xffff <= ran[w[1] as usize] & 0xffff));
        }
    }

    #[test]
    fn the_device_sorting_network_gives_the_host_sorts_order() {
        let mut seed = 12345u32;
        for n in [1usize, 2, 3, 31, 33, 100, 1000, 4096] {
            // Counts with many ties, as envs in lockstep give.
            let ran: Vec<u32> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    seed % 7
                })
                .collect();
            let host = order_by_work(&ran).unwrap_or_else(|| (0..n as u32).collect());
            // The device's tiles, and smaller ones so that these sizes also take the stages
            // between tiles.
            for tile in [launch::ORDER_TILE, 2, 8, 64] {
                assert_eq!(crate::launch::host_order(&ran, tile), host, "{n} envs in tiles of {tile}");
            }
        }
    }

    #[test]
    fn regrouping_is_due_every_kth_step_after_the_first_with_more_than_a_warp() {
        let due: Vec<u64> = (0..25).filter(|&s| regroup_due(10, 64, s)).collect();
        assert_eq!(due, vec![10, 20]);
        assert!((0..25).all(|s| !regroup_due(0, 64, s)));
        assert!((0..25).all(|s| !regroup_due(1, 32, s)));
        assert!((1..25).all(|s| regroup_due(1, 33, s)) && !regroup_due(1, 33, 0));
    }

    fn nrom() -> Vec<u8> {
        let mut rom = vec![0u8; 16 + 0x4000 + 0x2000];
        rom[0..4].copy_from_slice(b"NES\x1a");
        rom[4] = 1;
        rom[5] = 1;
        rom
    }

    #[test]
    fn a_state_with_data_where_its_board_cannot_write_is_refused() {
        let image = RomImage::new(&nrom()).unwrap();
        let start = image.power_on();
        let packing = Packing::of(&start);
        assert!(loadable(&image, packing, &start).is_ok());
        let mut bad = start;
        bad.cart_chr_ram[5] = 1; // CHR ROM board: its CHR RAM is never used
        assert!(matches!(loadable(&image, packing, &bad), Err(Error::BadArgument(_))));
        assert!(matches!(Batch::with_state(image, 1, BatchConfig::default(), &bad), Err(Error::BadArgument(_))));
    }

    #[test]
    fn a_state_is_uploaded_as_nes_core_loads_it() {
        let image = RomImage::new(&nrom()).unwrap();
        let start = image.power_on();
        let packing = Packing::of(&start);
        assert_eq!(loadable(&image, packing, &start).unwrap(), start, "a console's own state as it is");
        // Bits no console holds, which nes-core's loader drops. Uploaded as they were, the kernels
        // would draw palette entries past 63 and index the colour tables past their end.
        let mut odd = start;
        odd.ppu_palette.iter_mut().for_each(|p| *p |= 0xc0);
        odd.ppu_v |= 0x8000;
        let loaded = loadable(&image, packing, &odd).unwrap();
        assert!(loaded.ppu_palette.iter().all(|&p| p < 64) && loaded.ppu_v < 0x8000);
        assert_eq!(loaded, image.console(&odd).unwrap().to_flat());
    }

    #[test]
    fn without_a_gpu_or_kernels_new_is_a_typed_error_not_a_panic() {
        let rom = nrom();
        match Batch::new(&rom, 4, BatchConfig::default()) {
            Ok(_) => {} // a GPU machine
            Err(e) => assert!(matches!(e, Error::NoKernels | Error::NoDevice(_)), "{e}"),
        }
    }
}

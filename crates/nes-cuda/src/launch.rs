//! Every unsafe operation and every CUDA call of nes-cuda, each with its `// SAFETY:` note.
//!
//! Two back ends of the same kernel sources: the host-compiled C++ library (`nesle_host_*`,
//! linked statically by build.rs; `launch/host.rs`) and the GPU images (nvcc fatbin, NVRTC 12
//! cubins and PTX: `launch/images.rs`), found and loaded by `launch/load.rs` and launched
//! through cudarc here (libcuda loaded at run time).

mod host;
mod images;
mod load;

// The host twin's entry points, as `launch::host_step` & co.
pub(crate) use host::*;
#[cfg(test)]
pub(crate) use load::built_entry_points;

use crate::packed::Packing;
use crate::picture::{GrayTables, RgbTable, GRAY_PIXELS, RGB_BYTES};
use crate::report::{DeviceReport, StepLaunch};
use crate::{Error, PIXELS_PER_ENV};
use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};
use load::{driver_version, has_kernels, load_kernels};
use std::sync::Arc;

/// Threads per block. One console per thread; 128 keeps several blocks resident per SM while
/// leaving the register allocator room (the step kernel is large). See docs/kernel-notes.md.
const BLOCK: u32 = 128;

/// Threads per block of the step kernel for `n` envs on `sms` SMs: the largest of 512 and 256
/// whose blocks fill the SMs, else [`BLOCK`], which spreads fewer envs over more SMs. Larger
/// blocks line up more warps at each of a frame's block barriers (kernel-notes #40: 256 against
/// 128, protocol B +30% at 65,536 envs; #90: 512 against 256, B +5%, A -4%). `NESLE_BLOCK` (a
/// measurement knob, a multiple of 32 up to 512, what the kernel's register cap allows on one
/// SM: kernels/nesle.cu, kernel-notes #86) overrides it. Always a multiple of 32: the frame
/// loop's warp votes name all 32 threads (kernels/console.cuh, nes_run_frame).
/// `lockstep`: the batch's envs run alike (its last sort left the order as it was).
fn step_block(n: usize, sms: u32, lockstep: bool) -> u32 {
    static B: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let knob = *B.get_or_init(|| {
        std::env::var("NESLE_BLOCK")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&b: &u32| b > 0 && b <= 512 && b % 32 == 0)
    });
    knob.unwrap_or_else(|| default_step_block(n, sms, lockstep))
}

/// [`step_block`] without the knob. 256-thread blocks fill the SMs when every SM gets one;
/// 512-thread blocks (one an SM: 128 registers a thread) when at most 1/32 of the SMs go
/// without, since a block that large gains more than 1/32 on protocol B (65,536 envs on an
/// H200's 132 SMs: 128 blocks, 4 SMs idle, still B +5%, kernel-notes #90). The large blocks
/// are for envs that diverge (the warps of a block then run a frame's part together, #40); envs
/// in lockstep only wait at the parts' barriers, so they never take 512 (#172: A +8.1% with 128
/// against 512). Since #187's slack, 256 beat 128 for them where every SM gets a block (#193,
/// 65,536 envs on an H100: protocol A +4.9%; why is a guess, in the notes).
fn default_step_block(n: usize, sms: u32, lockstep: bool) -> u32 {
    let sms = sms.max(1) as usize;
    if n < 256 * sms {
        BLOCK
    } else if !lockstep && n.div_ceil(512) >= sms - sms / 32 {
        512
    } else {
        256
    }
}

/// Resident blocks per SM the step launch is capped at (`NESLE_BLOCKS_PER_SM`, a measurement
/// knob; 0 = no cap, one thread per env). With a cap the grid is SMs x cap blocks and each
/// thread steps several envs in turn (the kernel's grid-stride loop).
fn step_blocks_per_sm() -> u32 {
    static B: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *B.get_or_init(|| std::env::var("NESLE_BLOCKS_PER_SM").ok().and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// The step launch for `n` envs: one thread per env, at most `per_sm` blocks per SM when set.
fn step_grid(n: usize, block: u32, sms: u32, per_sm: u32) -> LaunchConfig {
    let mut cfg = grid_of(n, block);
    if per_sm > 0 {
        cfg.grid_dim.0 = cfg.grid_dim.0.min(sms.max(1).saturating_mul(per_sm));
    }
    cfg
}

fn cuda(e: DriverError) -> Error {
    Error::Cuda(format!("{e:?}"))
}

/// kernels/order.cuh's `ORDER_TILE`: the pairs one block of `nesle_order_tiles` sorts.
pub(crate) const ORDER_TILE: usize = 1024;

/// kernels/order.cuh's `ORDER_BLOCK`: the slots `nesle_order_out` orders by PC after the sort,
/// a launch block each.
pub(crate) const ORDER_BLOCK: usize = 512;

fn grid(n: usize) -> LaunchConfig {
    grid_of(n, BLOCK)
}

/// kernels/picture.cuh's `GRAY_THREADS`: the threads of a `nesle_gray84` block.
const GRAY_THREADS: u32 = 256;

/// `nesle_gray84`'s launch: a block a picture at a time, as many blocks as fit on the GPU at
/// once (8 of 256 threads an SM) or one a picture when there are fewer, each looping over its
/// share, so the tables are copied into shared memory once a block.
fn gray84_grid(n_envs: usize, sms: u32) -> LaunchConfig {
    let blocks = n_envs.min(8 * sms.max(1) as usize).max(1);
    grid_of(blocks * GRAY_THREADS as usize, GRAY_THREADS)
}

/// kernels/picture.cuh's `RGB_THREADS`: the threads of a `nesle_rgb` block.
const RGB_THREADS: u32 = 256;

/// `nesle_rgb`'s launch: a thread a 4-pixel group, at most 16 blocks an SM (a full SM's worth of
/// threads), each looping over its share, so the table is copied into shared memory once a block.
fn rgb_grid(quads: u64, sms: u32) -> LaunchConfig {
    let blocks = quads.div_ceil(RGB_THREADS as u64).min(16 * sms.max(1) as u64).max(1);
    grid_of(blocks as usize * RGB_THREADS as usize, RGB_THREADS)
}

/// kernels/lines.cuh's `LINES_WARPS`: the envs (a warp each) of a `nesle_draw_lines` block.
const LINES_WARPS: u32 = 4;

/// `nesle_draw_lines`'s blocks (and `nesle_gray84_redrawn`'s): as many as the GPU holds at once
/// (6 an SM, the line renderer's launch bound), fewer when there are fewer envs than warps. Each
/// warp takes env after env.
fn lines_grid(n: usize, sms: u32) -> LaunchConfig {
    let blocks = (n as u32).div_ceil(LINES_WARPS).min(6 * sms.max(1)).max(1);
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (LINES_WARPS * 32, 1, 1), shared_mem_bytes: 0 }
}

fn grid_of(n: usize, block: u32) -> LaunchConfig {
    // Divided before the cast: a thread count past u32 (the RAM gather's, a thread a word)
    // still gives its whole grid.
    let blocks = n.div_ceil(block.max(1) as usize);
    LaunchConfig {
        grid_dim: (blocks.min(u32::MAX as usize) as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The alignment the kernels' stores into a caller's buffer need: the RAM trace is written 8
/// bytes at a time, RGB pictures 4 (kernels/nesle.cu `nesle_gather_ram`, picture.cuh).
pub const OUT_ALIGN: u64 = 8;

/// A device address the kernels can use for `what` (a caller's buffer, e.g. a torch tensor):
/// a multiple of `align`. A view at an odd byte offset would otherwise fault the kernels with a
/// misaligned address, an error CUDA keeps for the whole context, so every CUDA user of the
/// process (torch too) would fail after it. Returns the message for the caller's error type.
pub fn check_aligned(ptr: u64, align: u64, what: &str) -> Result<(), String> {
    match ptr % align.max(1) {
        0 => Ok(()),
        off => Err(format!(
            "{what} must start at a multiple of {align} bytes on the device, got an address {off} \
             past one (a view at an odd byte offset): pass a copy (e.g. tensor.clone())"
        )),
    }
}

/// The RAM gather's envs a launch (a thread a word: 2^30 threads).
const GATHER_RUN: usize = 1 << 22;

/// `n` items in runs of at most `size` (the last one shorter): (first, count) of each.
fn runs(n: usize, size: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).step_by(size.max(1)).map(move |at| (at, size.max(1).min(n - at)))
}

/// A point in a batch's queued work ([`crate::Batch::fence`]).
#[derive(Debug)]
pub struct Fence(cudarc::driver::CudaEvent);

impl Fence {
    /// Whether the GPU has finished the work queued before the fence; never waits. An error
    /// of an earlier launch comes back here.
    pub fn passed(&self) -> Result<bool, Error> {
        self.0.try_is_complete().map_err(cuda)
    }
}

/// A CUDA context, stream and the loaded kernels.
pub(crate) struct Gpu {
    ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    step: CudaFunction,
    reset: CudaFunction,
    gather_ram: CudaFunction,
    write_ram: CudaFunction,
    gray84: CudaFunction,
    rgb: CudaFunction,
    draw_lines: CudaFunction,
    redraw: CudaFunction,
    gray84_redrawn: CudaFunction,
    order_tiles: CudaFunction,
    order_stage: CudaFunction,
    order_out: CudaFunction,
    /// Streaming multiprocessors (the step grid's cap is per SM).
    sms: u32,
    /// Which kernel image loaded (`load_kernels`), for reports.
    image: String,
    /// Whether the line renderer runs beside the step it draws (a programmatic dependent launch:
    /// sm_90 and later). `NESLE_PDL=0` turns it off, to measure what the overlap gains
    /// (kernel-notes #166, #167).
    pdl: bool,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("ordinal", &self.ctx.ordinal()).finish_non_exhaustive()
    }
}

impl Gpu {
    pub(crate) fn new(device: usize) -> Result<Gpu, Error> {
        if !has_kernels() && std::env::var_os("NESLE_KERNEL_SOURCE").is_none() {
            return Err(Error::NoKernels);
        }
        // SAFETY: only tries to dlopen libcuda and reports whether it worked; cudarc would
        // panic on first use without it, so this check comes first.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoDevice("the CUDA driver library (libcuda.so) is not installed".into()));
        }
        let count = CudaContext::device_count().map_err(|e| Error::NoDevice(format!("cuInit failed: {e:?}")))?;
        if device >= count.max(0) as usize {
            return Err(Error::NoDevice(format!("GPU {device} requested, {count} present")));
        }
        let ctx = CudaContext::new(device).map_err(cuda)?;
        let stream = ctx.default_stream();
        let (module, image) = load_kernels(&ctx)?;
        let f = |name: &str| module.load_function(name).map_err(cuda);

        let sms = ctx
            .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(cuda)?
            .max(1) as u32;
        let (major, _) = ctx.compute_capability().map_err(cuda)?;
        let pdl = major >= 9 && std::env::var("NESLE_PDL").map_or(true, |v| v != "0");
        Ok(Gpu {
            sms,
            image,
            pdl,
            step: f("nesle_step")?,
            reset: f("nesle_reset_from_bank")?,
            gather_ram: f("nesle_gather_ram")?,
            write_ram: f("nesle_write_ram")?,
            gray84: f("nesle_gray84")?,
            rgb: f("nesle_rgb")?,
            draw_lines: f("nesle_draw_lines")?,
            redraw: f("nesle_redraw")?,
            gray84_redrawn: f("nesle_gray84_redrawn")?,
            order_tiles: f("nesle_order_tiles")?,
            order_stage: f("nesle_order_stage")?,
            order_out: f("nesle_order_out")?,
            ctx,
            stream,
        })
    }

    /// (free, total) bytes of device memory.
    pub(crate) fn memory(&self) -> Result<(usize, usize), Error> {
        self.ctx.mem_get_info().map_err(cuda)
    }

    pub(crate) fn name(&self) -> String {
        self.ctx.name().unwrap_or_else(|_| "unknown GPU".into())
    }

    /// The GPU's compute capability, SMs, driver version and kernel image, and the step
    /// kernel's launch for `n_envs` envs (`lockstep`: as [`step_block`] takes it), from the
    /// driver; `device_bytes` is the batch's to give.
    pub(crate) fn report(&self, n_envs: usize, lockstep: bool, device_bytes: usize) -> Result<DeviceReport, Error> {
        // The occupancy query runs in the current context, which this thread may not have yet.
        self.ctx.bind_to_thread().map_err(cuda)?;
        let (major, minor) = self.ctx.compute_capability().map_err(cuda)?;
        let block = step_block(n_envs, self.sms, lockstep);
        let max_threads = self
            .ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
            .map_err(cuda)?;
        let step = StepLaunch {
            registers: self.step.num_regs().map_err(cuda)?.max(0) as u32,
            local_bytes: self.step.local_size_bytes().map_err(cuda)?.max(0) as u32,
            block,
            blocks_per_sm: self.step.occupancy_max_active_blocks_per_multiprocessor(block, 0, None).map_err(cuda)?,
            max_warps_per_sm: max_threads.max(0) as u32 / 32,
        };
        Ok(DeviceReport {
            device: self.name(),
            compute_capability: (major.max(0) as u32, minor.max(0) as u32),
            sms: self.sms,
            driver: driver_version()?,
            image: self.image.clone(),
            step,
            device_bytes,
            n_envs,
        })
    }

    pub(crate) fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>, Error> {
        // Never a zero-length allocation: kernels take a valid pointer even for empty CHR.
        self.stream.alloc_zeros::<u8>(bytes.max(1)).map_err(cuda)
    }

    pub(crate) fn upload(&self, src: &[u8], dst: &mut CudaSlice<u8>, at: usize) -> Result<(), Error> {
        if at + src.len() > dst.len() {
            return Err(Error::BadArgument("upload out of range".into()));
        }
        self.settle_for_copy()?;
        let mut view = dst.slice_mut(at..at + src.len());
        self.stream.memcpy_htod(src, &mut view).map_err(cuda)
    }

    pub(crate) fn download<T: cudarc::driver::DeviceRepr>(
        &self,
        src: &CudaSlice<T>,
        at: usize,
        dst: &mut [T],
    ) -> Result<(), Error> {
        if at + dst.len() > src.len() {
            return Err(Error::BadArgument("download out of range".into()));
        }
        self.settle_for_copy()?;
        let view = src.slice(at..at + dst.len());
        self.stream.memcpy_dtoh(&view, dst).map_err(cuda)?;
        self.synchronize()
    }

    /// Waits for the stream; with `NESLE_SYNC_TIMEOUT` set, gives up after that long with
    /// [`Error::Timeout`] instead of blocking forever on a kernel that never ends.
    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        let Some(limit) = sync_timeout() else {
            return self.stream.synchronize().map_err(cuda);
        };
        let done = self.stream.record_event(None).map_err(cuda)?;
        let start = std::time::Instant::now();
        while !done.try_is_complete().map_err(cuda)? {
            if start.elapsed() >= limit {
                return Err(Error::Timeout { millis: limit.as_millis() as u64 });
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        Ok(())
    }

    pub(crate) fn fence(&self) -> Result<Fence, Error> {
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING;
        Ok(Fence(self.stream.record_event(Some(flags)).map_err(cuda)?))
    }

    /// Before a copy to or from pageable host memory (which can itself block behind a running
    /// kernel): the timed wait, when a timeout is set.
    fn settle_for_copy(&self) -> Result<(), Error> {
        if sync_timeout().is_some() {
            self.synchronize()?;
        }
        Ok(())
    }

    /// The raw device address of a buffer (for zero-copy consumers such as DLPack).
    pub(crate) fn ptr(&self, buf: &CudaSlice<u8>) -> u64 {
        let (p, _sync) = buf.device_ptr(&self.stream);
        p
    }

    /// Launches `nesle_step` over `n_envs` states (`lockstep`: they run alike, [`step_block`]).
    /// `slots`: the envs that run, a thread each: `n_envs`, or fewer with an `order` naming
    /// that many distinct envs (the others are not touched; lines and queue must then be None).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step(
        &self,
        states: &mut CudaSlice<u8>,
        packing: Packing,
        prg: &CudaSlice<u8>,
        code: &CudaSlice<u8>,
        chr: &CudaSlice<u8>,
        actions: &CudaSlice<u8>,
        n_envs: usize,
        slots: usize,
        frames: u32,
        pixels: Option<&mut CudaSlice<u8>>,
        order: Option<&CudaSlice<u32>>,
        ran: &mut CudaSlice<u32>,
        lines: Option<&mut CudaSlice<u8>>,
        queue: Option<&mut CudaSlice<u32>>,
        lockstep: bool,
    ) -> Result<(), Error> {
        check_len("states", states.len(), n_envs * packing.stride())?;
        check_len("actions", actions.len(), n_envs)?;
        check_len("ran", ran.len(), n_envs)?;
        if let Some(l) = &lines {
            check_len("line logs", l.len(), n_envs * LINE_LOG_BYTES)?;
        }
        if let Some(o) = order {
            check_len("order", o.len(), slots)?;
        }
        let some = slots < n_envs;
        if slots > n_envs || (some && (order.is_none() || lines.is_some() || queue.is_some())) {
            return Err(Error::BadArgument(format!("{slots} slots for {n_envs} envs")));
        }
        if let Some(q) = &queue {
            check_len("queue", q.len(), n_envs + 3)?;
        }
        if let Some(p) = &pixels {
            check_len("pixels", p.len(), n_envs * crate::PIXELS_PER_ENV)?;
        }
        if slots == 0 {
            return Ok(());
        }
        let (n, stride, bits) = (slots as u32, packing.stride() as u32, packing.bits());
        let null: u64 = 0;
        let mut b = self.stream.launch_builder(&self.step);
        b.arg(states).arg(&stride).arg(&bits).arg(prg).arg(code).arg(chr).arg(actions).arg(&n).arg(&frames);
        match pixels {
            Some(p) => b.arg(p),
            None => b.arg(&null),
        };
        match order {
            Some(o) => b.arg(o),
            None => b.arg(&null),
        };
        b.arg(ran);
        match lines {
            Some(l) => b.arg(l),
            None => b.arg(&null),
        };
        match queue {
            Some(q) => b.arg(q),
            None => b.arg(&null),
        };
        // SAFETY: the argument list matches `nesle_step` in kernels/nesle.cu: (u8*, u32, u32,
        // const u8*, const u32*, const u8*, const u8*, u32, u32, u8*, const u32*, u32*,
        // LineLog*, u32*), with a null u64 standing for a null pixel, order, line-log or queue
        // pointer; `ran` holds n_envs counts, `lines` n_envs LineLogs, `queue` n_envs + 3 words
        // zeroed by the caller (checked: each env takes one slot). `order` holds a permutation of
        // 0..n_envs (Batch checks it before upload), so every env is stepped once, by one thread;
        // or, with fewer slots, `slots` distinct envs below n_envs (Batch::step_masked lists a
        // mask's envs), each stepped once, the others untouched: the kernel's `n_envs` argument
        // counts slots, and every buffer is indexed by env.
        // Lengths were checked above: states holds n_envs states packed by `packing` (packed.rs,
        // the regions kernels/console.cuh's nes_convert copies; the FlatState layout is pinned by
        // the generated header), actions n_envs bytes, pixels n_envs frames; every state was
        // validated against this ROM before upload (Cart::load bounds its banking maps), so the
        // kernel's PRG/CHR reads stay inside `prg`/`chr`, and its code-word reads inside `code`,
        // which holds a word per PRG byte and then the 8 KiB of QF_NONE words that addresses
        // below $8000 read (`code_words`, Batch::new).
        // One thread per env touches only its own state and pixels (a thread may step several
        // envs in turn, never one env twice): no data race.
        unsafe { b.launch(step_grid(slots, step_block(slots, self.sms, lockstep), self.sms, step_blocks_per_sm())) }
            .map_err(cuda)?;
        Ok(())
    }

    /// Launches `nesle_draw_lines` then `nesle_redraw`: each env's picture of the frame its
    /// LineLog in `lines` records, drawn from `states` (after that frame) line by line, or run
    /// again from `snapshot` (the packed states before it; used as scratch). Adds the envs run
    /// again to `redrawn[0]`. With `gray` (the uploaded GrayTables and n_envs 84x84 pictures),
    /// the line renderer makes each drawn env's 84x84 picture, and `nesle_gray84_redrawn` then
    /// makes the redrawn ones'.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn draw_lines(
        &self,
        states: &CudaSlice<u8>,
        snapshot: &mut CudaSlice<u8>,
        packing: Packing,
        prg: &CudaSlice<u8>,
        code: &CudaSlice<u8>,
        chr: &CudaSlice<u8>,
        actions: &CudaSlice<u8>,
        lines: &mut CudaSlice<u8>,
        pixels: &mut CudaSlice<u8>,
        redrawn: &mut CudaSlice<u32>,
        queue: &mut CudaSlice<u32>,
        mut gray: Option<(&CudaSlice<u8>, &mut CudaSlice<u8>)>,
        n_envs: usize,
    ) -> Result<(), Error> {
        check_len("states", states.len(), n_envs * packing.stride())?;
        check_len("snapshot", snapshot.len(), n_envs * packing.stride())?;
        check_len("queue", queue.len(), n_envs + 3)?;
        if let Some((tables, out)) = &gray {
            check_len("tables", tables.len(), std::mem::size_of::<GrayTables>())?;
            check_len("gray84", out.len(), n_envs * GRAY_PIXELS)?;
        }
        check_len("redraw count", redrawn.len(), 1)?;
        check_len("actions", actions.len(), n_envs)?;
        check_len("line logs", lines.len(), n_envs * LINE_LOG_BYTES)?;
        check_len("pixels", pixels.len(), n_envs * PIXELS_PER_ENV)?;
        if n_envs == 0 {
            return Ok(());
        }
        let (n, stride, bits) = (n_envs as u32, packing.stride() as u32, packing.bits());
        // SAFETY: matches `nesle_draw_lines(const u8*, u32, u32, const u8*, LineLog*, u8*, u32, u32*,
        // u32*, const GrayTables*, u8*)`; `redrawn` one counter, added to atomically; lengths checked
        // above; `states` holds n_envs states packed by `packing` and validated against this ROM (its
        // CHR maps index inside `chr` or the state's CHR RAM), `lines` the LineLogs and `queue` the
        // n_envs + 3 words the nesle_step just launched fills (zeroed before it): the warps take the
        // slots one at a time and wait for each env there, which that launch puts in every slot. The
        // tables and the 84x84 pictures both null (a null u64) or both given. The warp drawing an env
        // touches only its log, picture and 84x84 picture.
        let null = 0u64;
        let cfg = lines_grid(n_envs, self.sms);
        // A block: the buffers' guards end with it, before the launches after it borrow them.
        {
            let (s, _s) = states.device_ptr(&self.stream);
            let (c, _c) = chr.device_ptr(&self.stream);
            let (l, _l) = lines.device_ptr_mut(&self.stream);
            let (p, _p) = pixels.device_ptr_mut(&self.stream);
            let (r, _r) = redrawn.device_ptr_mut(&self.stream);
            let (q, _q) = queue.device_ptr_mut(&self.stream);
            let (t, _t) = gray.as_ref().map_or((null, None), |(t, _)| {
                let (p, g) = t.device_ptr(&self.stream);
                (p, Some(g))
            });
            let (g, _g) = gray.as_mut().map_or((null, None), |(_, o)| {
                let (p, g) = o.device_ptr_mut(&self.stream);
                (p, Some(g))
            });
            let mut params: [*mut std::ffi::c_void; 11] = [
                &s as *const u64 as *mut _,
                &stride as *const u32 as *mut _,
                &bits as *const u32 as *mut _,
                &c as *const u64 as *mut _,
                &l as *const u64 as *mut _,
                &p as *const u64 as *mut _,
                &n as *const u32 as *mut _,
                &r as *const u64 as *mut _,
                &q as *const u64 as *mut _,
                &t as *const u64 as *mut _,
                &g as *const u64 as *mut _,
            ];
            // With `pdl`, launched as a dependent of the step before it: its blocks may be scheduled
            // once every step block runs (nesle_step's `griddepcontrol.launch_dependents`), on the
            // SMs the step leaves; it ends after the step (`griddepcontrol.wait`). kernel-notes #166.
            // Without, the same launch with no attribute starts after the step, its queue full.
            // SAFETY: a plain C struct and union; zero is a valid value of each field.
            let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attr.value.programmaticStreamSerializationAllowed = 1;
            let config = sys::CUlaunchConfig {
                gridDimX: cfg.grid_dim.0,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: cfg.block_dim.0,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: 0,
                hStream: self.stream.cu_stream(),
                attrs: &mut attr,
                numAttrs: u32::from(self.pdl),
            };
            // SAFETY: as above; `params` points at the 11 arguments in the kernel's order, alive
            // (with the buffers' guards) until the call returns, which copies them.
            unsafe {
                sys::cuLaunchKernelEx(&config, self.draw_lines.cu_function(), params.as_mut_ptr(), std::ptr::null_mut())
            }
            .result()
            .map_err(cuda)?;
        }
        let mut b = self.stream.launch_builder(&self.redraw);
        b.arg(snapshot)
            .arg(&stride)
            .arg(&bits)
            .arg(prg)
            .arg(code)
            .arg(chr)
            .arg(actions)
            .arg(&*lines)
            .arg(&mut *pixels)
            .arg(&n);
        // SAFETY: matches `nesle_redraw(u8*, u32, u32, const u8*, const u32*, const u8*, const
        // u8*, const LineLog*, u8*, u32)` (`code` as in `step`); the snapshot holds n_envs states packed as `states` (a copy made
        // before the logged frame), lengths checked above. One thread per env touches only its
        // own snapshot and picture.
        unsafe { b.launch(grid(n_envs)) }.map_err(cuda)?;
        if let Some((tables, out)) = gray {
            let mut b = self.stream.launch_builder(&self.gray84_redrawn);
            b.arg(&*pixels).arg(&*lines).arg(tables).arg(out).arg(&n);
            // SAFETY: matches `nesle_gray84_redrawn(const u8*, const LineLog*, const
            // GrayTables*, u8*, u32)`, blocks of LINES_WARPS warps as its bound says; lengths
            // checked above. Each warp loops over its envs and writes only their 84x84 pictures,
            // and only for the envs nesle_redraw drew.
            unsafe { b.launch(lines_grid(n_envs, self.sms)) }.map_err(cuda)?;
        }
        Ok(())
    }

    /// Launches `nesle_reset_from_bank`.
    pub(crate) fn reset_from_bank(
        &self,
        states: &mut CudaSlice<u8>,
        bank: &CudaSlice<u8>,
        bank_len: usize,
        mask: &CudaSlice<u8>,
        pick: &CudaSlice<u32>,
        n_envs: usize,
        packing: Packing,
    ) -> Result<(), Error> {
        let stride = packing.stride();
        check_len("states", states.len(), n_envs * stride)?;
        check_len("bank", bank.len(), bank_len * stride)?;
        check_len("mask", mask.len(), n_envs)?;
        check_len("pick", pick.len(), n_envs)?;
        if n_envs == 0 {
            return Ok(());
        }
        let (n, bl, st) = (n_envs as u32, bank_len as u32, stride as u32);
        let mut b = self.stream.launch_builder(&self.reset);
        b.arg(states).arg(bank).arg(&bl).arg(&st).arg(mask).arg(pick).arg(&n);
        // SAFETY: matches `nesle_reset_from_bank(u8*, const u8*, u32, u32, const u8*, const
        // u32*, u32)`; lengths checked above (states and bank packed alike, `stride` bytes
        // each); the kernel ignores picks >= bank_len; bank states were validated against the
        // ROM when uploaded.
        unsafe { b.launch(grid(n_envs)) }.map_err(cuda)?;
        Ok(())
    }

    /// Launches `nesle_gather_ram`: every env's 2 KiB of RAM into one dense buffer.
    pub(crate) fn gather_ram(
        &self,
        states: &CudaSlice<u8>,
        out: &mut CudaSlice<u8>,
        n_envs: usize,
        packing: Packing,
    ) -> Result<(), Error> {
        self.gather_ram_at(states, out, 0, n_envs, packing)
    }

    /// Launches `nesle_write_ram`: RAM byte `addr` of every env where `mask` is nonzero becomes
    /// `values[env]` (its low byte), or `value` with no `values`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_ram(
        &self,
        states: &mut CudaSlice<u8>,
        mask: &CudaSlice<u8>,
        values: Option<&CudaSlice<u32>>,
        value: u8,
        addr: usize,
        n_envs: usize,
        packing: Packing,
    ) -> Result<(), Error> {
        let stride = packing.stride();
        check_len("states", states.len(), n_envs * stride)?;
        check_len("mask", mask.len(), n_envs)?;
        if let Some(v) = values {
            check_len("values", v.len() * 4, n_envs * 4)?;
        }
        if addr >= 0x800 {
            return Err(Error::BadArgument(format!("RAM address {addr} past 2047")));
        }
        if n_envs == 0 {
            return Ok(());
        }
        let (n, st, value, addr) = (n_envs as u32, stride as u32, u32::from(value), addr as u32);
        let null: u64 = 0;
        let mut b = self.stream.launch_builder(&self.write_ram);
        b.arg(states).arg(&st).arg(mask);
        match values {
            Some(v) => b.arg(v),
            None => b.arg(&null),
        };
        b.arg(&value).arg(&addr).arg(&n);
        // SAFETY: matches `nesle_write_ram(u8*, u32, const u8*, const u32*, u32, u32, u32)`, a
        // null u64 standing for no `values`; lengths checked above; `addr` < 2048 keeps the
        // write inside the env's RAM (RAM sits in every packing's head, at its FlatState offset).
        unsafe { b.launch(grid(n_envs)) }.map_err(cuda)?;
        Ok(())
    }

    /// Launches `nesle_gray84`: `n_envs` pictures to 84x84 grayscale in `out`.
    pub(crate) fn gray84(
        &self,
        pixels: &CudaSlice<u8>,
        tables: &CudaSlice<u8>,
        out: &mut CudaSlice<u8>,
        n_envs: usize,
    ) -> Result<(), Error> {
        check_len("pixels", pixels.len(), n_envs * PIXELS_PER_ENV)?;
        check_len("tables", tables.len(), std::mem::size_of::<GrayTables>())?;
        check_len("gray84", out.len(), n_envs * GRAY_PIXELS)?;
        if n_envs == 0 {
            return Ok(());
        }
        let n = n_envs as u32;
        let mut b = self.stream.launch_builder(&self.gray84);
        b.arg(pixels).arg(tables).arg(out).arg(&n);
        // SAFETY: matches `nesle_gray84(const u8*, const GrayTables*, u8*, u32)`; lengths
        // checked above; `tables` holds the bytes of one GrayTables (uploaded by the batch).
        // Each block writes only the pictures it takes (env = block, block + grid, ...), each
        // output byte once; the kernel needs GRAY_THREADS threads a block.
        unsafe { b.launch(gray84_grid(n_envs, self.sms)) }.map_err(cuda)?;
        Ok(())
    }

    /// Launches `nesle_rgb`: `n_envs` pictures to 240x256 RGB in `out`.
    pub(crate) fn rgb(
        &self,
        pixels: &CudaSlice<u8>,
        table: &CudaSlice<u8>,
        out: &mut CudaSlice<u8>,
        n_envs: usize,
    ) -> Result<(), Error> {
        check_len("pixels", pixels.len(), n_envs * PIXELS_PER_ENV)?;
        check_len("table", table.len(), std::mem::size_of::<RgbTable>())?;
        check_len("rgb", out.len(), n_envs * RGB_BYTES)?;
        if n_envs == 0 {
            return Ok(());
        }
        let quads = (n_envs * PIXELS_PER_ENV / 4) as u64;
        let mut b = self.stream.launch_builder(&self.rgb);
        b.arg(pixels).arg(table).arg(out).arg(&quads);
        // SAFETY: matches `nesle_rgb(const u8*, const RgbTable*, u8*, u64)`; lengths checked
        // above (`quads` 4-pixel groups in, 12 bytes each out); `table` holds the bytes of one
        // RgbTable (uploaded by the batch). Each thread writes only its groups' bytes; the
        // kernel needs RGB_THREADS threads a block (its first 64 load the table).
        unsafe { b.launch(rgb_grid(quads, self.sms)) }.map_err(cuda)?;
        Ok(())
    }

    /// A device word for [`Gpu::order_by_work`]'s `moved` and a pinned host word to copy it to.
    pub(crate) fn moved_word(&self) -> Result<(CudaSlice<u32>, PinnedHostSlice<u32>), Error> {
        let word = self.stream.alloc_zeros::<u32>(1).map_err(cuda)?;
        // SAFETY: the host word is written by the copies into it before it is read
        // (Batch::last_sort_moved reads it only after a copy's event completed).
        let host = unsafe { self.ctx.alloc_pinned_with_flags::<u32>(1, 0) }.map_err(cuda)?;
        Ok((word, host))
    }

    /// The envs in order of `ran` into `order`, on the device (kernels/order.cuh): a bitonic
    /// network over `pairs` (n_envs rounded up to a power of two), the stages inside tiles of
    /// `ORDER_TILE` pairs in shared memory, the others a launch each; queued on the stream with
    /// nothing for the host to wait on. `moved[0]` ends 1 if an env's slot in `order` changed,
    /// else 0.
    pub(crate) fn order_by_work(
        &self,
        ran: &CudaSlice<u32>,
        pairs: &mut CudaSlice<u64>,
        order: &mut CudaSlice<u32>,
        moved: &mut CudaSlice<u32>,
        n_envs: usize,
    ) -> Result<(), Error> {
        let padded = n_envs.next_power_of_two();
        check_len("moved", moved.len(), 1)?;
        check_len("ran", ran.len(), n_envs)?;
        check_len("pairs", pairs.len(), padded)?;
        check_len("order", order.len(), n_envs)?;
        if n_envs == 0 {
            return Ok(());
        }
        let (n, p) = (n_envs as u32, padded as u32);
        let size = padded.min(ORDER_TILE) as u32;
        self.order_tiles(ran, pairs, n, 0, size)?;
        let mut k = size * 2;
        while k <= p {
            let mut j = k >> 1;
            while j >= size {
                let mut b = self.stream.launch_builder(&self.order_stage);
                b.arg(&mut *pairs).arg(&j).arg(&k).arg(&p);
                // SAFETY: matches `nesle_order_stage(u64*, u32, u32, u32)`; `pairs` holds
                // padded entries and i ^ j < padded for every i < padded (j < padded, a power
                // of two); of each exchanged pair only the thread with the lower index writes.
                unsafe { b.launch(grid(padded)) }.map_err(cuda)?;
                j >>= 1;
            }
            self.order_tiles(ran, pairs, n, k, size)?;
            k <<= 1;
        }
        self.stream.memset_zeros(&mut *moved).map_err(cuda)?;
        let mut b = self.stream.launch_builder(&self.order_out);
        b.arg(&*pairs).arg(order).arg(&n).arg(moved);
        // SAFETY: matches `nesle_order_out(const u64*, u32*, u32, u32*)`; lengths checked
        // above; `moved` one word, which threads only set to 1; blocks of ORDER_BLOCK threads,
        // the kernel's shared array, each reading pairs and writing order only below n.
        unsafe { b.launch(grid_of(n_envs, ORDER_BLOCK as u32)) }.map_err(cuda)?;
        Ok(())
    }

    /// `nesle_order_tiles` over all of `pairs` in blocks of `size` (a power of two, at most
    /// `ORDER_TILE`, dividing `pairs.len()`, checked by [`Gpu::order_by_work`]).
    fn order_tiles(
        &self,
        ran: &CudaSlice<u32>,
        pairs: &mut CudaSlice<u64>,
        n: u32,
        k: u32,
        size: u32,
    ) -> Result<(), Error> {
        let padded = pairs.len();
        let mut b = self.stream.launch_builder(&self.order_tiles);
        b.arg(ran).arg(pairs).arg(&n).arg(&k);
        // SAFETY: matches `nesle_order_tiles(const u32*, u64*, u32, u32)`; `ran` holds n and
        // `pairs` padded entries (checked by the caller); blocks of `size` threads (at most
        // ORDER_TILE, the kernel's shared array) cover the padded pairs exactly, and a thread
        // reads `ran` only below n; inside a block only the lower index of each exchanged pair
        // writes, with a barrier between stages.
        unsafe { b.launch(grid_of(padded, size)) }.map_err(cuda)?;
        Ok(())
    }

    /// [`Gpu::gather_ram`] into `out` from byte `at` on.
    pub(crate) fn gather_ram_at(
        &self,
        states: &CudaSlice<u8>,
        out: &mut CudaSlice<u8>,
        at: usize,
        n_envs: usize,
        packing: Packing,
    ) -> Result<(), Error> {
        check_len("states", states.len(), n_envs * packing.stride())?;
        check_len("ram", out.len().saturating_sub(at), n_envs * 0x800)?;
        if n_envs == 0 {
            return Ok(());
        }
        let stride = packing.stride();
        let st = stride as u32;
        // A thread a word: runs of GATHER_RUN envs keep a launch's threads well inside u32 (a
        // batch of up to that many is one run).
        for (first, count) in runs(n_envs, GATHER_RUN) {
            let n = count as u32;
            let src = states.slice(first * stride..(first + count) * stride);
            let mut view = out.slice_mut(at + first * 0x800..at + (first + count) * 0x800);
            let mut b = self.stream.launch_builder(&self.gather_ram);
            b.arg(&src).arg(&st).arg(&mut view).arg(&n);
            // SAFETY: matches `nesle_gather_ram(const u8*, u32, u8*, u32)`; lengths checked (RAM
            // sits in every packing's head, at its FlatState offset), on views of exactly
            // `count` states and `count` * 2048 bytes; a thread a word, those past the run's
            // last env return.
            unsafe { b.launch(grid_of(count * (0x800 / 8), 256)) }.map_err(cuda)?;
        }
        Ok(())
    }
}

/// `NESLE_SYNC_TIMEOUT`, seconds (read once): how long a wait for the GPU may take before it
/// fails with [`Error::Timeout`]; unset, 0 or unparsable: wait as long as it takes. The GPU
/// tests set it, so a stuck kernel fails them instead of hanging them.
fn sync_timeout() -> Option<std::time::Duration> {
    static T: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    *T.get_or_init(|| parse_timeout(&std::env::var("NESLE_SYNC_TIMEOUT").unwrap_or_default()))
}

fn parse_timeout(s: &str) -> Option<std::time::Duration> {
    // Past what a Duration holds (1e20 s): as good as no limit, so none, not a panic.
    s.trim().parse::<f64>().ok().filter(|t| *t > 0.0).and_then(|t| std::time::Duration::try_from_secs_f64(t).ok())
}

fn check_len(what: &str, have: usize, need: usize) -> Result<(), Error> {
    if have < need.max(1) {
        return Err(Error::BadArgument(format!("{what} buffer holds {have} bytes, {need} needed")));
    }
    Ok(())
}

/// The bytes of a GrayTables, for upload.
pub(crate) fn tables_as_bytes(t: &GrayTables) -> &[u8] {
    // SAFETY: GrayTables is #[repr(C)], made only of f32/u32 arrays (no padding: its size is
    // the sum of its fields', pinned by a test), so every byte is initialised.
    unsafe { std::slice::from_raw_parts((t as *const GrayTables).cast::<u8>(), std::mem::size_of::<GrayTables>()) }
}

/// A zeroed host buffer of `len` bytes, or [`Error::HostMemory`] when the host has no room for
/// it, where `vec![0; len]` would abort the process. Zeroed allocation is calloc, as `vec!`'s
/// is: the pages a download then fills were never written twice.
pub fn host_zeros(len: usize) -> Result<Vec<u8>, Error> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| Error::HostMemory { bytes: len })?;
    // SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(Error::HostMemory { bytes: len });
    }
    // SAFETY: a live allocation of `len` zeroed bytes from the global allocator with the layout
    // of a `Vec<u8>` of capacity `len`, which then owns and frees it.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

#[cfg(test)]
mod tests {
    use super::{check_aligned, default_step_block, grid_of, lines_grid, parse_timeout, runs, step_grid};
    use std::time::Duration;

    #[test]
    fn the_step_grid_covers_every_env_and_caps_blocks_per_sm() {
        // No cap: one thread per env, the last block partly idle.
        let g = step_grid(65_537, 128, 132, 0);
        assert_eq!((g.grid_dim.0, g.block_dim.0), (513, 128));
        // Capped: 132 SMs x 2 blocks; the kernel's grid-stride loop covers the rest.
        assert_eq!(step_grid(65_536, 128, 132, 2).grid_dim.0, 264);
        // A cap above what the envs need changes nothing.
        assert_eq!(step_grid(1_000, 128, 132, 2).grid_dim.0, 8);
    }

    #[test]
    fn the_line_renderers_grid_is_what_the_gpu_holds_at_once_and_no_more_than_the_envs_need() {
        // 6 blocks of 4 warps an SM; each warp then takes envs from the queue until it is empty.
        let g = lines_grid(65_536, 132);
        assert_eq!((g.grid_dim.0, g.block_dim.0), (792, 128));
        // Fewer envs than warps: a warp an env, the last block partly idle.
        assert_eq!(lines_grid(9, 132).grid_dim.0, 3);
        assert_eq!(lines_grid(0, 0).grid_dim.0, 1);
    }

    #[test]
    fn the_step_block_grows_only_as_far_as_its_blocks_fill_the_sms() {
        // 132 SMs: 512 from 128 blocks of 512 (4 SMs idle, 1/33), 256 from one block each.
        assert_eq!(default_step_block(131_072, 132, false), 512);
        assert_eq!(default_step_block(65_536, 132, false), 512);
        assert_eq!(default_step_block(128 * 512 - 511, 132, false), 512);
        assert_eq!(default_step_block(127 * 512, 132, false), 256);
        assert_eq!(default_step_block(256 * 132, 132, false), 256);
        assert_eq!(default_step_block(256 * 132 - 1, 132, false), 128);
        assert_eq!(default_step_block(4_096, 132, false), 128);
        // Small GPUs: 512 only when every SM gets its block.
        assert_eq!(default_step_block(6 * 512, 6, false), 512);
        assert_eq!(default_step_block(5 * 512, 6, false), 256);
        assert_eq!(default_step_block(1, 1, false), 128);
        assert_eq!(default_step_block(1, 0, false), 128);
        // Envs in lockstep: 256 where every SM gets a block, never 512.
        assert_eq!(default_step_block(65_536, 132, true), 256);
        assert_eq!(default_step_block(131_072, 132, true), 256);
        assert_eq!(default_step_block(256 * 132, 132, true), 256);
        assert_eq!(default_step_block(256 * 132 - 1, 132, true), 128);
        assert_eq!(default_step_block(16_384, 132, true), 128);
    }

    #[test]
    fn the_sync_timeout_is_seconds_and_off_unless_positive() {
        assert_eq!(parse_timeout("2.5"), Some(Duration::from_millis(2500)));
        assert_eq!(parse_timeout(" 120 "), Some(Duration::from_secs(120)));
        for off in ["", "0", "-3", "soon", "inf", "NaN", "1e20", "1e300"] {
            assert_eq!(parse_timeout(off), None, "{off:?}");
        }
    }

    #[test]
    fn a_device_address_off_its_alignment_is_refused_with_the_offset() {
        assert!(check_aligned(0x7000_0000, 8, "out").is_ok());
        assert!(check_aligned(0x7000_0003, 1, "device actions").is_ok());
        let err = check_aligned(0x7000_0003, 8, "out").unwrap_err();
        assert!(err.starts_with("out must start at a multiple of 8 bytes") && err.contains("address 3 past"), "{err}");
        assert!(check_aligned(0x7000_0004, 4, "pick").is_ok() && check_aligned(0x7000_0002, 4, "pick").is_err());
    }

    #[test]
    fn a_grid_counts_threads_past_u32_and_runs_cover_their_items_once() {
        assert_eq!(grid_of(1 << 33, 256).grid_dim.0, 1 << 25);
        assert_eq!(grid_of(257, 256).grid_dim.0, 2);
        assert_eq!(runs(10, 4).collect::<Vec<_>>(), [(0, 4), (4, 4), (8, 2)]);
        assert_eq!(runs(8, 4).collect::<Vec<_>>(), [(0, 4), (4, 4)]);
        assert_eq!(runs(0, 4).count(), 0);
        assert_eq!(runs(3, 4).collect::<Vec<_>>(), [(0, 3)], "up to a run's size: one launch");
        assert_eq!(step_grid(1 << 20, 128, u32::MAX, 8).grid_dim.0, (1 << 20) / 128, "no overflow");
    }
}

//! `CudaBatch`: N consoles of one ROM on one GPU (nes-cuda's [`Batch`]), with `CpuBatch`'s verbs.
//!
//! The host-copy verbs (`ram`, `pixels`, `rgb`, `save_state`, ...) return fresh NumPy arrays
//! and `bytes`, exactly as `CpuBatch` does: the same ROM, actions and states give the same
//! arrays and the same save-state blobs on both backends (blobs are nes-core's format, converted
//! through `Console::from_flat` / `to_flat`), so states move freely between them. The device
//! verbs (`ram_tensor`, `pixels_tensor`, and `step` given a CUDA tensor) never touch the host;
//! see `dlpack.rs` for their lifetime and stream rules.
//!
//! nes-cuda's `Batch` runs steps, bulk resets from a bank of states, RAM writes (`write_ram`,
//! which a game's env may call every step) and whole-state uploads. The verbs it has no kernel
//! for (`set_render`, soft `reset`, controller 2) are *patches*: download the affected envs'
//! states, edit them on the host, upload them through the reset bank. They move one packed
//! state per touched env (12.6 KiB for SMB, at most 23 KiB), so they are for reset-time work,
//! and a host mirror of each env's render switch and controller-2 buttons keeps the common case
//! (no change) free.
//!
//! Pixels: a batch built with `render=False` has no picture buffer (60 KiB per env); the first
//! step after any env's render switch is turned on rebuilds the batch with one (views made
//! before that keep the old buffers alive, but no longer follow the batch).

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use nes_core::flat::FlatState;
use nes_core::{palette, Console};
use nes_cuda::picture::GRAY_SIZE;
use nes_cuda::{Batch, BatchConfig, Error, Fence, RomImage, PIXELS_PER_ENV, REGROUP_EVERY};
use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rayon::prelude::*;

use crate::batch::{
    bool_mask, button_pads, env_index, gib, int, ram_value, step_frames, to_numpy, RamValue, MAX_TRACE_FRAMES,
};
use crate::dlpack::{self, Borrowed, DLDevice, DLPackView, Producer, KDL_CUDA};
use crate::error::{cuda_error, panic_error};
use crate::{HEIGHT, RAM_SIZE, WIDTH};

/// Calls whose borrowed memory may wait for the GPU at once before a call waits for them all:
/// an environment's step borrows twice (the step, the restarts), so a few steps' worth.
const MAX_IN_FLIGHT: usize = 16;

/// The nes-cuda batch, shared with the DLPack views made from it (they keep it alive).
struct Shared(Mutex<Batch>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Batch> {
        // A poisoned lock means a panic mid-call; the CudaBatch is poisoned too and refuses
        // further calls, so views may still synchronize and read.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Producer for Shared {
    fn synchronize(&self) -> PyResult<()> {
        self.lock().synchronize().map_err(cuda_error)
    }
}

/// Where a step's buttons come from.
enum Actions {
    /// `[pad1, pad2]` per env from a NumPy array.
    Host(Vec<[u8; 2]>),
    /// A CUDA uint8 tensor of pad-1 buttons, read in place.
    Device { ptr: u64, len: usize },
}

struct Inner {
    batch: Arc<Shared>,
    rom: RomImage,
    /// The console just powered on: parses blobs for `load_state`/`restore`.
    power_on: Console,
    power_on_flat: FlatState,
    device: usize,
    n: usize,
    /// `BatchConfig::regroup_every`, kept for rebuilds.
    regroup_every: u32,
    /// Host mirrors of every env's `ppu_render_pixels` and `pad_buttons[1]`.
    render: Vec<u8>,
    pad2: Vec<u8>,
    /// The single state in the reset bank, when `restore` put it there (saves re-uploads).
    bank_state: Option<FlatState>,
    /// The start states of `reset_from_bank` (`set_bank`), and whether the device bank holds them.
    starts: Vec<FlatState>,
    starts_loaded: bool,
    /// A stream for wrapping torch's pointers (made on the first device-actions step).
    ext: Option<Arc<cudarc::driver::CudaStream>>,
}

impl Inner {
    fn has_pixels(&self) -> bool {
        self.batch.lock().device_pointers().pixels.is_some()
    }

    /// Envs `envs` get `f(state)`: download, edit, upload through the bank.
    fn patch(&mut self, envs: &[usize], mut f: impl FnMut(&mut FlatState) -> Result<(), Error>) -> Result<(), Error> {
        if envs.is_empty() {
            return Ok(());
        }
        let shared = self.batch.clone();
        let mut batch = shared.lock();
        // One big download beats many small ones (each a round trip) past ~1/8 of the batch.
        // Reserved first: a copy of many envs' states the host cannot hold is a MemoryError.
        let mut states: Vec<FlatState> = Vec::new();
        let bytes = envs.len().saturating_mul(std::mem::size_of::<FlatState>());
        states.try_reserve_exact(envs.len()).map_err(|_| Error::HostMemory { bytes })?;
        if envs.len() * 8 > self.n {
            let all = batch.states_to_host()?;
            states.extend(envs.iter().map(|&i| all[i]));
        } else {
            for &i in envs {
                states.push(batch.save_state(i)?);
            }
        }
        for s in &mut states {
            f(s)?;
        }
        for (s, &i) in states.iter().zip(envs) {
            self.render[i] = s.ppu_render_pixels;
            self.pad2[i] = s.pad_buttons[1];
        }
        self.bank_state = None;
        self.starts_loaded = false;
        upload(&mut batch, envs, &states, self.n)
    }

    /// Every env where `mask` is true takes `state`.
    fn restore(&mut self, state: &FlatState, mask: &[bool]) -> Result<(), Error> {
        if !mask.iter().any(|&m| m) {
            return Ok(());
        }
        let shared = self.batch.clone();
        let mut batch = shared.lock();
        if self.bank_state.as_ref() != Some(state) {
            batch.set_bank(std::slice::from_ref(state))?;
            self.bank_state = Some(*state);
            self.starts_loaded = false;
        }
        let m: Vec<u8> = mask.iter().map(|&b| b as u8).collect();
        batch.reset_masked(&m, None)?;
        for (i, _) in mask.iter().enumerate().filter(|(_, &b)| b) {
            self.render[i] = state.ppu_render_pixels;
            self.pad2[i] = state.pad_buttons[1];
        }
        Ok(())
    }

    /// Rebuilds the batch with a picture buffer when an env is about to draw without one.
    fn ensure_pixels(&mut self) -> Result<(), Error> {
        if self.render.iter().all(|&r| r == 0) || self.has_pixels() {
            return Ok(());
        }
        let states = self.batch.lock().states_to_host()?;
        let config = BatchConfig {
            device: self.device,
            pixels: true,
            regroup_every: self.regroup_every,
            ..BatchConfig::default()
        };
        let mut fresh = Batch::with_state(self.rom.clone(), self.n, config, &states[0])?;
        let all: Vec<usize> = (0..self.n).collect();
        upload(&mut fresh, &all, &states, self.n)?;
        self.batch = Arc::new(Shared(Mutex::new(fresh)));
        self.bank_state = None;
        self.starts_loaded = false;
        Ok(())
    }

    /// Patches controller 2 where `actions` changes it (device actions release it), of the envs
    /// in `mask` only (all without one).
    fn sync_pad2(&mut self, actions: &Actions, mask: Option<&[u8]>) -> Result<(), Error> {
        let zeros;
        let pad2: &[u8] = match actions {
            Actions::Host(p) => {
                zeros = p.iter().map(|p| p[1]).collect::<Vec<u8>>();
                &zeros
            }
            // Device actions are pad 1 only; pad 2 is released, as for (N,) host actions.
            Actions::Device { .. } => {
                zeros = vec![0u8; self.n];
                &zeros
            }
        };
        if pad2 != self.pad2.as_slice() {
            let chosen = |i: usize| mask.is_none_or(|m| m[i] != 0);
            let envs: Vec<usize> = (0..self.n).filter(|&i| pad2[i] != self.pad2[i] && chosen(i)).collect();
            let want = pad2.to_vec();
            let mut k = 0;
            self.patch(&envs, |s| {
                s.pad_buttons[1] = want[envs[k]];
                k += 1;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// `mask`: step only these envs (host actions only).
    fn step(&mut self, actions: &Actions, frames: u32, mask: Option<&[u8]>) -> Result<(), Error> {
        self.ensure_pixels()?;
        self.sync_pad2(actions, mask)?;
        match (actions, mask) {
            (Actions::Host(p), mask) => {
                let pad1: Vec<u8> = p.iter().map(|p| p[0]).collect();
                match mask {
                    Some(m) => self.batch.lock().step_masked(&pad1, frames, m),
                    None => self.batch.lock().step(&pad1, frames),
                }
            }
            (Actions::Device { .. }, Some(_)) => {
                Err(Error::BadArgument("a masked step takes host actions (a NumPy array)".into()))
            }
            (Actions::Device { ptr, len }, None) => {
                if self.ext.is_none() {
                    self.ext = Some(dlpack::borrow_stream(self.device)?);
                }
                let ext = self.ext.as_ref().expect("set above");
                dlpack::step_borrowed(&mut self.batch.lock(), ext, *ptr, *len, frames)
            }
        }
    }
}

impl Inner {
    fn ext(&mut self) -> Result<Arc<cudarc::driver::CudaStream>, Error> {
        if self.ext.is_none() {
            self.ext = Some(dlpack::borrow_stream(self.device)?);
        }
        Ok(self.ext.clone().expect("set above"))
    }

    /// `step` recording the RAM after every frame into the caller's device buffer `out`
    /// (`out_len` bytes at `out_ptr`: frames x N x 2048), and with `gray` (a device buffer of N
    /// x 84 x 84 bytes) every env's 84x84 picture made as the last frame is drawn.
    fn step_trace_into(
        &mut self,
        actions: &Actions,
        frames: u32,
        out_ptr: u64,
        out_len: usize,
        gray: Option<(u64, usize)>,
    ) -> Result<(), Error> {
        self.ensure_pixels()?;
        self.sync_pad2(actions, None)?;
        let ext = self.ext()?;
        let shared = self.batch.clone();
        let mut batch = shared.lock();
        if let Actions::Host(p) = actions {
            let pad1: Vec<u8> = p.iter().map(|p| p[0]).collect();
            batch.set_actions(&pad1)?;
        }
        let step = |batch: &mut Batch, a: Option<&cudarc::driver::CudaSlice<u8>>| {
            dlpack::with_borrowed(&ext, out_ptr, out_len, |out| match gray {
                Some((g, g_len)) => {
                    dlpack::with_borrowed(&ext, g, g_len, |g| batch.step_trace_gray84(a, frames, out, g))
                }
                None => batch.step_trace(a, frames, out),
            })
        };
        match actions {
            Actions::Host(_) => step(&mut batch, None),
            Actions::Device { ptr, len } => dlpack::with_borrowed(&ext, *ptr, *len, |a| step(&mut batch, Some(a))),
        }
    }

    /// Env i takes start state `pick[i]` where `mask[i]`; both on the device.
    fn reset_from_bank(&mut self, mask_ptr: u64, pick_ptr: u64) -> Result<(), Error> {
        if self.starts.is_empty() {
            return Err(Error::BadArgument("reset_from_bank needs set_bank first".into()));
        }
        let ext = self.ext()?;
        let n = self.n;
        let shared = self.batch.clone();
        let mut batch = shared.lock();
        if !self.starts_loaded {
            batch.set_bank(&self.starts)?;
            self.bank_state = None;
            self.starts_loaded = true;
        }
        dlpack::with_borrowed::<u8, _>(&ext, mask_ptr, n, |mask| {
            dlpack::with_borrowed::<u32, _>(&ext, pick_ptr, n, |pick| batch.reset_masked_device(mask, pick))
        })?;
        // The host mirrors of the render switch and controller 2 stay right without looking at
        // the mask when every start state agrees with every mirror (the usual case); else read
        // the mask and picks back (a synchronization).
        let (r0, p0) = (self.starts[0].ppu_render_pixels, self.starts[0].pad_buttons[1]);
        let uniform = self.starts.iter().all(|s| s.ppu_render_pixels == r0 && s.pad_buttons[1] == p0);
        if uniform && self.render.iter().all(|&r| r == r0) && self.pad2.iter().all(|&p| p == p0) {
            return Ok(());
        }
        let mut mask = vec![0u8; n];
        let mut pick = vec![0u32; n];
        batch.synchronize()?;
        let cuda = |e| Error::Cuda(format!("{e:?}"));
        dlpack::with_borrowed::<u8, _>(&ext, mask_ptr, n, |m| ext.memcpy_dtoh(m, &mut mask)).map_err(cuda)?;
        dlpack::with_borrowed::<u32, _>(&ext, pick_ptr, n, |p| ext.memcpy_dtoh(p, &mut pick)).map_err(cuda)?;
        ext.synchronize().map_err(cuda)?;
        for i in 0..n {
            if let Some(s) = self.starts.get(pick[i] as usize).filter(|_| mask[i] != 0) {
                self.render[i] = s.ppu_render_pixels;
                self.pad2[i] = s.pad_buttons[1];
            }
        }
        Ok(())
    }
}

/// Uploads `states` into envs `envs` of `batch` (a bank of them, then one masked reset), and
/// shrinks the bank back to one state.
fn upload(batch: &mut Batch, envs: &[usize], states: &[FlatState], n: usize) -> Result<(), Error> {
    batch.set_bank(states)?;
    let mut mask = vec![0u8; n];
    let mut pick = vec![0u32; n];
    for (k, &i) in envs.iter().enumerate() {
        mask[i] = 1;
        pick[i] = k as u32;
    }
    batch.reset_masked(&mask, Some(&pick))?;
    if states.len() > 64 {
        batch.set_bank(&states[..1])?; // frees the big bank (after the reset, stream-ordered)
    }
    Ok(())
}

/// N NES consoles running one ROM on one CUDA GPU.
#[pyclass(module = "nesle._native")]
pub struct CudaBatch {
    inner: Option<Inner>,
    /// The producer capsules of the device memory queued work reads or writes (actions, traces,
    /// pictures), each batch behind a fence: kept until the GPU has passed it, so torch cannot
    /// reuse that memory while a kernel still uses it.
    in_flight: VecDeque<(Option<Fence>, Vec<Py<PyAny>>)>,
    poisoned: bool,
    device: usize,
    n: usize,
}

impl std::fmt::Debug for CudaBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBatch").field("num_envs", &self.n).field("device", &self.device).finish_non_exhaustive()
    }
}

impl CudaBatch {
    /// Runs `f` on the open batch with the GIL released; errors mapped, panics caught.
    fn run<R: Send>(&mut self, py: Python<'_>, f: impl FnOnce(&mut Inner) -> Result<R, Error> + Send) -> PyResult<R> {
        self.settle(py)?;
        let inner = self.open()?;
        match py.detach(|| catch_unwind(AssertUnwindSafe(|| f(inner)))) {
            Ok(r) => r.map_err(cuda_error),
            Err(payload) => {
                self.poisoned = true;
                Err(panic_error(payload))
            }
        }
    }

    fn open(&mut self) -> PyResult<&mut Inner> {
        if self.poisoned {
            return Err(PyRuntimeError::new_err(
                "this CudaBatch is unusable after an internal panic; create a new one",
            ));
        }
        self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("this CudaBatch is closed"))
    }

    /// Lets go of the borrowed memory of the work the GPU has finished, without waiting for
    /// the rest (a step's host work then overlaps the GPU's); waits only when more than
    /// [`MAX_IN_FLIGHT`] calls are still queued.
    fn settle(&mut self, py: Python<'_>) -> PyResult<()> {
        while let Some((Some(fence), _)) = self.in_flight.front() {
            if !fence.passed().map_err(cuda_error)? {
                break;
            }
            self.in_flight.pop_front();
        }
        let unfenced = self.in_flight.front().is_some_and(|(f, _)| f.is_none());
        if self.in_flight.len() > MAX_IN_FLIGHT || unfenced {
            self.release_all(py)?;
        }
        Ok(())
    }

    /// Waits for all queued work, then lets go of all borrowed memory.
    fn release_all(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.in_flight.is_empty() {
            return Ok(());
        }
        if let Some(inner) = &self.inner {
            let shared = inner.batch.clone();
            py.detach(move || shared.synchronize())?;
        }
        self.in_flight.clear();
        Ok(())
    }

    /// Keeps `capsules` until the GPU has finished the work queued so far.
    fn hold(&mut self, capsules: impl IntoIterator<Item = Py<PyAny>>) {
        let capsules: Vec<Py<PyAny>> = capsules.into_iter().collect();
        if capsules.is_empty() {
            return;
        }
        // Without a fence (an event could not be made) the next call waits for everything.
        let fence = self.inner.as_ref().and_then(|inner| inner.batch.lock().fence().ok());
        self.in_flight.push_back((fence, capsules));
    }

    /// A picture of every env made on the device by `make` into `out`, a contiguous CUDA uint8
    /// tensor of `shape` (`what` in the error) on this batch's device; asynchronous; pictures
    /// turned on first.
    fn picture_into<'py>(
        &mut self,
        py: Python<'py>,
        out: Bound<'py, PyAny>,
        shape: &[i64],
        what: &str,
        make: fn(&mut Batch, &mut cudarc::driver::CudaSlice<u8>) -> Result<(), Error>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if dlpack::cuda_device_of(&out)?.is_none() {
            return Err(PyTypeError::new_err(format!("out must be a CUDA tensor (uint8, {what})")));
        }
        let dst = dlpack::borrow_cuda(&out, dlpack::Element::U8, shape, self.device as i32, 1, "out", true)?;
        let (ptr, len) = (dst.ptr, dst.len);
        self.run(py, |inner| {
            inner.ensure_pixels()?;
            let ext = inner.ext()?;
            let shared = inner.batch.clone();
            let mut batch = shared.lock();
            dlpack::with_borrowed(&ext, ptr, len, |o| make(&mut batch, o))
        })?;
        self.hold([dst.capsule]);
        Ok(out)
    }

    /// NumPy buttons, or a CUDA tensor read in place.
    fn actions(&self, actions: &Bound<'_, PyAny>) -> PyResult<(Actions, Option<Borrowed>)> {
        if !actions.is_instance_of::<numpy::PyUntypedArray>() {
            if let Some(dev) = dlpack::cuda_device_of(actions)? {
                if dev as usize != self.device {
                    return Err(PyValueError::new_err(format!(
                        "actions are on cuda:{dev} but this batch runs on cuda:{}",
                        self.device
                    )));
                }
                // Stream 1: the producer orders its writes before the legacy default stream,
                // which nes-cuda launches on (see the module doc of dlpack.rs).
                let b = dlpack::borrow_cuda_u8(actions, self.n, dev, 1)?;
                return Ok((Actions::Device { ptr: b.ptr, len: b.len }, Some(b)));
            }
        }
        Ok((Actions::Host(button_pads(actions, self.n)?), None))
    }

    fn view(&mut self, pixels: bool) -> PyResult<DLPackView> {
        let inner = self.open()?;
        let p = inner.batch.lock().device_pointers();
        let device = DLDevice { device_type: KDL_CUDA, device_id: inner.device as i32 };
        let n = inner.n as i64;
        let owner = inner.batch.clone();
        let (data, shape, strides) = if pixels {
            let px = p.pixels.ok_or_else(|| {
                PyValueError::new_err(
                    "this batch has no picture buffer (built with render=False): call set_render(True) and step first",
                )
            })?;
            (px, vec![n, HEIGHT as i64, WIDTH as i64], vec![PIXELS_PER_ENV as i64, WIDTH as i64, 1])
        } else {
            let at = p.states + std::mem::offset_of!(FlatState, ram) as u64;
            (at, vec![n, RAM_SIZE as i64], vec![p.state_size as i64, 1])
        };
        Ok(DLPackView::new(owner.clone(), Some(owner), data, shape, strides, device))
    }
}

impl Drop for CudaBatch {
    fn drop(&mut self) {
        // Torch may reuse the borrowed actions' memory once their capsule goes: finish first.
        if !self.in_flight.is_empty() {
            if let Some(inner) = &self.inner {
                let _ = inner.batch.lock().synchronize();
            }
        }
    }
}

/// (available, why not) per device, probed once: a 1-env batch of a blank ROM.
fn probe(device: usize) -> (bool, String) {
    static CACHE: OnceLock<Mutex<HashMap<usize, (bool, String)>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&device) {
        return hit.clone();
    }
    let mut blank = b"NES\x1a\x02\x01\x01\x00".to_vec();
    blank.resize(16 + 2 * 0x4000 + 0x2000, 0);
    let config = BatchConfig { device, pixels: false, ..BatchConfig::default() };
    let answer = match catch_unwind(|| Batch::new(&blank, 1, config)) {
        Ok(Ok(b)) => (true, format!("CUDA device {device}: {}", b.device_name())),
        Ok(Err(e)) => (false, e.to_string()),
        Err(_) => (false, "the CUDA driver panicked while probing".to_string()),
    };
    cache.lock().unwrap_or_else(|e| e.into_inner()).insert(device, answer.clone());
    answer
}

/// Whether `CudaBatch` can run here: `(True, "CUDA device 0: <name>")`, or `(False, why)`
/// (no kernels in this build, no driver, no such GPU). Probed once per device.
#[pyfunction]
#[pyo3(signature = (device = 0))]
pub fn cuda_available(py: Python<'_>, #[pyo3(from_py_with = int)] device: i64) -> (bool, String) {
    if device < 0 {
        return (false, format!("no CUDA device {device}"));
    }
    py.detach(|| probe(device as usize))
}

#[pymethods]
impl CudaBatch {
    /// Power on `num_envs` consoles with the iNES file `rom` on CUDA device `device`.
    #[new]
    #[pyo3(signature = (rom, num_envs, device = 0, *, render = true, regroup_every = REGROUP_EVERY as i64))]
    fn new(
        py: Python<'_>,
        rom: &[u8],
        #[pyo3(from_py_with = int)] num_envs: i64,
        #[pyo3(from_py_with = int)] device: i64,
        render: bool,
        #[pyo3(from_py_with = int)] regroup_every: i64,
    ) -> PyResult<Self> {
        if num_envs < 1 {
            return Err(PyValueError::new_err(format!("num_envs must be at least 1, got {num_envs}")));
        }
        if device < 0 {
            return Err(PyValueError::new_err(format!("device must be a CUDA ordinal (>= 0), got {device}")));
        }
        let Ok(regroup_every) = u32::try_from(regroup_every) else {
            return Err(PyValueError::new_err(format!(
                "regroup_every must be 0 (never) or a step count, got {regroup_every}"
            )));
        };
        let (n, device) = (num_envs as usize, device as usize);
        let built = py.detach(|| {
            catch_unwind(|| -> Result<Inner, Error> {
                let image = RomImage::new(rom)?;
                let power_on = Console::new(rom)?;
                let power_on_flat = image.power_on();
                let mut start = power_on_flat;
                start.ppu_render_pixels = render as u8;
                let batch = Batch::with_state(
                    image.clone(),
                    n,
                    BatchConfig { device, pixels: render, regroup_every, ..BatchConfig::default() },
                    &start,
                )?;
                Ok(Inner {
                    batch: Arc::new(Shared(Mutex::new(batch))),
                    rom: image,
                    power_on,
                    power_on_flat,
                    device,
                    n,
                    regroup_every,
                    render: vec![start.ppu_render_pixels; n],
                    pad2: vec![start.pad_buttons[1]; n],
                    bank_state: None,
                    starts: Vec::new(),
                    starts_loaded: false,
                    ext: None,
                })
            })
        });
        let inner = built.map_err(panic_error)?.map_err(cuda_error)?;
        Ok(CudaBatch { inner: Some(inner), in_flight: VecDeque::new(), poisoned: false, device, n })
    }

    #[getter]
    fn num_envs(&self) -> usize {
        self.n
    }

    /// The CUDA ordinal this batch runs on.
    #[getter]
    fn device(&self) -> usize {
        self.device
    }

    fn __len__(&self) -> usize {
        self.n
    }

    fn __repr__(&self) -> String {
        let state = if self.inner.is_none() { ", closed" } else { "" };
        format!("CudaBatch(num_envs={}, device={}{state})", self.n, self.device)
    }

    /// Hold `actions` on the controllers and run every console for `frames` frames; with
    /// `mask` (N bools, on the host), only the consoles where it is true, in a launch of their
    /// own: the others are not touched.
    /// Asynchronous: host-copy verbs, `synchronize` and DLPack exports wait for it.
    #[pyo3(signature = (actions, frames = 1, *, mask = None))]
    fn step(
        &mut self,
        py: Python<'_>,
        actions: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = int)] frames: i64,
        mask: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let frames = step_frames(frames)?;
        let mask = match mask {
            Some(m) => Some(bool_mask(Some(m), self.n)?.into_iter().map(u8::from).collect::<Vec<u8>>()),
            None => None,
        };
        let (actions, borrowed) = self.actions(actions)?;
        if mask.is_some() && matches!(actions, Actions::Device { .. }) {
            return Err(PyTypeError::new_err("a masked step takes host actions (a NumPy array), not a CUDA tensor"));
        }
        self.run(py, |inner| inner.step(&actions, frames, mask.as_deref()))?;
        self.hold(borrowed.map(|b| b.capsule));
        Ok(())
    }

    /// Like `step`, and return the work RAM after every frame: (frames, N, 2048) uint8, a new
    /// NumPy array; or, with `out` (a contiguous CUDA uint8 tensor of that shape on this
    /// batch's device), written into `out` on the GPU, asynchronously, and `out` returned: the
    /// device-resident path (nothing is copied to the host, nothing waits). With `out`,
    /// `gray84` (a contiguous CUDA uint8 tensor of shape (N, 84, 84)) receives every env's
    /// 84x84 picture after the step, the bytes `gray84` would write, made as the last frame is
    /// drawn (on GPUs that can, beside the step's slowest consoles).
    #[pyo3(signature = (actions, frames, *, out = None, gray84 = None))]
    fn step_trace<'py>(
        &mut self,
        py: Python<'py>,
        actions: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = int)] frames: i64,
        out: Option<Bound<'py, PyAny>>,
        gray84: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (actions, borrowed) = self.actions(actions)?;
        if !(1..=MAX_TRACE_FRAMES).contains(&frames) {
            return Err(PyValueError::new_err(format!(
                "frames must be between 1 and {MAX_TRACE_FRAMES}, got {frames}"
            )));
        }
        let n = self.n;
        if gray84.is_some() && out.is_none() {
            return Err(PyValueError::new_err("gray84 goes with out: the device-resident path"));
        }
        if let Some(out) = out {
            if dlpack::cuda_device_of(&out)?.is_none() {
                return Err(PyTypeError::new_err(
                    "out must be a CUDA tensor (uint8, frames x N x 2048) for a CudaBatch",
                ));
            }
            let shape = [frames, n as i64, RAM_SIZE as i64];
            let dst = dlpack::borrow_cuda(&out, dlpack::Element::U8, &shape, self.device as i32, 1, "out", true)?;
            let gray = match &gray84 {
                Some(g) => {
                    if dlpack::cuda_device_of(g)?.is_none() {
                        return Err(PyTypeError::new_err("gray84 must be a CUDA tensor (uint8, N x 84 x 84)"));
                    }
                    let shape = [n as i64, GRAY_SIZE as i64, GRAY_SIZE as i64];
                    Some(dlpack::borrow_cuda(g, dlpack::Element::U8, &shape, self.device as i32, 1, "gray84", true)?)
                }
                None => None,
            };
            let (ptr, len) = (dst.ptr, dst.len);
            let g = gray.as_ref().map(|g| (g.ptr, g.len));
            self.run(py, |inner| inner.step_trace_into(&actions, frames as u32, ptr, len, g))?;
            self.hold(borrowed.map(|b| b.capsule).into_iter().chain([dst.capsule]).chain(gray.map(|g| g.capsule)));
            return Ok(out);
        }
        // Up to 2 MiB an env (1,024 frames of RAM): asked for before any frame runs, so a trace
        // too large for the host is a MemoryError, not an abort of the process.
        let len = (frames as usize).checked_mul(n * RAM_SIZE);
        let mut out = Vec::new();
        len.and_then(|len| out.try_reserve_exact(len).ok()).ok_or_else(|| {
            PyMemoryError::new_err(format!(
                "a trace of {frames} frames of {n} environments' RAM needs {:.1} GiB of host \
                 memory, more than could be allocated: pass out= (a CUDA tensor) or fewer frames",
                gib(frames as f64 * (n * RAM_SIZE) as f64)
            ))
        })?;
        let out = self.run(py, move |inner| {
            for _ in 0..frames {
                inner.step(&actions, 1, None)?;
                out.extend_from_slice(&inner.batch.lock().ram_to_host()?); // synchronizes
            }
            Ok(out)
        })?;
        drop(borrowed); // every frame has run: torch may have its tensor back
        Ok(to_numpy(py, out, [frames as usize, n, RAM_SIZE])?.into_any())
    }

    /// Every console's last picture as 84x84 grayscale (``nesle._native.gray84`` on the GPU,
    /// the same bytes), written into `out`, a contiguous CUDA uint8 tensor of shape
    /// (N, 84, 84) on this batch's device; asynchronous. Needs pictures (render on).
    fn gray84<'py>(&mut self, py: Python<'py>, out: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let shape = [self.n as i64, GRAY_SIZE as i64, GRAY_SIZE as i64];
        self.picture_into(py, out, &shape, "N x 84 x 84", Batch::gray84)
    }

    /// The start states `reset_from_bank` picks from: `save_state` blobs of this ROM (either
    /// backend), uploaded once. `render` (when given) replaces each state's pixel switch, as
    /// `set_render` after a reset would.
    #[pyo3(signature = (states, *, render = None))]
    fn set_bank(&mut self, py: Python<'_>, states: Vec<Vec<u8>>, render: Option<bool>) -> PyResult<()> {
        if states.is_empty() {
            return Err(PyValueError::new_err("set_bank needs at least one state"));
        }
        self.run(py, |inner| {
            let mut flats = Vec::with_capacity(states.len());
            for blob in &states {
                let mut c = inner.power_on.clone();
                c.load_state(blob)?;
                let mut flat = c.to_flat();
                if let Some(on) = render {
                    flat.ppu_render_pixels = on as u8;
                }
                flats.push(flat);
            }
            inner.starts = flats;
            inner.starts_loaded = false;
            Ok(())
        })
    }

    /// On the device, env i takes start state `pick[i]` (an index into `set_bank`'s list)
    /// wherever `mask[i]`: `mask` a CUDA bool (or uint8 0/1) tensor of shape (N,), `pick` a
    /// CUDA int32 tensor of shape (N,); picks outside the bank leave the env as it is.
    /// Asynchronous, like `step`.
    fn reset_from_bank(&mut self, py: Python<'_>, mask: &Bound<'_, PyAny>, pick: &Bound<'_, PyAny>) -> PyResult<()> {
        let dev = self.device as i32;
        let shape = [self.n as i64];
        let m = dlpack::borrow_cuda(mask, dlpack::Element::Mask, &shape, dev, 1, "mask", false)?;
        let p = dlpack::borrow_cuda(pick, dlpack::Element::U32, &shape, dev, 1, "pick", false)?;
        let (mp, pp) = (m.ptr, p.ptr);
        self.run(py, |inner| inner.reset_from_bank(mp, pp))?;
        self.hold([m.capsule, p.capsule]);
        Ok(())
    }

    /// Write `value` (a byte, or a uint8 array of a byte per console) at work-RAM address
    /// `addr` of every console where `mask` is true: on the GPU, the states staying there.
    #[pyo3(signature = (addr, value, mask = None))]
    fn write_ram(
        &mut self,
        py: Python<'_>,
        #[pyo3(from_py_with = int)] addr: i64,
        value: &Bound<'_, PyAny>,
        mask: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if !(0..RAM_SIZE as i64).contains(&addr) {
            return Err(PyValueError::new_err(format!("addr must be between 0 and {}, got {addr}", RAM_SIZE - 1)));
        }
        let value = ram_value(value, self.n)?;
        let mask: Vec<u8> = bool_mask(mask, self.n)?.into_iter().map(u8::from).collect();
        self.run(py, |inner| {
            let mut batch = inner.batch.lock();
            match &value {
                RamValue::One(v) => batch.write_ram(addr as usize, *v, &mask),
                RamValue::Each(each) => batch.write_ram_each(addr as usize, each, &mask),
            }
        })
    }

    /// Work RAM of every console: a new (N, 2048) uint8 array.
    fn ram<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<u8>>> {
        let out = self.run(py, |inner| inner.batch.lock().ram_to_host())?;
        to_numpy(py, out, [self.n, RAM_SIZE])
    }

    /// The last frame of every console as palette indices: a new (N, 240, 256) uint8 array
    /// (zeros until a frame has been drawn).
    fn pixels<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray3<u8>>> {
        let out = self.run(py, host_pixels)?;
        to_numpy(py, out, [self.n, HEIGHT, WIDTH])
    }

    /// The last frame of every console in RGB: a new (N, 240, 256, 3) uint8 array; or, with
    /// `out` (a contiguous CUDA uint8 tensor of that shape on this batch's device), made there by
    /// a kernel (``nesle_rgb``, the same bytes) and returned, asynchronously. `out` needs
    /// pictures (render on).
    #[pyo3(signature = (*, out = None))]
    fn rgb<'py>(&mut self, py: Python<'py>, out: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let Some(out) = out else {
            let rgb = self.run(py, |inner| {
                let idx = host_pixels(inner)?;
                let mut rgb = nes_cuda::host_zeros(idx.len() * 3)?;
                rgb.par_chunks_mut(PIXELS_PER_ENV * 3)
                    .zip(idx.par_chunks(PIXELS_PER_ENV))
                    .for_each(|(dst, src)| palette::indices_to_rgb(src, dst));
                Ok(rgb)
            })?;
            return Ok(to_numpy(py, rgb, [self.n, HEIGHT, WIDTH, 3])?.into_any());
        };
        let shape = [self.n as i64, HEIGHT as i64, WIDTH as i64, 3];
        self.picture_into(py, out, &shape, "N x 240 x 256 x 3", Batch::rgb)
    }

    /// Frames each console's PPU has started since power-on: a new (N,) uint64 array.
    fn frame_counts<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let v = self.run(py, |inner| {
            Ok(inner.batch.lock().states_to_host()?.iter().map(|s| s.ppu_frame).collect::<Vec<u64>>())
        })?;
        Ok(v.into_pyarray(py))
    }

    /// For each console, `None`, or why it halted (a JAM opcode).
    fn faults(&mut self, py: Python<'_>) -> PyResult<Vec<Option<String>>> {
        self.run(py, |inner| {
            let states = inner.batch.lock().states_to_host()?;
            states
                .iter()
                .map(|s| match s.cpu_fault {
                    0 => Ok(None),
                    _ => Ok(inner.rom.console(s)?.fault().map(|f| f.to_string())),
                })
                .collect()
        })
    }

    /// Turn pixel output on or off for every console (games cannot tell; off is faster).
    fn set_render(&mut self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.run(py, |inner| {
            let envs: Vec<usize> = (0..inner.n).filter(|&i| inner.render[i] != on as u8).collect();
            inner.patch(&envs, |s| {
                s.ppu_render_pixels = on as u8;
                Ok(())
            })
        })
    }

    /// Power-cycle the consoles where `mask` is true (all when `None`); with `soft=True`, press
    /// the reset button instead.
    #[pyo3(signature = (mask = None, *, soft = false))]
    fn reset(&mut self, py: Python<'_>, mask: Option<&Bound<'_, PyAny>>, soft: bool) -> PyResult<()> {
        let mask = bool_mask(mask, self.n)?;
        self.run(py, |inner| {
            if !soft {
                let power_on = inner.power_on_flat;
                return inner.restore(&power_on, &mask);
            }
            let envs: Vec<usize> = (0..inner.n).filter(|&i| mask[i]).collect();
            let rom = inner.rom.clone();
            inner.patch(&envs, |s| {
                let mut c = rom.console(s)?;
                c.reset();
                *s = c.to_flat();
                Ok(())
            })
        })
    }

    /// The full state of console `i` as bytes (the same format as `CpuBatch.save_state`).
    fn save_state<'py>(
        &mut self,
        py: Python<'py>,
        #[pyo3(from_py_with = int)] i: i64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let i = env_index(i, self.n)?;
        let blob = self.run(py, |inner| {
            let flat = inner.batch.lock().save_state(i)?;
            Ok(inner.rom.console(&flat)?.save_state())
        })?;
        Ok(PyBytes::new(py, &blob))
    }

    /// Restore console `i` from `save_state` bytes (of either backend).
    fn load_state(&mut self, py: Python<'_>, #[pyo3(from_py_with = int)] i: i64, state: &[u8]) -> PyResult<()> {
        let i = env_index(i, self.n)?;
        self.run(py, |inner| {
            let mut c = inner.power_on.clone();
            c.load_state(state)?;
            let flat = c.to_flat();
            inner.batch.lock().load_state(i, &flat)?;
            inner.render[i] = flat.ppu_render_pixels;
            inner.pad2[i] = flat.pad_buttons[1];
            Ok(())
        })
    }

    /// Restore every console where `mask` is true (all when `None`) from one `save_state` blob.
    #[pyo3(signature = (state, mask = None))]
    fn restore(&mut self, py: Python<'_>, state: &[u8], mask: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let mask = bool_mask(mask, self.n)?;
        self.run(py, |inner| {
            let mut c = inner.power_on.clone();
            c.load_state(state)?;
            let flat = c.to_flat();
            inner.restore(&flat, &mask)
        })
    }

    /// What the batch runs on and what its step takes, for benchmark records (nes-cuda's
    /// `Batch::report`): the GPU, the kernel image that loaded, the step kernel's registers,
    /// stack and occupancy at the launch the next step takes, and the device memory held.
    fn device_report<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.run(py, |inner| inner.batch.lock().report())?;
        let d = PyDict::new(py);
        d.set_item("device", &r.device)?;
        d.set_item("compute_capability", format!("{}.{}", r.compute_capability.0, r.compute_capability.1))?;
        d.set_item("sms", r.sms)?;
        d.set_item("driver", format!("{}.{}", r.driver / 1000, r.driver % 1000 / 10))?;
        d.set_item("image", &r.image)?;
        d.set_item("step_registers", r.step.registers)?;
        d.set_item("step_local_bytes", r.step.local_bytes)?;
        d.set_item("step_block", r.step.block)?;
        d.set_item("step_blocks_per_sm", r.step.blocks_per_sm)?;
        d.set_item("step_warps_per_sm", r.step.warps_per_sm())?;
        d.set_item("max_warps_per_sm", r.step.max_warps_per_sm)?;
        d.set_item("occupancy", r.step.occupancy())?;
        d.set_item("device_bytes", r.device_bytes)?;
        d.set_item("bytes_per_env", r.bytes_per_env())?;
        Ok(d)
    }

    /// Waits for every queued step.
    fn synchronize(&mut self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |inner| inner.batch.lock().synchronize())?;
        self.in_flight.clear();
        Ok(())
    }

    /// A zero-copy view of every console's work RAM on the GPU, for `torch.from_dlpack`: a
    /// (N, 2048) uint8 tensor with strides (sizeof(FlatState), 1).
    fn ram_tensor(&mut self) -> PyResult<DLPackView> {
        self.view(false)
    }

    /// A zero-copy view of the picture buffer: (N, 240, 256) uint8 palette indices.
    fn pixels_tensor(&mut self) -> PyResult<DLPackView> {
        self.view(true)
    }

    /// Release this batch's GPU memory (views made from it keep it until they are freed).
    /// Every later call raises `RuntimeError`.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        self.release_all(py)?;
        if let Some(inner) = self.inner.take() {
            py.detach(move || drop(inner));
        }
        Ok(())
    }
}

fn host_pixels(inner: &mut Inner) -> Result<Vec<u8>, Error> {
    if inner.has_pixels() {
        inner.batch.lock().pixels_to_host()
    } else {
        nes_cuda::host_zeros(inner.n * PIXELS_PER_ENV)
    }
}

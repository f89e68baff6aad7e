//! `CpuBatch`: N consoles built from one ROM, stepped in lockstep on all CPU cores.
//!
//! Arrays out, three ways:
//!
//! - **New arrays** (`ram()`, `pixels()`, `rgb()`, `step_trace()`), as `CudaBatch` returns them:
//!   NumPy arrays that own a Rust `Vec` (`into_pyarray` moves the allocation, no second copy).
//! - **`out=`**: the same verbs fill a caller's array in place and return it, allocating
//!   nothing: a C-contiguous writable uint8 NumPy array, or anything NumPy reads without a copy
//!   (a CPU DLPack tensor such as a torch slice of a rollout buffer, a buffer-protocol object),
//!   of exactly the verb's shape.
//! - **Views** (`ram_view()`, `pixels_view()`): read-only NumPy arrays over host buffers the
//!   batch keeps as mirrors of its consoles, refreshed inside the rayon task that ran each
//!   console at the end of every call that changes it (`step`, `step_trace`, `reset`,
//!   `restore`, `load_state`, `write_ram`). RAM: one 2 KiB memcpy per console, always on (a
//!   frame is ~30,000 CPU cycles). Pixels: 60 KiB per console, a few microseconds against
//!   ~1 ms per rendered frame (16 SMB consoles, 4 frames a step: no difference above noise),
//!   paid only once `pixels_view()` has been asked for.
//!
//! A view aliases the mirror: its contents change with the next such call (copy it to keep
//! it, and don't read it from another thread during one: the GIL is released). The mirror is
//! a [`HostBuffer`] shared through an `Arc` with each view's DLPack capsule (the array's
//! base), so a view stays valid after `del batch`, and NumPy refuses to make it writable.

use std::panic::{catch_unwind, AssertUnwindSafe};

use nes_core::{palette, Console};
use numpy::ndarray::{Array, Dimension, IntoDimension, IxDyn};
use numpy::{IntoPyArray, PyArray, PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyMemoryView};
use rayon::prelude::*;

use crate::dlpack::{DLPackView, HostBuffer};
use crate::error::{panic_error, rom_error, state_error};
use crate::{HEIGHT, RAM_SIZE, WIDTH};

const SCREEN: usize = WIDTH * HEIGHT;
/// A shape as Python prints it: `(3,)`, `(4, 3)`.
pub(crate) fn py_shape(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// `n` zeroed rows of `row` bytes, or `None` when the host cannot give that much.
fn host_rows(n: usize, row: usize) -> Option<HostBuffer> {
    n.checked_mul(row).and_then(HostBuffer::try_zeroed)
}

/// Bytes in GiB, for the memory errors' messages.
pub(crate) fn gib(bytes: f64) -> f64 {
    bytes / (1u64 << 30) as f64
}

/// A batch too large for the host's memory: the caller's error to handle, where Rust's
/// allocator would abort the process.
fn host_memory_error(n: usize, bytes: f64, what: &str) -> PyErr {
    PyMemoryError::new_err(format!(
        "{n} environments need {:.1} GiB of host memory for {what}, more than could be \
         allocated: lower num_envs",
        gib(bytes)
    ))
}

/// A bound on `frames` per call, so a typo (1e9) fails loudly instead of hanging for hours.
pub(crate) const MAX_FRAMES_PER_STEP: i64 = 1 << 20;

/// `step`'s frame count, checked (0..=[`MAX_FRAMES_PER_STEP`]).
pub(crate) fn step_frames(frames: i64) -> PyResult<u32> {
    if !(0..=MAX_FRAMES_PER_STEP).contains(&frames) {
        return Err(PyValueError::new_err(format!("frames must be between 0 and {MAX_FRAMES_PER_STEP}, got {frames}")));
    }
    Ok(frames as u32)
}
/// `step_trace` returns 2 KiB per console per frame; a frameskip is a handful of frames.
pub(crate) const MAX_TRACE_FRAMES: i64 = 1 << 10;

/// Wraps `data` (row-major, `shape`) as a NumPy array without copying it again.
pub fn to_numpy<'py, T: numpy::Element, D: Dimension>(
    py: Python<'py>,
    data: Vec<T>,
    shape: impl IntoDimension<Dim = D>,
) -> PyResult<Bound<'py, PyArray<T, D>>> {
    let arr = Array::from_shape_vec(shape, data)
        .map_err(|e| PyRuntimeError::new_err(format!("internal shape error: {e}")))?;
    Ok(arr.into_pyarray(py))
}

/// `repr(type)` and dtype of an argument, for error messages.
pub(crate) fn describe(obj: &Bound<'_, PyAny>) -> String {
    let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    match obj.getattr("dtype") {
        Ok(dt) => format!("{ty} of dtype {dt}"),
        Err(_) => ty,
    }
}

/// An integer argument (a Python int or NumPy integer) as `i64`, through `from_py_with`: Python
/// counts `True` as 1, but a bool given as a console index, a frame count, an address or a byte
/// is a mistake, refused as the Python layer refuses it. An int past 64 bits is out of range
/// for every such argument: a `ValueError`, as the other out-of-range values are, not
/// Python's `OverflowError` about C longs.
pub(crate) fn int(ob: &Bound<'_, PyAny>) -> PyResult<i64> {
    if ob.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("expected an int, got the bool {}", ob.repr()?)));
    }
    ob.extract().map_err(|e: PyErr| {
        if e.is_instance_of::<PyOverflowError>(ob.py()) {
            PyValueError::new_err(format!(
                "{} is out of range (past a 64-bit integer)",
                ob.repr().map_or_else(|_| "an int".into(), |r| r.to_string())
            ))
        } else {
            e
        }
    })
}

/// Python-style index (negative counts from the end) -> position, or `IndexError`.
pub(crate) fn env_index(i: i64, n: usize) -> PyResult<usize> {
    let n = n as i64;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(PyIndexError::new_err(format!("environment index {i} out of range for {n} environments")));
    }
    Ok(j as usize)
}

/// A bool mask of shape (n,), or all-true for `None`.
pub(crate) fn bool_mask(mask: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Vec<bool>> {
    let Some(mask) = mask else {
        return Ok(vec![true; n]);
    };
    let arr = mask.cast::<PyArrayDyn<bool>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "mask must be a numpy.ndarray of dtype bool and shape ({n},), got {}",
            describe(mask)
        ))
    })?;
    let ro = arr.try_readonly().map_err(|e| PyValueError::new_err(format!("mask: {e}")))?;
    let view = ro.as_array();
    if view.shape() != [n] {
        return Err(PyValueError::new_err(format!("mask must have shape ({n},), got {}", py_shape(view.shape()))));
    }
    Ok(view.iter().copied().collect())
}

/// What `write_ram` writes: one byte for every masked console, or a byte each.
pub(crate) enum RamValue {
    One(u8),
    Each(Vec<u8>),
}

/// `write_ram`'s value: an int 0..255 (a 0-d array too, as for every int argument), or a uint8
/// array of shape (n,) (a byte per console).
pub(crate) fn ram_value(value: &Bound<'_, PyAny>, n: usize) -> PyResult<RamValue> {
    let not_a_byte = || {
        PyTypeError::new_err(format!(
            "value must be a byte or a numpy.ndarray of dtype uint8 and shape ({n},), got {}",
            describe(value)
        ))
    };
    if value.cast::<PyUntypedArray>().is_ok_and(|a| a.ndim() > 0) {
        let arr = value.cast::<PyArrayDyn<u8>>().map_err(|_| not_a_byte())?;
        let ro = arr.try_readonly().map_err(|e| PyValueError::new_err(format!("value: {e}")))?;
        let view = ro.as_array();
        if view.shape() != [n] {
            return Err(PyValueError::new_err(format!(
                "value must be a byte or a uint8 array of shape ({n},), got shape {}",
                py_shape(view.shape())
            )));
        }
        return Ok(RamValue::Each(view.iter().copied().collect()));
    }
    // A bool keeps int's own message; any other non-int gets this one.
    let v = int(value).map_err(|e| {
        if e.is_instance_of::<PyTypeError>(value.py()) && !value.is_instance_of::<PyBool>() {
            not_a_byte()
        } else {
            e
        }
    })?;
    if !(0..=255).contains(&v) {
        return Err(PyValueError::new_err(format!("value must be a byte (0..255), got {v}")));
    }
    Ok(RamValue::One(v as u8))
}

/// Button bitmasks of shape (n,) (pad 1) or (n, 2) (both pads) -> one `[pad1, pad2]` each.
pub(crate) fn button_pads(actions: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<[u8; 2]>> {
    let arr = actions.cast::<PyArrayDyn<u8>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "actions must be a numpy.ndarray of dtype uint8 (button bitmasks) with shape ({n},) or ({n}, 2), got {}",
            describe(actions)
        ))
    })?;
    let ro = arr.try_readonly().map_err(|e| PyValueError::new_err(format!("actions: {e}")))?;
    let view = ro.as_array();
    let pads: Vec<[u8; 2]> = match view.shape() {
        [m] if *m == n => view.iter().map(|&a| [a, 0]).collect(),
        [m, 2] if *m == n => view.outer_iter().map(|row| [row[0], row[1]]).collect(),
        shape => {
            return Err(PyValueError::new_err(format!(
                "actions must have shape ({n},) or ({n}, 2) for {n} environments, got {}",
                py_shape(shape)
            )))
        }
    };
    drop(ro);
    Ok(pads)
}

/// `out` as a writable, C-contiguous uint8 NumPy array of exactly `shape` over the caller's own
/// memory: a NumPy array as is, a DLPack producer (a torch CPU tensor) through
/// `numpy.from_dlpack`, any other buffer-protocol object through `memoryview`. Never a copy:
/// each of these routes shares memory or fails.
fn out_array<'py>(out: &Bound<'py, PyAny>, shape: &[usize]) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let py = out.py();
    let want = py_shape(shape);
    let arr = if out.cast::<PyUntypedArray>().is_ok() {
        out.clone()
    } else if out.hasattr("__dlpack__")? {
        py.import("numpy")?.call_method1("from_dlpack", (out,)).map_err(|e| {
            PyValueError::new_err(format!(
                "out must be host memory NumPy can write in place; numpy.from_dlpack refused {}: {e}",
                describe(out)
            ))
        })?
    } else if let Ok(view) = PyMemoryView::from(out) {
        py.import("numpy")?.call_method1("asarray", (view,))?
    } else {
        return Err(PyTypeError::new_err(format!(
            "out must be a numpy.ndarray (or a CPU tensor / buffer) of dtype uint8 and shape {want}, got {}",
            describe(out)
        )));
    };
    let arr = arr.cast_into::<PyArrayDyn<u8>>().map_err(|e| {
        PyTypeError::new_err(format!("out must have dtype uint8, got {}", describe(e.into_inner().as_any())))
    })?;
    if arr.shape() != shape {
        return Err(PyValueError::new_err(format!("out must have shape {want}, got {}", py_shape(arr.shape()))));
    }
    if !arr.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "out must be C-contiguous (a row-major array, or a slice of one along its first axis)",
        ));
    }
    Ok(arr)
}

/// Runs `fill` on `out`'s bytes and returns `out`; without `out`, on a new array of `shape`.
pub(crate) fn fill_out<'py>(
    py: Python<'py>,
    out: Option<Bound<'py, PyAny>>,
    shape: &[usize],
    fill: impl FnOnce(&mut [u8]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(out) = out else {
        let len = shape.iter().product::<usize>();
        let mut buf = nes_cuda::host_zeros(len).map_err(|_| {
            PyMemoryError::new_err(format!(
                "an array of shape {} ({:.1} GiB) could not be allocated",
                py_shape(shape),
                gib(len as f64)
            ))
        })?;
        fill(&mut buf)?;
        return Ok(to_numpy(py, buf, IxDyn(shape))?.into_any());
    };
    let arr = out_array(&out, shape)?;
    let mut rw = arr.try_readwrite().map_err(|e| PyValueError::new_err(format!("out must be writable: {e}")))?;
    let dst = rw.as_slice_mut().map_err(|e| PyValueError::new_err(format!("out: {e}")))?;
    fill(dst)?;
    drop(rw);
    Ok(out)
}

/// A read-only NumPy array over `view` (its base: the DLPack capsule, which holds the memory).
fn readonly_numpy<'py>(py: Python<'py>, view: DLPackView) -> PyResult<Bound<'py, PyAny>> {
    let arr = py.import("numpy")?.call_method1("from_dlpack", (Py::new(py, view)?,))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("write", false)?;
    arr.call_method("setflags", (), Some(&kwargs))?;
    Ok(arr)
}

/// One console's rows in the batch's host mirrors.
struct Mirror<'a> {
    ram: &'a mut [u8],
    /// Only once `pixels_view()` has been asked for.
    pixels: Option<&'a mut [u8]>,
}

impl Mirror<'_> {
    fn refresh(&mut self, c: &Console) {
        self.ram.copy_from_slice(c.ram());
        if let Some(p) = self.pixels.as_deref_mut() {
            p.copy_from_slice(c.pixels());
        }
    }
}

/// N NES consoles running one ROM on the CPU.
#[pyclass(module = "nesle._native")]
pub struct CpuBatch {
    consoles: Vec<Console>,
    /// The console as `Console::new` left it: `reset` copies it back (a power cycle).
    power_on: Console,
    /// Every console's work RAM, (N, 2048), as of the end of the last call (module doc).
    ram: HostBuffer,
    /// Every console's picture, (N, 240, 256), kept once `pixels_view()` was asked for.
    pixels: Option<HostBuffer>,
    /// The read-only NumPy arrays over `ram` and `pixels`, made on first request.
    ram_view: Option<Py<PyAny>>,
    pixels_view: Option<Py<PyAny>>,
    /// Set when nes-core panicked mid-call; every later call raises.
    poisoned: bool,
}

impl std::fmt::Debug for CpuBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuBatch").field("num_envs", &self.consoles.len()).finish_non_exhaustive()
    }
}

impl CpuBatch {
    /// Runs `f` with the GIL released, turning a panic into a `RuntimeError`. `f` also gets
    /// the power-on console, for `reset`, and each console's rows of the host mirrors, which
    /// it refreshes for every console it changes.
    fn run<R: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut [Console], &Console, Vec<Mirror<'_>>) -> R + Send,
    ) -> PyResult<R> {
        self.check()?;
        let mut pixels = self.pixels.as_mut().map(|p| p.as_mut_slice().chunks_mut(SCREEN));
        let mirrors: Vec<Mirror<'_>> = self
            .ram
            .as_mut_slice()
            .chunks_mut(RAM_SIZE)
            .map(|ram| Mirror { ram, pixels: pixels.as_mut().and_then(|p| p.next()) })
            .collect();
        let (consoles, power_on) = (&mut self.consoles[..], &self.power_on);
        match py.detach(|| catch_unwind(AssertUnwindSafe(|| f(consoles, power_on, mirrors)))) {
            Ok(r) => Ok(r),
            Err(payload) => {
                self.poisoned = true;
                Err(panic_error(payload))
            }
        }
    }

    fn check(&self) -> PyResult<()> {
        if self.poisoned {
            return Err(PyRuntimeError::new_err("this CpuBatch is unusable after an internal panic; create a new one"));
        }
        Ok(())
    }

    fn index(&self, i: i64) -> PyResult<usize> {
        env_index(i, self.consoles.len())
    }

    fn mask(&self, mask: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<bool>> {
        bool_mask(mask, self.consoles.len())
    }

    fn pads(&self, actions: &Bound<'_, PyAny>) -> PyResult<Vec<[u8; 2]>> {
        button_pads(actions, self.consoles.len())
    }

    /// Refuses an `out` that aliases the batch's own mirrors, which the call reads or writes
    /// while it fills `out` (reachable only around the views' read-only flag, e.g. through
    /// `torch.from_dlpack(batch.ram_view())`).
    fn disjoint(&self, dst: &[u8]) -> PyResult<()> {
        let d = dst.as_ptr_range();
        for buf in std::iter::once(&self.ram).chain(&self.pixels) {
            let b = buf.as_slice().as_ptr_range();
            if d.start < b.end && b.start < d.end {
                return Err(PyValueError::new_err(
                    "out must not overlap the batch's own buffers (ram_view / pixels_view)",
                ));
            }
        }
        Ok(())
    }

    /// Every console's picture, mapped through `f` into `per` bytes each of `dst`.
    fn frames(
        &mut self,
        py: Python<'_>,
        dst: &mut [u8],
        per: usize,
        f: impl Fn(&Console, &mut [u8]) + Send + Sync,
    ) -> PyResult<()> {
        self.run(py, |cs, _, _| {
            dst.par_chunks_mut(per).zip(cs.par_iter()).for_each(|(dst, c)| f(c, dst));
        })
    }

    /// `step_trace` into `dst`, frame-major (frames, N, 2048). The rows are dealt out to the
    /// consoles first (row `f * N + i` to console `i`), so each rayon task writes its own
    /// console's rows straight into place: no console-major scratch, no transpose.
    fn trace(&mut self, py: Python<'_>, pads: &[[u8; 2]], frames: usize, dst: &mut [u8]) -> PyResult<()> {
        let n = self.consoles.len();
        let mut rows: Vec<Vec<&mut [u8]>> = (0..n).map(|_| Vec::with_capacity(frames)).collect();
        for (k, row) in dst.chunks_mut(RAM_SIZE).enumerate() {
            rows[k % n].push(row);
        }
        self.run(py, |cs, _, mirrors| {
            cs.par_iter_mut().zip(pads).zip(rows).zip(mirrors).for_each(|(((c, p), rows), mut m)| {
                c.set_buttons(0, p[0]);
                c.set_buttons(1, p[1]);
                let (last, render) = (rows.len(), c.render());
                for (f, row) in rows.into_iter().enumerate() {
                    c.set_render(render && f + 1 == last); // only the last frame is seen
                    c.run_frame();
                    row.copy_from_slice(c.ram());
                }
                c.set_render(render);
                m.refresh(c);
            })
        })
    }
}

#[pymethods]
impl CpuBatch {
    /// Power on `num_envs` consoles with the iNES file `rom`.
    #[new]
    fn new(rom: &[u8], #[pyo3(from_py_with = int)] num_envs: i64) -> PyResult<Self> {
        if num_envs < 1 {
            return Err(PyValueError::new_err(format!("num_envs must be at least 1, got {num_envs}")));
        }
        let n = num_envs as usize;
        let power_on = Console::new(rom).map_err(rom_error)?;
        let each = std::mem::size_of::<Console>() + RAM_SIZE;
        let too_large = || host_memory_error(n, n as f64 * each as f64, "their consoles");
        // Both allocations before either is written, so a refusal touches no page.
        let mut ram = host_rows(n, RAM_SIZE).ok_or_else(too_large)?;
        let mut consoles = Vec::new();
        consoles.try_reserve_exact(n).map_err(|_| too_large())?;
        consoles.resize(n, power_on.clone());
        for row in ram.as_mut_slice().chunks_mut(RAM_SIZE) {
            row.copy_from_slice(power_on.ram());
        }
        Ok(CpuBatch { consoles, power_on, ram, pixels: None, ram_view: None, pixels_view: None, poisoned: false })
    }

    #[getter]
    fn num_envs(&self) -> usize {
        self.consoles.len()
    }

    fn __len__(&self) -> usize {
        self.consoles.len()
    }

    fn __repr__(&self) -> String {
        format!("CpuBatch(num_envs={})", self.consoles.len())
    }

    /// Hold `actions` on the controllers and run every console for `frames` frames; with
    /// `mask` (N bools), only the consoles where it is true: the others are not touched.
    ///
    /// `actions`: uint8 button bitmasks (bit 0 A, 1 B, 2 Select, 3 Start, 4 Up, 5 Down, 6 Left,
    /// 7 Right), shape (N,) for pad 1 only or (N, 2) for both pads.
    #[pyo3(signature = (actions, frames = 1, *, mask = None))]
    fn step(
        &mut self,
        py: Python<'_>,
        actions: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = int)] frames: i64,
        mask: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let frames = step_frames(frames)?;
        let pads = self.pads(actions)?;
        let mask = self.mask(mask)?;
        self.run(py, |cs, _, mirrors| {
            let chosen = cs.par_iter_mut().zip(pads.par_iter()).zip(mirrors).zip(mask.par_iter());
            chosen.filter(|(_, &run)| run).for_each(|(((c, p), mut m), _)| {
                c.set_buttons(0, p[0]);
                c.set_buttons(1, p[1]);
                c.run_frames(frames as usize); // draws the last frame only
                m.refresh(c);
            })
        })
    }

    /// Like `step`, and also return the work RAM after every frame: a (frames, N, 2048) uint8
    /// array whose `[f]` is the batch's RAM after frame `f` (new, or `out` filled in place).
    ///
    /// Game rewards are functions of RAM (python/nesle/games); summing them per frame inside a
    /// frameskip needs every frame's RAM, and one call keeps the GIL released for the whole skip.
    #[pyo3(signature = (actions, frames, *, out = None))]
    fn step_trace<'py>(
        &mut self,
        py: Python<'py>,
        actions: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = int)] frames: i64,
        out: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pads = self.pads(actions)?;
        if !(1..=MAX_TRACE_FRAMES).contains(&frames) {
            return Err(PyValueError::new_err(format!(
                "frames must be between 1 and {MAX_TRACE_FRAMES}, got {frames}"
            )));
        }
        let (n, f) = (self.consoles.len(), frames as usize);
        fill_out(py, out, &[f, n, RAM_SIZE], |dst| {
            self.disjoint(dst)?;
            self.trace(py, &pads, f, dst)
        })
    }

    /// Write `value` into work RAM at `addr` (0..2048) of every console where `mask` is true
    /// (all when `None`): the RAM hacks gym-* environments use to pick a level at the title.
    /// `value` is a byte, or a uint8 array of a byte per console.
    #[pyo3(signature = (addr, value, mask = None))]
    fn write_ram(
        &mut self,
        #[pyo3(from_py_with = int)] addr: i64,
        value: &Bound<'_, PyAny>,
        mask: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if !(0..RAM_SIZE as i64).contains(&addr) {
            return Err(PyValueError::new_err(format!("addr must be between 0 and {}, got {addr}", RAM_SIZE - 1)));
        }
        let n = self.consoles.len();
        let value = ram_value(value, n)?;
        let mask = self.mask(mask)?;
        self.check()?;
        let addr = addr as usize;
        let rows = self.ram.as_mut_slice().chunks_mut(RAM_SIZE);
        for (i, ((c, row), _)) in self.consoles.iter_mut().zip(rows).zip(&mask).enumerate().filter(|(_, (_, &m))| m) {
            let v = match &value {
                RamValue::One(v) => *v,
                RamValue::Each(each) => each[i],
            };
            c.bus.ram[addr] = v;
            row[addr] = v;
        }
        Ok(())
    }

    /// Work RAM of every console: a (N, 2048) uint8 array, new or `out` filled in place.
    #[pyo3(signature = (*, out = None))]
    fn ram<'py>(&mut self, py: Python<'py>, out: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        self.check()?;
        let n = self.consoles.len();
        let src = self.ram.as_slice();
        fill_out(py, out, &[n, RAM_SIZE], |dst| {
            self.disjoint(dst)?;
            py.detach(|| dst.copy_from_slice(src));
            Ok(())
        })
    }

    /// The last frame of every console as palette indices 0..63: a (N, 240, 256) uint8 array,
    /// new or `out` filled in place.
    #[pyo3(signature = (*, out = None))]
    fn pixels<'py>(&mut self, py: Python<'py>, out: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.consoles.len();
        fill_out(py, out, &[n, HEIGHT, WIDTH], |dst| {
            self.disjoint(dst)?;
            self.frames(py, dst, SCREEN, |c, dst| dst.copy_from_slice(c.pixels()))
        })
    }

    /// The last frame of every console in RGB: a (N, 240, 256, 3) uint8 array, new or `out`
    /// filled in place.
    #[pyo3(signature = (*, out = None))]
    fn rgb<'py>(&mut self, py: Python<'py>, out: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.consoles.len();
        fill_out(py, out, &[n, HEIGHT, WIDTH, 3], |dst| {
            self.disjoint(dst)?;
            self.frames(py, dst, SCREEN * 3, |c, dst| palette::indices_to_rgb(c.pixels(), dst))
        })
    }

    /// Every console's work RAM as a read-only (N, 2048) uint8 NumPy view of the batch's own
    /// buffer: no copy. Always the same array; its contents change with the next call that
    /// runs, resets, restores or writes consoles. It stays valid after the batch is dropped.
    fn ram_view<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.check()?;
        if let Some(v) = &self.ram_view {
            return Ok(v.bind(py).clone());
        }
        let v = readonly_numpy(py, self.ram.view(&[self.consoles.len(), RAM_SIZE]))?;
        self.ram_view = Some(v.clone().unbind());
        Ok(v)
    }

    /// Every console's last picture (palette indices) as a read-only (N, 240, 256) uint8 NumPy
    /// view, as `ram_view`. The first call starts mirroring pictures: from then on every call
    /// that changes consoles also copies their 60 KiB pictures into it.
    fn pixels_view<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.check()?;
        if let Some(v) = &self.pixels_view {
            return Ok(v.bind(py).clone());
        }
        let n = self.consoles.len();
        let mut buf =
            host_rows(n, SCREEN).ok_or_else(|| host_memory_error(n, (n * SCREEN) as f64, "their pictures"))?;
        self.frames(py, buf.as_mut_slice(), SCREEN, |c, dst| dst.copy_from_slice(c.pixels()))?;
        let v = readonly_numpy(py, buf.view(&[self.consoles.len(), HEIGHT, WIDTH]))?;
        self.pixels = Some(buf);
        self.pixels_view = Some(v.clone().unbind());
        Ok(v)
    }

    /// Frames each console's PPU has started since power-on: a new (N,) uint64 array.
    fn frame_counts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        let v: Vec<u64> = self.consoles.iter().map(|c| c.frame_count()).collect();
        v.into_pyarray(py)
    }

    /// For each console, `None`, or why it halted (a JAM opcode).
    fn faults(&self) -> Vec<Option<String>> {
        self.consoles.iter().map(|c| c.fault().map(|f| f.to_string())).collect()
    }

    /// Turn pixel output on or off for every console (games cannot tell; off is faster).
    fn set_render(&mut self, on: bool) -> PyResult<()> {
        self.check()?;
        for c in &mut self.consoles {
            c.set_render(on);
        }
        Ok(())
    }

    /// Power-cycle the consoles where `mask` is true (all when `None`); with `soft=True`, press
    /// the reset button instead.
    #[pyo3(signature = (mask = None, *, soft = false))]
    fn reset(&mut self, py: Python<'_>, mask: Option<&Bound<'_, PyAny>>, soft: bool) -> PyResult<()> {
        let mask = self.mask(mask)?;
        self.run(py, |cs, power_on, mirrors| {
            cs.par_iter_mut().zip(mask.par_iter()).zip(mirrors).filter(|((_, &m), _)| m).for_each(|((c, _), mut m)| {
                if soft {
                    c.reset();
                } else {
                    c.clone_from(power_on);
                }
                m.refresh(c);
            })
        })
    }

    /// The full state of console `i` as bytes.
    fn save_state<'py>(&self, py: Python<'py>, #[pyo3(from_py_with = int)] i: i64) -> PyResult<Bound<'py, PyBytes>> {
        self.check()?;
        let i = self.index(i)?;
        Ok(PyBytes::new(py, &self.consoles[i].save_state()))
    }

    /// Restore console `i` from `save_state` bytes. Raises `nesle.StateError` and leaves the
    /// console untouched if the state is corrupted or belongs to another ROM.
    fn load_state(&mut self, #[pyo3(from_py_with = int)] i: i64, state: &[u8]) -> PyResult<()> {
        self.check()?;
        let i = self.index(i)?;
        self.consoles[i].load_state(state).map_err(state_error)?;
        let c = &self.consoles[i];
        self.ram.as_mut_slice()[i * RAM_SIZE..][..RAM_SIZE].copy_from_slice(c.ram());
        if let Some(p) = &mut self.pixels {
            p.as_mut_slice()[i * SCREEN..][..SCREEN].copy_from_slice(c.pixels());
        }
        Ok(())
    }

    /// Restore every console where `mask` is true (all when `None`) from one `save_state` blob:
    /// the usual "reset to the start of the level" of an RL environment.
    #[pyo3(signature = (state, mask = None))]
    fn restore(&mut self, py: Python<'_>, state: &[u8], mask: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let mask = self.mask(mask)?;
        if !mask.contains(&true) {
            // Nothing to restore, but a bad blob is still an error: check it on a copy.
            return self.run(py, |_, power_on, _| power_on.clone().load_state(state))?.map_err(state_error);
        }
        let results = self.run(py, |cs, _, mirrors| {
            cs.par_iter_mut()
                .zip(mask.par_iter())
                .zip(mirrors)
                .filter(|((_, &m), _)| m)
                .map(|((c, _), mut m)| {
                    let r = c.load_state(state);
                    m.refresh(c);
                    r
                })
                .collect::<Vec<_>>()
        })?;
        // A blob is validated before any console changes, so it fails on every console or none.
        results.into_iter().collect::<Result<Vec<()>, _>>().map_err(state_error)?;
        Ok(())
    }
}

//! `CpuBatch`: N consoles built from one ROM, stepped in lockstep on all CPU cores.
//!
//! Arrays cross to Python as fresh NumPy arrays that own a Rust `Vec` (`into_pyarray` moves the
//! allocation, no second copy). Copying out is cheap next to emulation: 2 KiB of RAM per console
//! against ~30,000 CPU cycles per frame; a view into live console memory would change under the
//! caller's feet on the next `step`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use nes_core::{palette, Console};
use numpy::ndarray::{Array, Dimension, IntoDimension};
use numpy::{IntoPyArray, PyArray, PyArray1, PyArrayDyn, PyArrayMethods};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use crate::error::{panic_error, rom_error, state_error};
use crate::{HEIGHT, RAM_SIZE, WIDTH};

const SCREEN: usize = WIDTH * HEIGHT;
/// A shape as Python prints it: `(3,)`, `(4, 3)`.
pub(crate) fn py_shape(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A bound on `frames` per call, so a typo (1e9) fails loudly instead of hanging for hours.
pub(crate) const MAX_FRAMES_PER_STEP: i64 = 1 << 20;
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
    let ty = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    match obj.getattr("dtype") {
        Ok(dt) => format!("{ty} of dtype {dt}"),
        Err(_) => ty,
    }
}

/// Python-style index (negative counts from the end) -> position, or `IndexError`.
pub(crate) fn env_index(i: i64, n: usize) -> PyResult<usize> {
    let n = n as i64;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(PyIndexError::new_err(format!(
            "environment index {i} out of range for {n} environments"
        )));
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
    let ro = arr
        .try_readonly()
        .map_err(|e| PyValueError::new_err(format!("mask: {e}")))?;
    let view = ro.as_array();
    if view.shape() != [n] {
        return Err(PyValueError::new_err(format!(
            "mask must have shape ({n},), got {}",
            py_shape(view.shape())
        )));
    }
    Ok(view.iter().copied().collect())
}

/// Button bitmasks of shape (n,) (pad 1) or (n, 2) (both pads) -> one `[pad1, pad2]` each.
pub(crate) fn button_pads(actions: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<[u8; 2]>> {
    let arr = actions.cast::<PyArrayDyn<u8>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "actions must be a numpy.ndarray of dtype uint8 (button bitmasks) with shape ({n},) or ({n}, 2), got {}",
            describe(actions)
        ))
    })?;
    let ro = arr
        .try_readonly()
        .map_err(|e| PyValueError::new_err(format!("actions: {e}")))?;
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

/// N NES consoles running one ROM on the CPU.
#[pyclass(module = "nesle._native")]
pub struct CpuBatch {
    consoles: Vec<Console>,
    /// The console as `Console::new` left it: `reset` copies it back (a power cycle).
    power_on: Console,
    /// Set when nes-core panicked mid-call; every later call raises.
    poisoned: bool,
}

impl std::fmt::Debug for CpuBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuBatch")
            .field("num_envs", &self.consoles.len())
            .finish_non_exhaustive()
    }
}

impl CpuBatch {
    /// Runs `f` with the GIL released, turning a panic into a `RuntimeError`.
    /// `f` also gets the power-on console, for `reset`.
    fn run<R: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut [Console], &Console) -> R + Send,
    ) -> PyResult<R> {
        self.check()?;
        let (consoles, power_on) = (&mut self.consoles[..], &self.power_on);
        match py.detach(|| catch_unwind(AssertUnwindSafe(|| f(consoles, power_on)))) {
            Ok(r) => Ok(r),
            Err(payload) => {
                self.poisoned = true;
                Err(panic_error(payload))
            }
        }
    }

    fn check(&self) -> PyResult<()> {
        if self.poisoned {
            return Err(PyRuntimeError::new_err(
                "this CpuBatch is unusable after an internal panic; create a new one",
            ));
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

    /// Pixels of every console, mapped through `f` into `per` bytes each.
    fn frames<'py, D: Dimension>(
        &mut self,
        py: Python<'py>,
        per: usize,
        shape: impl IntoDimension<Dim = D>,
        f: impl Fn(&Console, &mut [u8]) + Send + Sync,
    ) -> PyResult<Bound<'py, PyArray<u8, D>>> {
        let mut buf = vec![0u8; self.consoles.len() * per];
        self.run(py, |cs, _| {
            buf.par_chunks_mut(per)
                .zip(cs.par_iter())
                .for_each(|(dst, c)| f(c, dst));
        })?;
        to_numpy(py, buf, shape)
    }
}

#[pymethods]
impl CpuBatch {
    /// Power on `num_envs` consoles with the iNES file `rom`.
    #[new]
    fn new(rom: &[u8], num_envs: i64) -> PyResult<Self> {
        if num_envs < 1 {
            return Err(PyValueError::new_err(format!(
                "num_envs must be at least 1, got {num_envs}"
            )));
        }
        let power_on = Console::new(rom).map_err(rom_error)?;
        let consoles = vec![power_on.clone(); num_envs as usize];
        Ok(CpuBatch {
            consoles,
            power_on,
            poisoned: false,
        })
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

    /// Hold `actions` on the controllers and run every console for `frames` frames.
    ///
    /// `actions`: uint8 button bitmasks (bit 0 A, 1 B, 2 Select, 3 Start, 4 Up, 5 Down, 6 Left,
    /// 7 Right), shape (N,) for pad 1 only or (N, 2) for both pads.
    #[pyo3(signature = (actions, frames = 1))]
    fn step(&mut self, py: Python<'_>, actions: &Bound<'_, PyAny>, frames: i64) -> PyResult<()> {
        if !(0..=MAX_FRAMES_PER_STEP).contains(&frames) {
            return Err(PyValueError::new_err(format!(
                "frames must be between 0 and {MAX_FRAMES_PER_STEP}, got {frames}"
            )));
        }
        let pads = self.pads(actions)?;
        self.run(py, |cs, _| {
            cs.par_iter_mut().zip(pads.par_iter()).for_each(|(c, p)| {
                c.set_buttons(0, p[0]);
                c.set_buttons(1, p[1]);
                for _ in 0..frames {
                    c.run_frame();
                }
            })
        })
    }

    /// Like `step`, and also return the work RAM after every frame: a new (frames, N, 2048)
    /// uint8 array whose `[f]` is the batch's RAM after frame `f`.
    ///
    /// Game rewards are functions of RAM (python/nesle/games); summing them per frame inside a
    /// frameskip needs every frame's RAM, and one call keeps the GIL released for the whole skip.
    fn step_trace<'py>(
        &mut self,
        py: Python<'py>,
        actions: &Bound<'_, PyAny>,
        frames: i64,
    ) -> PyResult<Bound<'py, numpy::PyArray3<u8>>> {
        let pads = self.pads(actions)?;
        if !(1..=MAX_TRACE_FRAMES).contains(&frames) {
            return Err(PyValueError::new_err(format!(
                "frames must be between 1 and {MAX_TRACE_FRAMES}, got {frames}"
            )));
        }
        let (n, f) = (self.consoles.len(), frames as usize);
        // Console-major while running (each rayon task owns one console's rows), then
        // transposed to frame-major, the layout the reward functions want.
        let mut by_console = vec![0u8; n * f * RAM_SIZE];
        self.run(py, |cs, _| {
            cs.par_iter_mut()
                .zip(pads.par_iter())
                .zip(by_console.par_chunks_mut(f * RAM_SIZE))
                .for_each(|((c, p), rows)| {
                    c.set_buttons(0, p[0]);
                    c.set_buttons(1, p[1]);
                    for row in rows.chunks_mut(RAM_SIZE) {
                        c.run_frame();
                        row.copy_from_slice(c.ram());
                    }
                })
        })?;
        let mut out = vec![0u8; f * n * RAM_SIZE];
        for (i, src) in by_console.chunks(f * RAM_SIZE).enumerate() {
            for (k, row) in src.chunks(RAM_SIZE).enumerate() {
                let at = (k * n + i) * RAM_SIZE;
                out[at..at + RAM_SIZE].copy_from_slice(row);
            }
        }
        to_numpy(py, out, [f, n, RAM_SIZE])
    }

    /// Write `value` into work RAM at `addr` (0..2048) of every console where `mask` is true
    /// (all when `None`): the RAM hacks gym-* environments use to pick a level at the title.
    #[pyo3(signature = (addr, value, mask = None))]
    fn write_ram(
        &mut self,
        addr: i64,
        value: i64,
        mask: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if !(0..RAM_SIZE as i64).contains(&addr) {
            return Err(PyValueError::new_err(format!(
                "addr must be between 0 and {}, got {addr}",
                RAM_SIZE - 1
            )));
        }
        if !(0..=255).contains(&value) {
            return Err(PyValueError::new_err(format!(
                "value must be a byte (0..255), got {value}"
            )));
        }
        let mask = self.mask(mask)?;
        self.check()?;
        for (c, _) in self.consoles.iter_mut().zip(&mask).filter(|(_, &m)| m) {
            c.bus.ram[addr as usize] = value as u8;
        }
        Ok(())
    }

    /// Work RAM of every console: a new (N, 2048) uint8 array.
    fn ram<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<u8>>> {
        let n = self.consoles.len();
        self.frames(py, RAM_SIZE, [n, RAM_SIZE], |c, dst| {
            dst.copy_from_slice(c.ram())
        })
    }

    /// The last frame of every console as palette indices 0..63: a new (N, 240, 256) uint8 array.
    fn pixels<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray3<u8>>> {
        let n = self.consoles.len();
        self.frames(py, SCREEN, [n, HEIGHT, WIDTH], |c, dst| {
            dst.copy_from_slice(c.pixels())
        })
    }

    /// The last frame of every console in RGB: a new (N, 240, 256, 3) uint8 array.
    fn rgb<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray4<u8>>> {
        let n = self.consoles.len();
        self.frames(py, SCREEN * 3, [n, HEIGHT, WIDTH, 3], |c, dst| {
            palette::indices_to_rgb(c.pixels(), dst)
        })
    }

    /// Frames each console's PPU has started since power-on: a new (N,) uint64 array.
    fn frame_counts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        let v: Vec<u64> = self.consoles.iter().map(|c| c.frame_count()).collect();
        v.into_pyarray(py)
    }

    /// For each console, `None`, or why it halted (a JAM opcode).
    fn faults(&self) -> Vec<Option<String>> {
        self.consoles
            .iter()
            .map(|c| c.fault().map(|f| f.to_string()))
            .collect()
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
    fn reset(
        &mut self,
        py: Python<'_>,
        mask: Option<&Bound<'_, PyAny>>,
        soft: bool,
    ) -> PyResult<()> {
        let mask = self.mask(mask)?;
        self.run(py, |cs, power_on| {
            cs.par_iter_mut()
                .zip(mask.par_iter())
                .for_each(|(c, &m)| match (m, soft) {
                    (false, _) => {}
                    (true, true) => c.reset(),
                    (true, false) => c.clone_from(power_on),
                })
        })
    }

    /// The full state of console `i` as bytes.
    fn save_state<'py>(&self, py: Python<'py>, i: i64) -> PyResult<Bound<'py, PyBytes>> {
        self.check()?;
        let i = self.index(i)?;
        Ok(PyBytes::new(py, &self.consoles[i].save_state()))
    }

    /// Restore console `i` from `save_state` bytes. Raises `nesle.StateError` and leaves the
    /// console untouched if the state is corrupted or belongs to another ROM.
    fn load_state(&mut self, i: i64, state: &[u8]) -> PyResult<()> {
        self.check()?;
        let i = self.index(i)?;
        self.consoles[i].load_state(state).map_err(state_error)
    }

    /// Restore every console where `mask` is true (all when `None`) from one `save_state` blob:
    /// the usual "reset to the start of the level" of an RL environment.
    #[pyo3(signature = (state, mask = None))]
    fn restore(
        &mut self,
        py: Python<'_>,
        state: &[u8],
        mask: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let mask = self.mask(mask)?;
        let results = self.run(py, |cs, _| {
            cs.par_iter_mut()
                .zip(mask.par_iter())
                .filter(|(_, &m)| m)
                .map(|(c, _)| c.load_state(state))
                .collect::<Vec<_>>()
        })?;
        // A blob is validated before any console changes, so it fails on every console or none.
        results
            .into_iter()
            .collect::<Result<Vec<()>, _>>()
            .map_err(state_error)?;
        Ok(())
    }
}

//! DLPack, both ways: zero-copy views of a batch's device buffers for torch/JAX/CuPy, and
//! reading a consumer's CUDA tensor (the actions) without a host round trip.
//!
//! The structs are the C ABI of `dlpack.h` (v1.0), written out by hand: no DLPack crate supports
//! the pyo3 we build with. Every `unsafe` block of py-nesle lives in this file, including
//! [`HostBuffer`], the shared host memory behind `CpuBatch.ram_view()` / `pixels_view()`.
//!
//! Export ([`DLPackView`]): `__dlpack__` returns a PyCapsule named `"dltensor"` (or
//! `"dltensor_versioned"` when the consumer passes `max_version >= (1, 0)`) holding a heap
//! [`Holder`]: the managed tensor, its shape and strides, and an `Arc` to the buffer's owner.
//! The deleter drops the holder, so a torch tensor made from the view keeps the owner (for a
//! CUDA batch: the whole nes-cuda `Batch`) alive after `CudaBatch.close()` or `del batch`.
//! A capsule nobody consumed frees itself when collected (its destructor calls the deleter
//! while the capsule still has its original name, as `dlpack.h` asks).
//!
//! Streams: the batch's kernels run on its own stream, which nes-cuda does not expose. So
//! `__dlpack__` synchronizes that stream before returning the capsule (unless the consumer
//! passes `stream=-1`): whatever stream the consumer reads on, every queued step has finished.
//! A view kept across later steps aliases live memory: call `CudaBatch.synchronize()` before
//! reading it again (or make a fresh view, which synchronizes).

use std::any::Any;
use std::ffi::{c_void, CStr};
use std::sync::Arc;

use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// `DLDeviceType` values used here.
pub const KDL_CPU: i32 = 1;
pub const KDL_CUDA: i32 = 2;
/// `DLDataTypeCode` values used here.
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_BOOL: u8 = 6;

const NAME: &CStr = c"dltensor";
const NAME_VERSIONED: &CStr = c"dltensor_versioned";

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
#[derive(Debug)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    /// `ndim` extents.
    shape: *mut i64,
    /// `ndim` strides in elements, or null for C-contiguous.
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
#[derive(Debug)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
#[derive(Debug)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// Bit 0: read-only; bit 1: is a copy. Ours are neither.
    flags: u64,
    dl_tensor: DLTensor,
}

/// The producer of a view's bytes: waits for its queued writes before a capsule is handed out.
pub trait Producer: Send + Sync {
    fn synchronize(&self) -> PyResult<()>;
}

/// A strided uint8 view of memory owned by `owner`, exported through DLPack.
#[pyclass(module = "nesle._native", frozen)]
pub struct DLPackView {
    owner: Arc<dyn Any + Send + Sync>,
    sync: Option<Arc<dyn Producer>>,
    /// Address of element [0, 0, ...].
    data: u64,
    shape: Vec<i64>,
    /// In elements (= bytes: the dtype is uint8).
    strides: Vec<i64>,
    device: DLDevice,
}

impl std::fmt::Debug for DLPackView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DLPackView")
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl DLPackView {
    /// `owner` must keep `data .. data + extent` valid for as long as it lives.
    pub fn new(
        owner: Arc<dyn Any + Send + Sync>,
        sync: Option<Arc<dyn Producer>>,
        data: u64,
        shape: Vec<i64>,
        strides: Vec<i64>,
        device: DLDevice,
    ) -> Self {
        DLPackView { owner, sync, data, shape, strides, device }
    }
}

/// One exported tensor: the managed struct (first, so its address is the holder's) and what
/// its pointers point into.
#[repr(C)]
struct Holder<M> {
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    _owner: Arc<dyn Any + Send + Sync>,
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` came from `Box::into_raw` of a `Holder<DLManagedTensor>` in `export`, whose
    // first field it is (repr(C)); DLPack calls the deleter exactly once. Dropping the holder
    // drops the Arc to the owner, which needs no GIL (a CUDA batch synchronizes and frees).
    drop(unsafe { Box::from_raw((*m).manager_ctx as *mut Holder<DLManagedTensor>) });
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: as in `delete_legacy`, for the versioned holder.
    drop(unsafe { Box::from_raw((*m).manager_ctx as *mut Holder<DLManagedTensorVersioned>) });
}

/// Capsule destructor: frees the tensor if no consumer took it (renamed it "used_...").
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: called by CPython with a live capsule. `PyCapsule_IsValid` checks the name without
    // raising; a matching name means the pointer is the managed tensor `export` stored and the
    // consumer never took ownership, so calling its deleter once here is the protocol.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, NAME.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        } else if ffi::PyCapsule_IsValid(cap, NAME_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, NAME_VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        }
    }
}

impl DLPackView {
    fn tensor(&self, shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
        DLTensor {
            data: self.data as *mut c_void,
            device: self.device,
            ndim: self.shape.len() as i32,
            dtype: DLDataType { code: KDL_UINT, bits: 8, lanes: 1 },
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        }
    }

    fn export<'py>(&self, py: Python<'py>, versioned: bool) -> PyResult<Bound<'py, PyAny>> {
        let (ptr, name): (*mut c_void, &CStr) = if versioned {
            let mut h = Box::new(Holder {
                managed: DLManagedTensorVersioned {
                    version: DLPackVersion { major: 1, minor: 0 },
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_versioned),
                    flags: 0,
                    dl_tensor: self.tensor(&mut [], &mut []),
                },
                shape: self.shape.clone(),
                strides: self.strides.clone(),
                _owner: self.owner.clone(),
            });
            // The Vecs' heap buffers do not move when the Box does.
            h.managed.dl_tensor.shape = h.shape.as_mut_ptr();
            h.managed.dl_tensor.strides = h.strides.as_mut_ptr();
            let raw = Box::into_raw(h);
            // SAFETY: `raw` is a valid, uniquely owned holder; we store its own address.
            unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
            (raw as *mut c_void, NAME_VERSIONED)
        } else {
            let mut h = Box::new(Holder {
                managed: DLManagedTensor {
                    dl_tensor: self.tensor(&mut [], &mut []),
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_legacy),
                },
                shape: self.shape.clone(),
                strides: self.strides.clone(),
                _owner: self.owner.clone(),
            });
            h.managed.dl_tensor.shape = h.shape.as_mut_ptr();
            h.managed.dl_tensor.strides = h.strides.as_mut_ptr();
            let raw = Box::into_raw(h);
            // SAFETY: as above.
            unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
            (raw as *mut c_void, NAME)
        };
        // SAFETY: `ptr` is the managed tensor (first field of its holder); `name` is a static
        // C string; the destructor frees it only if unconsumed. On failure nothing took
        // ownership, so we free the holder ourselves.
        unsafe {
            let cap = ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor));
            if cap.is_null() {
                if versioned {
                    delete_versioned(ptr as *mut DLManagedTensorVersioned);
                } else {
                    delete_legacy(ptr as *mut DLManagedTensor);
                }
                return Err(PyErr::fetch(py));
            }
            Ok(Bound::from_owned_ptr(py, cap))
        }
    }
}

#[pymethods]
impl DLPackView {
    /// The DLPack protocol (array API 2023.12): a capsule holding this view.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some((t, id)) = dl_device {
            if (t, id) != (self.device.device_type, self.device.device_id) {
                return Err(PyBufferError::new_err(format!(
                    "this view lives on DLPack device ({}, {}); it cannot be exported to ({t}, {id}) without a copy",
                    self.device.device_type, self.device.device_id
                )));
            }
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "nesle views are zero-copy only (copy=True): copy the consumer's tensor instead",
            ));
        }
        let stream: Option<i64> = match stream {
            None => None,
            Some(s) if s.is_none() => None,
            Some(s) => Some(s.extract().map_err(|_| PyTypeError::new_err("stream must be an int or None"))?),
        };
        if self.device.device_type == KDL_CPU && stream.is_some() {
            return Err(PyValueError::new_err("stream must be None for a CPU tensor"));
        }
        // -1: the consumer asks for no synchronization at all.
        if stream != Some(-1) {
            if let Some(sync) = &self.sync {
                let sync = sync.clone();
                py.detach(move || sync.synchronize())?;
            }
        }
        self.export(py, max_version.is_some_and(|(major, _)| major >= 1))
    }

    /// `(device_type, device_id)`: (2, ordinal) for CUDA, (1, 0) for host memory.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (self.device.device_type, self.device.device_id)
    }

    #[getter]
    fn shape(&self) -> Vec<i64> {
        self.shape.clone()
    }

    /// In elements (bytes).
    #[getter]
    fn strides(&self) -> Vec<i64> {
        self.strides.clone()
    }

    fn __repr__(&self) -> String {
        let kind = if self.device.device_type == KDL_CUDA { "cuda" } else { "cpu" };
        format!(
            "DLPackView(uint8, shape={:?}, strides={:?}, device={kind}:{})",
            self.shape, self.strides, self.device.device_id
        )
    }
}

/// Test hook (`nesle._native._host_view`): a strided view of a private copy of `data`, on the
/// CPU, so the export machinery is tested on machines without a GPU.
#[pyfunction]
pub fn _host_view(data: Vec<u8>, shape: Vec<i64>, strides: Vec<i64>, offset: usize) -> PyResult<DLPackView> {
    if shape.len() != strides.len() || shape.iter().any(|&d| d < 0) || strides.iter().any(|&s| s < 0) {
        return Err(PyValueError::new_err("shape and strides: same length, non-negative"));
    }
    // Checked: a shape times a stride past i64 reaches past any data, and must not wrap.
    let last = shape
        .iter()
        .zip(&strides)
        .try_fold(0i64, |acc, (&d, &s)| (d.max(1) - 1).checked_mul(s).and_then(|x| acc.checked_add(x)))
        .and_then(|l| usize::try_from(l).ok())
        .and_then(|l| l.checked_add(offset));
    if shape.iter().all(|&d| d > 0) && last.is_none_or(|end| end >= data.len()) {
        return Err(PyValueError::new_err("the view reaches past the data"));
    }
    let owner: Arc<Vec<u8>> = Arc::new(data);
    let at = owner.as_ptr() as u64 + offset as u64;
    Ok(DLPackView::new(owner, None, at, shape, strides, DLDevice { device_type: KDL_CPU, device_id: 0 }))
}

// ---------------------------------------------------------------------------------------------
// Host buffers: memory a batch writes and read-only NumPy views read (`CpuBatch.ram_view`).

/// The allocation of a [`HostBuffer`], shared with the views exported from it.
#[derive(Debug)]
struct HostBytes {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: Rust reaches the bytes only through the one `HostBuffer` that created them (`&self`
// to read, `&mut self` to write), so the borrow checker orders every Rust access; the views
// hold this `Arc` only to keep the allocation alive (as `dyn Any`, never read back). Foreign
// readers (NumPy) read through the raw pointer, as they read any array that native code writes
// with the GIL released.
unsafe impl Send for HostBytes {}
// SAFETY: as above.
unsafe impl Sync for HostBytes {}

impl Drop for HostBytes {
    fn drop(&mut self) {
        // SAFETY: `ptr, len` came from `Box::into_raw` of a boxed slice in
        // `HostBuffer::try_zeroed`; the last `Arc` (batch or view) drops it exactly once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

/// A zeroed host allocation with one writer (its owner, a batch) and any number of read-only
/// views ([`HostBuffer::view`]), which keep it alive after the writer is dropped.
#[derive(Debug)]
pub struct HostBuffer {
    bytes: Arc<HostBytes>,
}

impl HostBuffer {
    /// `len` zeroed bytes, or `None` when the allocator cannot give that much.
    pub fn try_zeroed(len: usize) -> Option<Self> {
        let ptr = Box::into_raw(nes_cuda::host_zeros(len).ok()?.into_boxed_slice()) as *mut u8;
        Some(HostBuffer { bytes: Arc::new(HostBytes { ptr, len }) })
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: a live allocation of `len` bytes; no `&mut` exists while `&self` is borrowed.
        unsafe { std::slice::from_raw_parts(self.bytes.ptr, self.bytes.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`; `&mut self` makes this the only Rust reference.
        unsafe { std::slice::from_raw_parts_mut(self.bytes.ptr, self.bytes.len) }
    }

    /// A C-contiguous CPU view of the whole buffer as `shape` (whose product is its length).
    pub fn view(&self, shape: &[usize]) -> DLPackView {
        debug_assert_eq!(shape.iter().product::<usize>(), self.bytes.len);
        let mut strides = vec![1i64; shape.len()];
        for k in (0..shape.len().saturating_sub(1)).rev() {
            strides[k] = strides[k + 1] * shape[k + 1] as i64;
        }
        let owner: Arc<dyn Any + Send + Sync> = self.bytes.clone();
        let shape = shape.iter().map(|&d| d as i64).collect();
        let cpu = DLDevice { device_type: KDL_CPU, device_id: 0 };
        DLPackView::new(owner, None, self.bytes.ptr as u64, shape, strides, cpu)
    }
}

// ---------------------------------------------------------------------------------------------
// Import: a consumer-side read of a CUDA uint8 vector (the actions of `CudaBatch.step`).

/// A CUDA tensor taken from a producer's capsule. Keeping it keeps the producer's memory: its
/// capsule is never renamed, so dropping it (with the GIL) lets the producer's capsule
/// destructor free the tensor, as for any capsule nobody consumed.
#[derive(Debug)]
pub struct Borrowed {
    pub capsule: Py<PyAny>,
    /// Address of element 0.
    pub ptr: u64,
    pub len: usize,
}

/// `obj.__dlpack__()` read as a contiguous uint8 vector of `n` elements on CUDA device
/// `device`. `stream` is the consumer stream passed to the producer (1 = legacy default).
pub fn borrow_cuda_u8(obj: &Bound<'_, PyAny>, n: usize, device: i32, stream: i64) -> PyResult<Borrowed> {
    borrow_cuda(obj, Element::U8, &[n as i64], device, stream, "device actions", false)
}

/// Element types accepted by [`borrow_cuda`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    U8,
    /// Bytes of 0/1: torch.bool (kDLBool) or uint8.
    Mask,
    /// 32-bit integers (int32 or uint32), read as u32.
    U32,
}

impl Element {
    fn accepts(self, t: DLDataType) -> bool {
        let (code, bits) = (t.code, t.bits);
        t.lanes == 1
            && match self {
                Element::U8 => code == KDL_UINT && bits == 8,
                Element::Mask => bits == 8 && (code == KDL_UINT || code == KDL_BOOL),
                Element::U32 => bits == 32 && (code == KDL_UINT || code == KDL_INT),
            }
    }

    fn name(self) -> &'static str {
        match self {
            Element::U8 => "uint8",
            Element::Mask => "bool (or uint8)",
            Element::U32 => "int32",
        }
    }

    fn size(self) -> usize {
        match self {
            Element::U8 | Element::Mask => 1,
            Element::U32 => 4,
        }
    }
}

/// `obj.__dlpack__()` read as a C-contiguous CUDA tensor of `shape` and element `elem` on
/// device `device` (`what` names it in errors). `writable`: the capsule must not be flagged
/// read-only. `len` of the result counts bytes.
pub fn borrow_cuda(
    obj: &Bound<'_, PyAny>,
    elem: Element,
    shape: &[i64],
    device: i32,
    stream: i64,
    what: &str,
    writable: bool,
) -> PyResult<Borrowed> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", stream)?;
    kwargs.set_item("max_version", (1, 0))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        // A producer older than DLPack 1.0 does not know `max_version`.
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item("max_version")?;
            obj.call_method("__dlpack__", (), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let raw = capsule.as_ptr();
    // SAFETY: `raw` is a live object (held by `capsule`). `PyCapsule_IsValid` checks type and
    // name without raising; with a valid name, the pointer is the producer's managed tensor,
    // which stays alive while the capsule is held. We only read the descriptor.
    let (t, read_only): (&DLTensor, bool) = unsafe {
        if ffi::PyCapsule_IsValid(raw, NAME_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(raw, NAME_VERSIONED.as_ptr()) as *const DLManagedTensorVersioned;
            if (*m).version.major != 1 {
                return Err(PyBufferError::new_err(format!("unsupported DLPack version {}", (*m).version.major)));
            }
            (&(*m).dl_tensor, (*m).flags & 1 != 0)
        } else if ffi::PyCapsule_IsValid(raw, NAME.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(raw, NAME.as_ptr()) as *const DLManagedTensor;
            (&(*m).dl_tensor, false)
        } else {
            return Err(PyTypeError::new_err("__dlpack__ did not return a DLPack capsule"));
        }
    };
    if t.device.device_type != KDL_CUDA || t.device.device_id != device {
        return Err(PyValueError::new_err(format!(
            "{what} must be on cuda:{device}, got DLPack device ({}, {})",
            t.device.device_type, t.device.device_id
        )));
    }
    if !elem.accepts(t.dtype) {
        return Err(PyTypeError::new_err(format!(
            "{what} must have dtype {}, got DLPack dtype code {} bits {} lanes {}",
            elem.name(),
            t.dtype.code,
            t.dtype.bits,
            t.dtype.lanes
        )));
    }
    let fmt = |s: &[i64]| {
        let body = s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ");
        format!("({body}{})", if s.len() == 1 { "," } else { "" })
    };
    // The rank first: a descriptor of another rank, or without its shape, is not read further.
    if t.ndim < 0 || t.ndim as usize != shape.len() || (t.ndim > 0 && t.shape.is_null()) {
        return Err(PyValueError::new_err(format!(
            "{what} must have shape {}, got a DLPack tensor of {} dimensions",
            fmt(shape),
            t.ndim
        )));
    }
    // SAFETY: per DLPack, `shape` (and `strides` unless null) hold `ndim` elements; `shape` is
    // not null (checked above, unless `ndim` is 0, where nothing is read).
    let (have, strides) = unsafe {
        let ndim = t.ndim as usize;
        if ndim == 0 {
            (Vec::new(), None)
        } else {
            let have = std::slice::from_raw_parts(t.shape, ndim).to_vec();
            let strides =
                if t.strides.is_null() { None } else { Some(std::slice::from_raw_parts(t.strides, ndim).to_vec()) };
            (have, strides)
        }
    };
    if have != shape {
        return Err(PyValueError::new_err(format!("{what} must have shape {}, got {}", fmt(shape), fmt(&have))));
    }
    if let Some(strides) = strides {
        // C-contiguous: each stride is the product of the later extents (extent-1 axes are free).
        let mut expect = 1i64;
        for (d, s) in shape.iter().zip(&strides).rev() {
            if *d > 1 && *s != expect {
                return Err(PyValueError::new_err(format!("{what} must be contiguous")));
            }
            expect *= d;
        }
    }
    if writable && read_only {
        return Err(PyValueError::new_err(format!("{what} is read-only")));
    }
    let ptr = (t.data as u64)
        .checked_add(t.byte_offset)
        .ok_or_else(|| PyValueError::new_err(format!("{what}: its DLPack data pointer and byte offset overflow")))?;
    // A misaligned view would fault the kernels with an error the whole context keeps.
    let align = if writable { nes_cuda::OUT_ALIGN } else { elem.size() as u64 };
    nes_cuda::check_aligned(ptr, align, what).map_err(PyValueError::new_err)?;
    let len = shape.iter().product::<i64>().max(0) as usize * elem.size();
    Ok(Borrowed { capsule: capsule.unbind(), ptr, len })
}

/// Whether `obj` looks like a DLPack producer on CUDA (`__dlpack_device__()[0] == 2`).
pub fn cuda_device_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<i32>> {
    if !obj.hasattr("__dlpack__")? || !obj.hasattr("__dlpack_device__")? {
        return Ok(None);
    }
    let dev = obj.call_method0("__dlpack_device__")?;
    let dev = dev.cast::<PyTuple>().map_err(|_| PyTypeError::new_err("__dlpack_device__ must return a tuple"))?;
    let (t, id): (i32, i32) = dev.extract()?;
    Ok((t == KDL_CUDA).then_some(id))
}

/// Runs `batch.step_device` on `len` action bytes at device address `ptr`, which belongs to
/// another library (torch's caching allocator): cudarc's `CudaSlice` is only borrowed, never
/// freed. `ext` is a stream of a context object with event tracking off (see `CudaBatch`).
///
/// The caller guarantees that `ptr .. ptr + len` is a live allocation on the batch's device and
/// stays alive, unwritten by its owner, until the step has finished (it holds the producer's
/// capsule until the batch's next synchronize).
pub fn step_borrowed(
    batch: &mut nes_cuda::Batch,
    ext: &Arc<cudarc::driver::CudaStream>,
    ptr: u64,
    len: usize,
    frames: u32,
) -> Result<(), nes_cuda::Error> {
    // SAFETY: per the caller's guarantee the address range is a valid device allocation of
    // `len` bytes in this device's primary context (the one both `ext` and the batch use).
    // ManuallyDrop: even if `step_device` panicked, the slice would never free torch's memory;
    // `leak` hands the address back without freeing. `ext`'s context has event tracking off,
    // so the slice owns no events and the launch adds no waits.
    let slice = std::mem::ManuallyDrop::new(unsafe { ext.upgrade_device_ptr::<u8>(ptr, len) });
    let r = batch.step_device(&slice, frames);
    std::mem::ManuallyDrop::into_inner(slice).leak();
    r
}

/// Runs `f` on `len` elements of `T` at device address `ptr`, memory of another library,
/// wrapped as a cudarc slice that is never freed (see [`step_borrowed`] for the contract: the
/// caller holds the producer's capsule until the batch's next synchronize).
pub fn with_borrowed<T: cudarc::driver::DeviceRepr, R>(
    ext: &Arc<cudarc::driver::CudaStream>,
    ptr: u64,
    len: usize,
    f: impl FnOnce(&mut cudarc::driver::CudaSlice<T>) -> R,
) -> R {
    // SAFETY: as in `step_borrowed`: a live allocation of `len` elements of `T` on this
    // device's primary context; ManuallyDrop + leak hand it back without freeing, even if
    // `f` panics.
    let mut slice = std::mem::ManuallyDrop::new(unsafe { ext.upgrade_device_ptr::<T>(ptr, len) });
    let r = f(&mut slice);
    std::mem::ManuallyDrop::into_inner(slice).leak();
    r
}

/// A context object for [`step_borrowed`]: the device's primary context (shared with the
/// batch), event tracking off, its legacy default stream.
pub fn borrow_stream(device: usize) -> Result<Arc<cudarc::driver::CudaStream>, nes_cuda::Error> {
    let ctx = cudarc::driver::CudaContext::new(device).map_err(|e| nes_cuda::Error::Cuda(format!("{e:?}")))?;
    // SAFETY: this context object is used only to wrap borrowed pointers for one launch each;
    // it creates no streams or allocations whose ordering cudarc would have to track.
    unsafe { ctx.disable_event_tracking() };
    Ok(ctx.default_stream())
}

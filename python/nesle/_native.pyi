"""Type stub of ``nesle._native``, the Rust extension (crates/py-nesle).

Kept in step with the module by tests/python/test_native.py. Integer arguments take Python
and NumPy integers, not bools (``TypeError``).
"""

from typing import Any, Final, TypeVar, overload

import numpy as np
import numpy.typing as npt

__version__: Final[str]
#: Picture width and height in pixels, and the size of the console's work RAM in bytes.
WIDTH: Final[int]
HEIGHT: Final[int]
RAM_SIZE: Final[int]
#: ``CudaBatch``'s default ``regroup_every``: steps between regroupings of the envs into warps.
REGROUP_EVERY: Final[int]

#: A caller's array that an ``out=`` verb fills in place and returns.
_Out = TypeVar("_Out")

class RomError(ValueError):
    """The ROM file was refused: not iNES, truncated, or an unsupported mapper or size."""

class StateError(ValueError):
    """A save state was refused: corrupted, from another ROM, or from another format version."""

class BackendUnavailableError(RuntimeError):
    """The requested backend is not in this build of nesle, or has no device to run on."""

class CpuBatch:
    """N NES consoles running one ROM on the CPU, stepped in lockstep on all cores.

    Every call that runs or copies consoles releases the GIL.

    Arrays out, three ways. ``ram()``, ``pixels()``, ``rgb()`` and ``step_trace()`` return new
    arrays. With ``out=`` they fill a caller's array in place instead and return it, allocating
    nothing: a writable, C-contiguous uint8 array of exactly the verb's shape, such as one slice
    of a rollout buffer; a NumPy array, a CPU tensor read through ``__dlpack__`` (torch), or any
    buffer-protocol object. Anything else raises ``TypeError`` (not an array, not uint8) or
    ``ValueError`` (wrong shape, not C-contiguous, read-only, not in host memory).

    ``ram_view()`` and ``pixels_view()`` copy nothing at all: read-only NumPy views of buffers
    the batch refreshes from its consoles at the end of every ``step``, ``step_trace``,
    ``reset``, ``restore``, ``load_state`` and ``write_ram`` (RAM: 2 KiB per console, always;
    pixels: 60 KiB per console, once ``pixels_view()`` has been called). A view's contents
    change with the next such call, so copy what you keep, and don't read it from another thread
    during one. A view keeps its memory alive after the batch is dropped.
    """

    def __new__(cls, rom: bytes, num_envs: int) -> CpuBatch:
        """Power on ``num_envs`` consoles with the iNES file ``rom``.

        Raises ``RomError`` if the ROM is refused, ``ValueError`` if ``num_envs < 1``.
        """

    @property
    def num_envs(self) -> int: ...
    def __len__(self) -> int: ...
    def step(
        self,
        actions: npt.NDArray[np.uint8],
        frames: int = 1,
        *,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        """Hold ``actions`` on the controllers and run every console for ``frames`` frames;
        with ``mask`` (N bools), only the consoles where it is true: the others are not touched.

        ``actions``: uint8 button bitmasks (bit 0 A, 1 B, 2 Select, 3 Start, 4 Up, 5 Down,
        6 Left, 7 Right), shape (N,) for controller 1 or (N, 2) for both controllers.
        Raises ``TypeError`` for another dtype, ``ValueError`` for another shape (of
        ``actions`` or ``mask``) or for ``frames`` outside 0..2**20.
        """

    @overload
    def step_trace(
        self, actions: npt.NDArray[np.uint8], frames: int, *, out: None = None
    ) -> npt.NDArray[np.uint8]: ...
    @overload
    def step_trace(self, actions: npt.NDArray[np.uint8], frames: int, *, out: _Out) -> _Out: ...
    def step_trace(self, actions: npt.NDArray[np.uint8], frames: int, *, out: Any = None) -> Any:
        """Like ``step``, and return the work RAM after every frame: a (frames, N, 2048) uint8
        array whose ``[f]`` is the batch's RAM after frame ``f``; new, or ``out`` filled.

        Raises like ``step``; ``ValueError`` for ``frames`` outside 1..1024; for ``out`` as the
        class doc says.
        """

    def write_ram(
        self, addr: int, value: int | npt.NDArray[np.uint8], mask: npt.NDArray[np.bool_] | None = None
    ) -> None:
        """Write the byte ``value`` at work-RAM address ``addr`` (0..2047) of every console where
        ``mask`` is true (all when None); ``value`` may be a uint8 array of shape (N,), a byte
        for each console. Raises ``ValueError`` for an address or value out of range or an array
        of another shape, ``TypeError`` for a value that is neither."""

    @overload
    def ram(self, *, out: None = None) -> npt.NDArray[np.uint8]: ...
    @overload
    def ram(self, *, out: _Out) -> _Out: ...
    def ram(self, *, out: Any = None) -> Any:
        """Work RAM of every console: a (N, 2048) uint8 array, new or ``out`` filled."""

    @overload
    def pixels(self, *, out: None = None) -> npt.NDArray[np.uint8]: ...
    @overload
    def pixels(self, *, out: _Out) -> _Out: ...
    def pixels(self, *, out: Any = None) -> Any:
        """Last frame of every console as palette indices 0..63: a (N, 240, 256) uint8 array,
        new or ``out`` filled."""

    @overload
    def rgb(self, *, out: None = None) -> npt.NDArray[np.uint8]: ...
    @overload
    def rgb(self, *, out: _Out) -> _Out: ...
    def rgb(self, *, out: Any = None) -> Any:
        """Last frame of every console in RGB: a (N, 240, 256, 3) uint8 array, new or ``out``
        filled."""

    def ram_view(self) -> npt.NDArray[np.uint8]:
        """Every console's work RAM as a read-only (N, 2048) uint8 view of the batch's own
        buffer: no copy. Always the same array; it changes with the next call that runs,
        resets, restores or writes consoles, and stays valid after the batch is dropped."""

    def pixels_view(self) -> npt.NDArray[np.uint8]:
        """Every console's last frame (palette indices) as a read-only (N, 240, 256) uint8 view,
        as ``ram_view``. The first call starts mirroring pictures (60 KiB per console per call
        that changes consoles, a few microseconds)."""

    def frame_counts(self) -> npt.NDArray[np.uint64]:
        """Frames each console's PPU has started since power-on: a new (N,) uint64 array."""

    def faults(self) -> list[str | None]:
        """For each console, ``None``, or why it halted (a JAM opcode)."""

    def set_render(self, on: bool) -> None:
        """Turn pixel output on or off for every console (invisible to games; off is faster)."""

    def reset(self, mask: npt.NDArray[np.bool_] | None = None, *, soft: bool = False) -> None:
        """Power-cycle the consoles where ``mask`` (bool, shape (N,)) is true, all when None.

        With ``soft=True``, press the reset button instead.
        """

    def save_state(self, i: int) -> bytes:
        """The full state of console ``i`` (negative counts from the end)."""

    def load_state(self, i: int, state: bytes) -> None:
        """Restore console ``i``; raises ``StateError`` (console untouched) for a bad state."""

    def restore(self, state: bytes, mask: npt.NDArray[np.bool_] | None = None) -> None:
        """Restore every console where ``mask`` is true (all when None) from one state."""

def cuda_available(device: int = 0) -> tuple[bool, str]:
    """``(True, "CUDA device 0: <name>")`` when ``CudaBatch`` can run on ``device``, else
    ``(False, why)`` (no kernels in this build, no CUDA driver, no such GPU). Probed once per
    device per process; never raises."""

class CudaBatch:
    """N NES consoles running one ROM on one CUDA GPU, with ``CpuBatch``'s verbs.

    The same ROM, actions and states give the same RAM, pixels and save-state blobs as
    ``CpuBatch``; blobs move between the backends. Every call releases the GIL. ``step`` is
    asynchronous; the host-copy verbs (``ram``, ``pixels``, ``rgb``, ``step_trace``,
    ``save_state``, ``frame_counts``, ``faults``), ``synchronize`` and DLPack exports wait for it.

    ``set_render``, ``reset(soft=True)`` and controller-2 buttons are applied by downloading,
    editing and re-uploading the touched consoles' states (12.6 KiB each for SMB, at most 23
    KiB): meant for reset time, not every step. ``write_ram`` runs on the GPU. Known
    difference: a hard ``reset`` leaves the picture buffer as it was (``CpuBatch`` clears it)
    until the next frame is drawn.
    """

    def __new__(
        cls, rom: bytes, num_envs: int, device: int = 0, *, render: bool = True, regroup_every: int = 1
    ) -> CudaBatch:
        """Power on ``num_envs`` consoles with the iNES file ``rom`` on CUDA device ``device``.

        ``render=False`` starts with pixel output off and no picture buffer (60 KiB per
        console); turning rendering on later allocates it at the next step (a rebuild: views
        made before then stay valid but stop following the batch).

        ``regroup_every``: before every such step (and between its frames), the kernel's
        threads are given the envs in order of the work their last frame took, so envs that run
        alike share a warp (0: never).
        Results are identical either way; only the speed changes (protocol B on an H200: +18%
        every 10 steps, +14% more every step, +6% more between its frames). The order is sorted
        on the device, queued with the step: nothing waits for it.

        Raises ``BackendUnavailableError`` (no kernels in this build, no driver, no such GPU),
        ``MemoryError`` (the consoles do not fit in free GPU memory), ``RomError``,
        ``ValueError`` (``num_envs < 1``, a negative ``regroup_every``).
        """

    @property
    def num_envs(self) -> int: ...
    @property
    def device(self) -> int:
        """The CUDA ordinal."""

    def __len__(self) -> int: ...
    def step(
        self, actions: Any, frames: int = 1, *, mask: npt.NDArray[np.bool_] | None = None
    ) -> None:
        """Hold ``actions`` on the controllers and run every console for ``frames`` frames;
        with ``mask`` (N bools on the host), only the consoles where it is true, in a launch of
        their own threads: the others are not touched.

        ``actions``: a NumPy uint8 array of shape (N,) or (N, 2), as for ``CpuBatch.step``; or
        a CUDA tensor on this device (anything with ``__dlpack__``, e.g. a torch uint8 tensor of
        shape (N,), controller 1 only), read in place with no host round trip. The producer is
        asked to order its writes before the legacy default stream (``stream=1``), and the
        tensor is held until the batch next synchronizes. Raises ``TypeError`` for another
        dtype, or for a CUDA tensor of actions with a ``mask``, ``ValueError`` for another
        shape or device, or ``frames`` outside 0..2**20.
        """

    def step_trace(self, actions: Any, frames: int, *, out: Any = None, gray84: Any = None) -> Any:
        """Like ``step``, and return the work RAM after every frame: a new (frames, N, 2048)
        uint8 array; or, with ``out`` (a contiguous CUDA uint8 tensor of that shape on this
        batch's device), write it there on the GPU, asynchronously, and return ``out``. With
        ``out``, ``gray84`` (a contiguous CUDA uint8 tensor (N, 84, 84)) receives every
        console's picture after the step as 84x84 grayscale, the bytes ``gray84()`` would
        write, made as the last frame is drawn (cheaper than a ``gray84()`` call after). Raises
        like ``step``; ``ValueError`` for ``frames`` outside 1..1024, a wrong ``out`` or
        ``gray84`` shape or ``gray84`` without ``out``, ``TypeError`` for an ``out`` or
        ``gray84`` that is not a CUDA uint8 tensor."""

    def gray84(self, out: Any) -> Any:
        """Every console's last picture as 84x84 grayscale (``gray84`` on the GPU, the same
        bytes) into ``out``, a contiguous CUDA uint8 tensor (N, 84, 84) on this batch's device;
        asynchronous; returns ``out``. Needs pictures (render on)."""

    def set_bank(self, states: list[bytes], *, render: bool | None = None) -> None:
        """The start states ``reset_from_bank`` picks from (``save_state`` blobs of this ROM),
        uploaded once; ``render`` replaces their pixel switch. ``StateError`` if one is refused."""

    def reset_from_bank(self, mask: Any, pick: Any) -> None:
        """On the GPU, console i takes bank state ``pick[i]`` where ``mask[i]``: ``mask`` a CUDA
        bool tensor (N,), ``pick`` a CUDA int32 tensor (N,); a pick outside the bank leaves the
        console as it is. Asynchronous, like ``step``; the tensors are held until the batch
        next synchronizes."""

    def write_ram(
        self, addr: int, value: int | npt.NDArray[np.uint8], mask: npt.NDArray[np.bool_] | None = None
    ) -> None:
        """As ``CpuBatch.write_ram``, on the GPU (asynchronous, like ``step``): the states do not
        cross to the host."""

    def ram(self) -> npt.NDArray[np.uint8]:
        """Work RAM of every console: a new (N, 2048) uint8 array."""

    def pixels(self) -> npt.NDArray[np.uint8]:
        """Last frame of every console as palette indices: a new (N, 240, 256) uint8 array
        (zeros before any frame was drawn)."""

    @overload
    def rgb(self, *, out: None = None) -> npt.NDArray[np.uint8]: ...
    @overload
    def rgb(self, *, out: _Out) -> _Out: ...
    def rgb(self, *, out: Any = None) -> Any:
        """Last frame of every console in RGB: a new (N, 240, 256, 3) uint8 array; or, with
        ``out`` (a contiguous CUDA uint8 tensor of that shape on this batch's device), made
        there by a kernel (the same bytes) and returned, asynchronously. ``out`` needs pictures
        (render on)."""

    def frame_counts(self) -> npt.NDArray[np.uint64]:
        """Frames each console's PPU has started since power-on: a new (N,) uint64 array."""

    def faults(self) -> list[str | None]:
        """For each console, ``None``, or why it halted (a JAM opcode)."""

    def set_render(self, on: bool) -> None:
        """Turn pixel output on or off for every console."""

    def reset(self, mask: npt.NDArray[np.bool_] | None = None, *, soft: bool = False) -> None:
        """Power-cycle (or with ``soft=True`` press reset on) the consoles where ``mask`` is true."""

    def save_state(self, i: int) -> bytes:
        """The full state of console ``i``, in ``CpuBatch.save_state``'s format."""

    def load_state(self, i: int, state: bytes) -> None:
        """Restore console ``i`` from a blob of either backend; ``StateError`` if refused."""

    def restore(self, state: bytes, mask: npt.NDArray[np.bool_] | None = None) -> None:
        """Restore every console where ``mask`` is true (all when None) from one state."""

    def device_report(self) -> dict[str, Any]:
        """What the batch runs on and what its step takes, for benchmark records: ``device``,
        ``compute_capability`` ("9.0"), ``sms``, ``driver`` (its CUDA version, "13.0"),
        ``image`` (the kernel image that loaded), ``step_registers``, ``step_local_bytes``,
        ``step_block``, ``step_blocks_per_sm``, ``step_warps_per_sm``, ``max_warps_per_sm``,
        ``occupancy`` (theoretical: resident warps over the SM's limit), ``device_bytes`` and
        ``bytes_per_env`` (the device memory the batch holds)."""

    def synchronize(self) -> None:
        """Wait for every queued step."""

    def ram_tensor(self) -> DLPackView:
        """A zero-copy view of every console's work RAM on the GPU: (N, 2048) uint8 with
        strides (sizeof(FlatState), 1) in elements; ``torch.from_dlpack(batch.ram_tensor())``.

        The view aliases live console memory: its ``__dlpack__`` waits for queued steps, but a
        tensor kept across later steps must be read after ``synchronize()`` (or re-made). It
        keeps the GPU buffers alive after ``close()`` or ``del batch``.
        """

    def pixels_tensor(self) -> DLPackView:
        """A zero-copy view of the picture buffer: (N, 240, 256) uint8 palette indices.
        Raises ``ValueError`` if the batch has no picture buffer (``render=False``)."""

    def close(self) -> None:
        """Release the batch (GPU memory stays alive while DLPack views of it exist); later
        calls raise ``RuntimeError``."""

class DLPackView:
    """A zero-copy uint8 view of native memory, for any DLPack consumer (``torch.from_dlpack``,
    ``numpy.from_dlpack`` for host views). Keeps the memory's owner alive."""

    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A capsule: "dltensor_versioned" (DLPack 1.0) when ``max_version >= (1, 0)``, else
        "dltensor". For a CUDA view, waits for the batch's queued steps first (whatever
        ``stream`` the consumer reads on; ``stream=-1`` skips the wait). Raises
        ``BufferError`` for ``copy=True`` or another ``dl_device``."""

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(2, ordinal)`` for CUDA memory, ``(1, 0)`` for host memory."""

    @property
    def shape(self) -> list[int]: ...
    @property
    def strides(self) -> list[int]:
        """In elements (= bytes)."""

def rom_info(rom: bytes) -> dict[str, int | str | bool]:
    """What an iNES / NES 2.0 header declares.

    Keys: mapper, submapper, prg_rom, chr_rom, prg_ram, chr_ram (sizes in bytes), mirroring
    ("horizontal", "vertical", "single-low", "single-high", "four-screen"), battery, trainer,
    nes2. Raises ``RomError`` for a ROM that ``CpuBatch`` would refuse.
    """

def palette() -> npt.NDArray[np.uint8]:
    """The NTSC palette as a (64, 3) uint8 array of RGB."""

def gray84(pixels: npt.NDArray[np.uint8], *, out: npt.NDArray[np.uint8] | None = None) -> npt.NDArray[np.uint8]:
    """84x84 grayscale (BT.601 luma, area averaged) of (N, 240, 256) palette-index pictures: a
    (N, 84, 84) uint8 array, new or ``out`` filled in place. ``CudaBatch.gray84`` runs the same
    code on the GPU, to the same bytes. ``ValueError`` for another shape or a pixel past 63."""

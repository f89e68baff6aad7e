"""Type stub of ``nesle._native``, the Rust extension (crates/py-nesle).

Kept in step with the module by tests/python/test_native_stub.py.
"""

from typing import Final

import numpy as np
import numpy.typing as npt

__version__: Final[str]
#: Picture width and height in pixels, and the size of the console's work RAM in bytes.
WIDTH: Final[int]
HEIGHT: Final[int]
RAM_SIZE: Final[int]

class RomError(ValueError):
    """The ROM file was refused: not iNES, truncated, or an unsupported mapper or size."""

class StateError(ValueError):
    """A save state was refused: corrupted, from another ROM, or from another format version."""

class CpuBatch:
    """N NES consoles running one ROM on the CPU, stepped in lockstep on all cores.

    Every call that runs or copies consoles releases the GIL.
    """

    def __new__(cls, rom: bytes, num_envs: int) -> CpuBatch:
        """Power on ``num_envs`` consoles with the iNES file ``rom``.

        Raises ``RomError`` if the ROM is refused, ``ValueError`` if ``num_envs < 1``.
        """

    @property
    def num_envs(self) -> int: ...
    def __len__(self) -> int: ...
    def step(self, actions: npt.NDArray[np.uint8], frames: int = 1) -> None:
        """Hold ``actions`` on the controllers and run every console for ``frames`` frames.

        ``actions``: uint8 button bitmasks (bit 0 A, 1 B, 2 Select, 3 Start, 4 Up, 5 Down,
        6 Left, 7 Right), shape (N,) for controller 1 or (N, 2) for both controllers.
        Raises ``TypeError`` for another dtype, ``ValueError`` for another shape or for
        ``frames`` outside 0..2**20.
        """

    def step_trace(self, actions: npt.NDArray[np.uint8], frames: int) -> npt.NDArray[np.uint8]:
        """Like ``step``, and return the work RAM after every frame: a new (frames, N, 2048)
        uint8 array whose ``[f]`` is the batch's RAM after frame ``f``.

        Raises like ``step``; ``ValueError`` for ``frames`` outside 1..1024.
        """

    def write_ram(self, addr: int, value: int, mask: npt.NDArray[np.bool_] | None = None) -> None:
        """Write the byte ``value`` at work-RAM address ``addr`` (0..2047) of every console where
        ``mask`` is true (all when None). Raises ``ValueError`` for an address or value out of
        range."""

    def ram(self) -> npt.NDArray[np.uint8]:
        """Work RAM of every console: a new (N, 2048) uint8 array."""

    def pixels(self) -> npt.NDArray[np.uint8]:
        """Last frame of every console as palette indices 0..63: a new (N, 240, 256) array."""

    def rgb(self) -> npt.NDArray[np.uint8]:
        """Last frame of every console in RGB: a new (N, 240, 256, 3) uint8 array."""

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

def rom_info(rom: bytes) -> dict[str, int | str | bool]:
    """What an iNES / NES 2.0 header declares.

    Keys: mapper, submapper, prg_rom, chr_rom, prg_ram, chr_ram (sizes in bytes), mirroring
    ("horizontal", "vertical", "single-low", "single-high", "four-screen"), battery, trainer,
    nes2. Raises ``RomError`` for a ROM that ``CpuBatch`` would refuse.
    """

def palette() -> npt.NDArray[np.uint8]:
    """The NTSC palette as a (64, 3) uint8 array of RGB."""

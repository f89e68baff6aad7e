"""nesle: a GPU-native NES emulator for reinforcement learning.

The emulator runs in Rust (``nesle._native``); this package adds ROM files (:mod:`nesle.roms`),
per-game RAM logic (:mod:`nesle.games`) and the command line (:mod:`nesle.cli`).

Backends: ``CpuBatch`` steps N consoles on all CPU cores; a GPU backend comes later.
"""

from nesle._native import (
    HEIGHT,
    RAM_SIZE,
    WIDTH,
    CpuBatch,
    RomError,
    StateError,
    __version__,
    palette,
    rom_info,
)
from nesle.roms import RomNotFoundError

#: Controller button bits, as ``CpuBatch.step`` takes them (OR them together).
BUTTON_A = 1 << 0
BUTTON_B = 1 << 1
BUTTON_SELECT = 1 << 2
BUTTON_START = 1 << 3
BUTTON_UP = 1 << 4
BUTTON_DOWN = 1 << 5
BUTTON_LEFT = 1 << 6
BUTTON_RIGHT = 1 << 7

__all__ = [
    "BUTTON_A",
    "BUTTON_B",
    "BUTTON_DOWN",
    "BUTTON_LEFT",
    "BUTTON_RIGHT",
    "BUTTON_SELECT",
    "BUTTON_START",
    "BUTTON_UP",
    "HEIGHT",
    "RAM_SIZE",
    "WIDTH",
    "CpuBatch",
    "RomError",
    "RomNotFoundError",
    "StateError",
    "__version__",
    "palette",
    "rom_info",
]

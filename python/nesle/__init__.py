"""nesle: a GPU-native NES emulator for reinforcement learning.

The emulator runs in Rust (``nesle._native``); this package adds ROM files (:mod:`nesle.roms`),
per-game RAM logic (:mod:`nesle.games`), environments (:func:`make`, :func:`make_vec`, and
:mod:`nesle.sb3` for Stable-Baselines3), a PPO trainer (:mod:`nesle.ppo`, needs torch; not
imported here) and the command line (:mod:`nesle.cli`).

Importing nesle registers gymnasium ids: ``nesle/SuperMarioBros-v0`` (the whole game from 1-1),
``nesle/SuperMarioBros-<world>-<stage>-v0`` for the 32 stages (one stage: episodes end on a
lost life or the flag, as gym-super-mario-bros' single-stage envs), and ``nesle/Tetris-v0``.
They observe ``"rgb"`` like the gym-* packages; ``gymnasium.make_vec(id, n)`` builds one native
batch of n consoles.

Backends: ``CpuBatch`` steps N consoles on all CPU cores; ``_native.CudaBatch`` runs them in
CUDA kernels (``make_vec(backend="auto")`` picks it when a GPU is present).
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
from nesle.env import NesleEnv, make
from nesle.roms import RomNotFoundError
from nesle.vector import BackendUnavailableError, ClosedEnvError, NesleVectorEnv, make_vec

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
    "BackendUnavailableError",
    "ClosedEnvError",
    "CpuBatch",
    "NesleEnv",
    "NesleVectorEnv",
    "RomError",
    "RomNotFoundError",
    "StateError",
    "__version__",
    "make",
    "make_vec",
    "palette",
    "rom_info",
]


def _register() -> None:
    import gymnasium

    def reg(env_id: str, **kwargs: object) -> None:
        if env_id in gymnasium.registry:  # importlib.reload(nesle)
            return
        gymnasium.register(
            env_id,
            entry_point="nesle.env:NesleEnv",
            vector_entry_point="nesle.vector:NesleVectorEnv",
            kwargs={"obs": "rgb", **kwargs},
        )

    reg("nesle/SuperMarioBros-v0", game_or_rom="smb")
    for world in range(1, 9):
        for stage in range(1, 5):
            reg(
                f"nesle/SuperMarioBros-{world}-{stage}-v0",
                game_or_rom="smb",
                start_states=f"{world}-{stage}",
                done="stage",
            )
    reg("nesle/Tetris-v0", game_or_rom="tetris")


_register()

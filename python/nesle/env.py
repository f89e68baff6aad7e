"""``nesle.make``: one console as a ``gymnasium.Env``.

A thin adapter over :class:`nesle.vector.NesleVectorEnv` with one console and no autoreset: the
stepping, rewards, observations and start states are the vector env's (see its module doc).
Infos are the game's (e.g. gym-super-mario-bros' ``coins``, ``flag_get``, ``life``, ...) as
Python scalars, plus ``elapsed_steps``.

``close()`` frees the console; a later ``reset()`` makes a fresh one, as gymnasium's other
environments stay usable after ``close()`` (Stable-Baselines3's ``check_env`` relies on it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from nesle._device import to_numpy
from nesle.vector import ClosedEnvError, EnvState, NesleVectorEnv, _check_seed


class NesleEnv(gym.Env):
    """One NES console as a gymnasium environment. Build it with :func:`nesle.make`."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60}  # noqa: RUF012

    def __init__(self, game_or_rom: str | Path | bytes, **kwargs: Any) -> None:
        if "num_envs" in kwargs:
            raise TypeError("nesle.make() runs one console; use nesle.make_vec() for more")
        if {"autoreset", "autoreset_mode"} & set(kwargs):
            raise TypeError(
                "nesle.make() never restarts an episode by itself: reset() does, or a vector "
                "env's autoreset: nesle.make_vec(..., autoreset_mode=...), or for gymnasium's "
                "sync and async vector envs gymnasium.make_vec(..., vector_kwargs="
                "{'autoreset_mode': ...})"
            )
        if "copy" in kwargs:  # gymnasium.Env's contract: new arrays from every reset and step
            raise TypeError("nesle.make() returns new arrays; copy= is nesle.make_vec()'s option")
        self.vec = NesleVectorEnv(game_or_rom, 1, autoreset=False, **kwargs)
        # The ROM's bytes, not its path: a console made again after close() is the same game.
        self._remake = (self.vec._rom, kwargs)
        self.observation_space = self.vec.single_observation_space
        self.action_space = self.vec.single_action_space
        self.render_mode = self.vec.render_mode
        self.metadata = {**type(self).metadata, "render_fps": self.vec.metadata["render_fps"]}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        seed = _check_seed(seed)  # before gymnasium's own check, so the error is the vector env's
        if self.vec.closed:
            rom, kwargs = self._remake
            self.vec = NesleVectorEnv(rom, 1, autoreset=False, **kwargs)
        # np_random as gymnasium's envs seed it, from make()'s seed on the first reset of a
        # console as the episodes are; the action space keeps the seed its owner gave it.
        first = self.vec._seed if self.vec._needs_reset else None
        super().reset(seed=seed if seed is not None else first)
        obs, info = to_numpy(self.vec.reset(seed=seed, options=options))
        return obs[0], _unbatch(info)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._check_open()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            a = np.asarray(action)
            if a.shape != () or a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
                raise TypeError(
                    f"action must be an int in 0..{self.vec.num_actions - 1}, got {action!r}"
                )
        if isinstance(action, int) and not 0 <= action < self.vec.num_actions:
            # Here, where NumPy would hold an int past int64 as an object, not an integer.
            raise ValueError(
                f"action {action} is out of range: the action space is "
                f"Discrete({self.vec.num_actions})"
            )
        # NumPy out on every backend (a CUDA backend's tensors come to the host here).
        step = to_numpy(self.vec.step(np.asarray([action])))
        obs, reward, terminated, truncated, info = step
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), _unbatch(info)

    def render(self) -> np.ndarray | None:
        self._check_open()
        frames = self.vec.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        self.vec.close()

    def save_state(self) -> EnvState:
        self._check_open()
        return self.vec.save_state(0)

    def load_state(self, state: EnvState) -> np.ndarray:
        self._check_open()
        return to_numpy(self.vec.load_state(0, state))

    def ram(self) -> np.ndarray:
        """(2048,) work RAM now."""
        self._check_open()
        return to_numpy(self.vec.ram()[0])

    def _check_open(self) -> None:
        if self.vec.closed:
            raise ClosedEnvError("this nesle environment is closed; reset() makes a fresh console")


def _unbatch(info: dict[str, Any]) -> dict[str, Any]:
    """Element 0 of every array in a vector info, as Python scalars; masks dropped."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        if isinstance(value, dict):
            out[key] = _unbatch(value)
        else:
            v = value[0]
            out[key] = v.item() if isinstance(v, np.generic) else v
    return out


def make(game_or_rom: str | Path | bytes, **kwargs: Any) -> NesleEnv:
    """One console of a game as a ``gymnasium.Env``; keywords as :func:`nesle.make_vec`."""
    return NesleEnv(game_or_rom, **kwargs)

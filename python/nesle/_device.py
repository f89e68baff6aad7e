"""The CUDA backend's step, kept on the GPU: what :class:`nesle.vector.NesleVectorEnv` runs when
its batch is a ``CudaBatch``.

Everything per step stays in device memory as torch tensors: the actions are looked up in a
device table of button masks, the batch records the RAM after every frame straight into a
device trace (``CudaBatch.step_trace(out=...)``), the game's reward and done functions (the same
:mod:`nesle.games` code the CPU backend runs, see ``games/_xp.py``) run on that trace, pictures
are made from the device picture buffer (84x84 ones by the step itself, as it draws:
``step_trace(gray84=...)``), and ended episodes restart from a bank of start states
uploaded once (``CudaBatch.reset_from_bank``) without their states crossing to the host.

What still crosses: NumPy actions (checked on the host, then copied up through a pinned buffer),
one small read per step that validates actions given as a CUDA tensor (a bad action must raise,
not run), names in infos (SMB ``status``, Tetris pieces: N bytes, read once per step after the
whole step is queued), Tetris' per-reset RNG writes, and ``start_sampling="random"`` (its draws
come from the env's NumPy generator, so the CPU and CUDA backends pick the same start states),
and, with ``skip_cutscenes=True``, the masks of the consoles whose frames are skipped (N bytes a
skipped frame, and one read a step to learn whether any are).
Nothing else waits for the GPU, so the host prepares a step while the GPU still runs the last.

Returned values are torch tensors on the env's GPU: observations (uint8), rewards (float32),
terminated/truncated (bool), and every numeric info entry with its ``_key`` mask. Unlike the CPU
backend, ``infos["final_obs"]`` is one tensor holding every env's observation before the reset
(meaningful where ``infos["_final_obs"]``), and with ``AutoresetMode.SAME_STEP`` ``final_obs`` and
``final_info`` are present on every step, so that a step never has to wait for the GPU to know
whether an episode ended.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from nesle import _native


def quiet_openmp() -> None:
    """Let OpenMP's idle threads sleep instead of spin; takes effect only before torch loads.

    The CPU backend steps its envs on every core between a trainer's torch calls, and OpenMP's
    default keeps torch's idle threads spinning for milliseconds after each call, on the cores
    the envs need (docs/benchmarks/cpu-2026-12-05-ppo-e2e-passive.json). A user's own
    ``OMP_WAIT_POLICY`` is kept. It changes when threads wait, not what they compute.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - torch is a dependency of the CUDA path
        raise _native.BackendUnavailableError(
            "the CUDA backend returns torch tensors: install torch (pip install torch)"
        ) from e
    return torch


class DeviceStep:
    """The device-resident state and step of one :class:`NesleVectorEnv` (see the module doc)."""

    def __init__(self, env: Any, device: int) -> None:
        torch = self.torch = _torch()
        self.env = env
        self.dev = torch.device("cuda", device)
        n, k = env.num_envs, env.frame_stack
        self.arange = torch.arange(n, device=self.dev)
        self.masks = torch.as_tensor(env._masks, device=self.dev)
        self.trace = torch.empty((env.frameskip, n, _native.RAM_SIZE), dtype=torch.uint8, device=self.dev)
        self.ram = torch.zeros((n, _native.RAM_SIZE), dtype=torch.uint8, device=self.dev)
        self.frames = torch.zeros((k, n, *env._frame_shape), dtype=torch.uint8, device=self.dev)
        self.obs_buf = torch.zeros((n, k, *env._frame_shape), dtype=torch.uint8, device=self.dev)
        self.head = 0
        self.elapsed = torch.zeros(n, dtype=torch.int64, device=self.dev)
        self.start_of = torch.zeros(n, dtype=torch.int64, device=self.dev)
        self.fresh = torch.zeros(n, dtype=torch.bool, device=self.dev)
        self.pending = torch.zeros(n, dtype=torch.bool, device=self.dev)  # NEXT_STEP's restarts
        self.next_start = torch.zeros((), dtype=torch.int64, device=self.dev)
        self.staged: Any = None  # pinned host actions (`upload`)
        self.staged_read: Any = None
        bank = env.start_bank
        env._batch.set_bank([s.state for s in bank], render=env._draw)
        self.start_frames = torch.as_tensor(np.stack(env._start_frames), device=self.dev)
        probe = _native.CpuBatch(env._rom, 1)
        rams = []
        for s in bank:
            probe.load_state(0, s.state)
            rams.append(probe.ram()[0])
        self.start_ram = torch.as_tensor(np.stack(rams), device=self.dev)

    # --- the gymnasium verbs ---

    def reset(self, mask: Any) -> tuple[Any, dict[str, Any]]:
        on_device = self.torch.as_tensor(mask, device=self.dev)
        self.pending &= ~on_device  # restarted now, not again on the next step
        self.restart(on_device)
        info = self.info(self.ram)
        # Gymnasium's layout: the masks say which envs this reset restarted.
        return self.observation(), info if mask.all() else masked(info, on_device)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        torch, env = self.torch, self.env
        n, fs = env.num_envs, env.frameskip
        buttons = self.masks[self.check_actions(actions)]
        if env.obs_mode == "gray84":  # made as the step's last frame is drawn, into the next slot
            gray = self.frames[(self.head + 1) % env.frame_stack]
            trace = env._batch.step_trace(buttons, fs, out=self.trace, gray84=gray)
        else:
            trace = env._batch.step_trace(buttons, fs, out=self.trace)
        reward = torch.zeros(n, dtype=torch.float64, device=self.dev)
        ended = torch.zeros(n, dtype=torch.bool, device=self.dev)
        end_frame = torch.full((n,), fs - 1, dtype=torch.int64, device=self.dev)
        prev = self.ram
        try:
            for f in range(fs):
                ram = trace[f]
                r = torch.as_tensor(env._reward_fn(prev, ram), dtype=torch.float64, device=self.dev)
                reward += torch.where(ended, 0.0, r)
                now = torch.as_tensor(env._done_fn(ram), dtype=torch.bool, device=self.dev) & ~ended
                end_frame = torch.where(now, f, end_frame)
                ended |= now
                prev = ram
        except Exception as e:
            env._hook_failed(e)
            raise
        self.ram = trace[-1].clone()  # the trace is overwritten by the next step
        # skip_cutscenes: reads the GPU each step, and each skipped frame is a launch of its own.
        skipped = env._skip is not None and env._skip_cutscenes(~ended)
        if skipped:
            self.ram = torch.from_dlpack(env._batch.ram_tensor()).clone()
        self.elapsed += 1
        terminated = ended
        truncated = torch.zeros(n, dtype=torch.bool, device=self.dev)
        if env.max_episode_steps is not None:
            truncated = (self.elapsed >= env.max_episode_steps) & ~terminated
        self.fresh.zero_()
        self.push(made=env.obs_mode == "gray84" and not skipped)
        # Each env's RAM on its episode's last frame (gathered as 8-byte words).
        last = _words(trace, 2)[end_frame, self.arange].view(torch.uint8)
        if not env.autoreset:
            return self.observation(), reward.float(), terminated, truncated, self.info(last)
        if env.autoreset_mode == AutoresetMode.NEXT_STEP:
            # The envs that ended on the last step restart; their results are their start's.
            restart = self.pending
            reward = torch.where(restart, 0.0, reward)
            terminated, truncated = terminated & ~restart, truncated & ~restart
            self.restart(restart)
            self.pending = terminated | truncated
            info = self.info(torch.where(restart[:, None], self.ram, last))
            return self.observation(), reward.float(), terminated, truncated, info
        done = terminated | truncated
        final_obs, elapsed = self.observation(copy=True), self.elapsed.clone()
        self.restart(done)
        # The game's info once over both RAMs, the ended episodes' last and every env's now (its
        # start state's where it restarted; elsewhere the last), so that its host-only values
        # (names) cost one read, made after the whole step is queued. Per env, the info of the
        # RAM now is what the CPU backend merges: the fresh info where done, else the last.
        # Not self.ram where the episode goes on: a skip (skip_cutscenes) may have run after
        # the step's frames, and a step's info is of its own last frame, as on the CPU.
        now = torch.where(done[:, None], self.ram, last)
        ended, now = _halves(env._info_fn(torch.cat([last, now])), n)
        info = self.info_of(now, self.elapsed)
        info["final_obs"], info["_final_obs"] = final_obs, done.clone()
        ended = self.info_of(ended, elapsed)
        info["final_info"], info["_final_info"] = masked(ended, done), done.clone()
        return self.observation(), reward.float(), terminated, truncated, info

    # --- internals ---

    def check_actions(self, actions: Any) -> Any:
        """Actions as a device int64 tensor, checked like the CPU backend's (a CUDA tensor costs
        one host read)."""
        torch, n, k = self.torch, self.env.num_envs, len(self.env._masks)
        if isinstance(actions, torch.Tensor):
            a = actions
            if a.dtype == torch.bool or a.is_floating_point() or a.is_complex():
                raise TypeError(
                    f"actions must be integers (an int tensor of shape ({n},)), got dtype {a.dtype}"
                )
            if tuple(a.shape) != (n,):
                raise ValueError(
                    f"actions must have shape ({n},) for {n} environments, got {tuple(a.shape)}"
                )
            a = a.to(self.dev, torch.int64)
            bad = (a < 0) | (a >= k)
            if n and bool(bad.any()):  # the one read: a device tensor is checked on the device
                raise ValueError(
                    f"action {int(a[bad][0])} is out of range: the action space is Discrete({k})"
                )
            return a
        return self.upload(self.env._check_actions(actions))  # checked on the host

    def upload(self, actions: np.ndarray) -> Any:
        """Host actions to the device through a pinned buffer: a copy from pageable memory
        would make torch wait for everything queued on the GPU."""
        torch = self.torch
        if self.staged is None:
            self.staged = torch.empty(len(actions), dtype=torch.int64, pin_memory=True)
            self.staged_read = torch.cuda.Event()
        else:
            self.staged_read.synchronize()  # the last step's copy has read the buffer
        self.staged.numpy()[:] = actions
        out = self.staged.to(self.dev, non_blocking=True)
        self.staged_read.record(torch.cuda.current_stream(self.dev))
        return out

    def restart(self, mask: Any) -> None:
        """Consoles in ``mask`` (a device bool tensor) restart from start states."""
        torch, env = self.torch, self.env
        n, k = env.num_envs, len(env.start_bank)
        if env.start_sampling == "random" and k > 1:
            idx = torch.nonzero(mask).flatten()
            draws = env._rng.integers(0, k, idx.numel())  # the CPU backend's draws
            pick = torch.zeros(n, dtype=torch.int64, device=self.dev)
            pick[idx] = torch.as_tensor(draws, device=self.dev)
        else:  # round robin over the masked envs in order, as the CPU backend
            pick = (self.next_start + torch.cumsum(mask.long(), 0) - 1) % k
            self.next_start = (self.next_start + mask.sum()) % k
        env._batch.reset_from_bank(mask, pick.to(torch.int32))
        if env._on_reset is not None:  # RAM writes made on the host (Tetris' RNG seed)
            env._on_reset(env._batch, mask.cpu().numpy(), env._rng)
            self.ram = torch.from_dlpack(env._batch.ram_tensor()).clone()
        else:
            ram = torch.where(mask[:, None], _of_start(_words(self.start_ram, 1), pick, k), _words(self.ram, 1))
            self.ram = ram.view(torch.uint8).view(self.ram.shape)
        self.elapsed = torch.where(mask, 0, self.elapsed)
        self.start_of = torch.where(mask, pick, self.start_of)
        self.fresh |= mask
        first = _of_start(_words(self.start_frames, 1), pick, k) if env.obs_mode != "ram" else _words(self.ram, 1)
        # In place: the ring is the largest buffer (k x N pictures), rewritten every step.
        ring = _words(self.frames, 2)
        torch.where(mask.view(1, n, 1), first.unsqueeze(0), ring, out=ring)

    def push(self, made: bool = False) -> None:
        """Every console's observation frame now, into the next slot of the ring (`made`: the
        step already wrote it there)."""
        env = self.env
        self.head = (self.head + 1) % env.frame_stack
        slot = self.frames[self.head]
        if made:
            return
        if env.obs_mode == "ram":
            slot.copy_(self.ram)
        elif env.obs_mode == "gray84":
            env._batch.gray84(slot)  # a kernel: the CPU backend's bytes, ~7 KiB out per env
        elif env.obs_mode == "rgb":
            env._batch.rgb(out=slot)  # a kernel: the CPU backend's bytes, 180 KiB out per env

    def observation(self, copy: bool | None = None) -> Any:
        env = self.env
        copy = env.copy if copy is None else copy
        k = env.frame_stack
        if k == 1:
            return self.frames[0].clone() if copy else self.frames[0]
        ring = [self.frames[(self.head + 1 + j) % k] for j in range(k)]
        if copy:
            return self.torch.stack(ring, dim=1)
        for j, frame in enumerate(ring):
            self.obs_buf[:, j] = frame
        return self.obs_buf

    def info(self, ram: Any) -> dict[str, Any]:
        return self.info_of(self.env._info_fn(ram), self.elapsed)

    def info_of(self, game_info: dict[str, Any], elapsed: Any) -> dict[str, Any]:
        """A vector info from the game's info dict and the step counts ``elapsed``."""
        n = self.env.num_envs
        info = _with_masks(game_info, n, self)
        info["elapsed_steps"] = elapsed.clone()
        info["_elapsed_steps"] = self.torch.ones(n, dtype=self.torch.bool, device=self.dev)
        return info

    # --- search: single consoles (host round trips, like the CPU backend's) ---

    def load(self, i: int, state: Any) -> Any:
        """After console ``i`` was loaded with ``state`` (an EnvState): its RAM, step count and
        frame stack; returns its observation."""
        torch, env = self.torch, self.env
        self.ram = torch.from_dlpack(env._batch.ram_tensor()).clone()
        self.elapsed[i] = state.elapsed_steps
        self.pending[i] = False  # a console in play again, not one waiting to restart
        self.fresh[i] = False  # its screen is the state's now, not a start's
        first = env._frame_obs_of(state.frame[None], self.ram[i : i + 1].cpu().numpy())[0]
        self.frames[:, i] = torch.as_tensor(first, device=self.dev)
        return self.observation(copy=True)[i]

    def fresh_at(self, i: int) -> bool:
        return bool(self.fresh[i])

    def start_of_at(self, i: int) -> int:
        return int(self.start_of[i])


def to_numpy(x: Any) -> Any:
    """``x`` with every torch tensor in it (tuples, dicts) as a NumPy array: for consumers
    that work on the host (Stable-Baselines3, the single-console ``gymnasium.Env``)."""
    if isinstance(x, tuple):
        return tuple(to_numpy(v) for v in x)
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    if type(x).__module__.startswith("torch"):
        return x.cpu().numpy()
    return x


def _of_start(table: Any, pick: Any, k: int) -> Any:
    """Row ``pick[i]`` of a table over the ``k`` start states for each env: a gather, or with
    one start state its row broadcast, which moves no memory."""
    return table[pick] if k > 1 else table[0].expand(len(pick), *table.shape[1:])


def _words(t: Any, lead: int) -> Any:
    """``t`` with its dims after the first ``lead`` flattened and read as the widest integers
    that tile them: the same bytes, a view, so that element-wise kernels such as the restart's
    ``where`` move 8 bytes an element instead of one."""
    rows = t.flatten(lead)
    width = rows.shape[-1]
    for dtype, size in ((_torch().int64, 8), (_torch().int32, 4), (_torch().int16, 2)):
        if width % size == 0:
            return rows.view(dtype)
    return rows


def _halves(info: dict[str, Any], n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """An info dict over 2N rows as two over N: the first N rows' and the last N's."""
    first: dict[str, Any] = {}
    second: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, dict):
            first[key], second[key] = _halves(value, n)
        else:
            first[key], second[key] = value[:n], value[n:]
    return first, second


def _with_masks(info: dict[str, Any], n: int, d: DeviceStep) -> dict[str, Any]:
    torch = d.torch
    out: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, dict):
            out[key] = _with_masks(value, n, d)
        else:
            out[key] = value if isinstance(value, torch.Tensor) else np.asarray(value)
        out[f"_{key}"] = torch.ones(n, dtype=torch.bool, device=d.dev)
    return out


def _copy(x: Any) -> Any:
    return x.clone() if hasattr(x, "clone") else np.array(x, copy=True)


def masked(info: dict[str, Any], mask: Any) -> dict[str, Any]:
    """A copy of a vector info whose ``_key`` masks are ``mask`` (NumPy or torch alike)."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.removeprefix("_") in ("final_obs", "final_info"):
            continue  # a step's finals are not part of the info they describe
        if key.startswith("_"):
            out[key] = _copy(mask)
        elif isinstance(value, dict):
            out[key] = masked(value, mask)
        else:
            out[key] = _copy(value)
    return out


def where(mask: Any, new: Any, old: Any) -> Any:
    """``new`` where ``mask`` (one flag per env), else ``old``, through nested info dicts; torch
    values stay on their device, host-only values (names) are chosen on the host."""
    if isinstance(new, dict):
        return {k: where(mask, new[k], old[k]) for k in new}
    if hasattr(new, "clone"):  # a tensor
        import torch

        return torch.where(mask.view(-1, *[1] * (new.dim() - 1)), new, old)
    m = to_numpy(mask)
    return np.where(m.reshape(-1, *[1] * (np.ndim(new) - 1)), new, old)

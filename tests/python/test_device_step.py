"""The CUDA backend's Python step (``nesle._device.DeviceStep``) without a GPU: its logic on CPU
torch tensors, with a stand-in for ``CudaBatch`` built on the CPU backend, against the CPU
backend's own ``make_vec``. What the GPU adds (the kernels, the stream, pinned memory) is
test_cuda.py's on a CUDA machine; this covers, in every CI run, what the device step does with
the batch's output: rewards and dones frame by frame, the restart from start states, the frame
ring, each env's last frame for ``final_info``, and the 8-byte views its kernels move.
"""

from __future__ import annotations

import contextlib

import gymnasium as gym
import numpy as np
import pytest

import nesle
from nesle import _device, _native
from nesle._device import to_numpy

from .test_env import (
    check_a_hook_raising_mid_step_stops_the_env_until_a_full_reset,
    check_a_loaded_state_shows_its_screen,
    check_a_step_refused_for_its_actions_keeps_a_loaded_states_screen,
)

torch = pytest.importorskip("torch")


class _Event:
    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass


class _Batch:
    """``CudaBatch``'s verbs that DeviceStep uses, on a CPU batch and CPU tensors."""

    def __init__(self, cpu) -> None:
        self.cpu = cpu
        self.bank: list[bytes] = []

    def set_bank(self, states, render=None) -> None:
        self.bank = list(states)

    def step_trace(self, buttons, frames, out, gray84=None):
        out.copy_(torch.from_numpy(np.asarray(self.cpu.step_trace(buttons.numpy().astype(np.uint8), frames))))
        if gray84 is not None:
            gray84.copy_(torch.from_numpy(_native.gray84(np.asarray(self.cpu.pixels()))))
        return out

    def rgb(self, out=None):
        if out is None:
            return self.cpu.rgb()
        out.copy_(torch.from_numpy(np.asarray(self.cpu.rgb())))
        return out

    def reset_from_bank(self, mask, pick) -> None:
        for i in np.flatnonzero(mask.numpy()):
            self.cpu.load_state(int(i), self.bank[int(pick[i])])

    def ram_tensor(self):
        return self.cpu.ram()

    def __getattr__(self, name):
        return getattr(self.cpu, name)


@contextlib.contextmanager
def _cpu_device(monkeypatch):
    """DeviceStep's CUDA-only calls made harmless, and its device the CPU while it is built."""
    real_device, real_empty = torch.device, torch.empty
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: None)
    monkeypatch.setattr(torch, "empty", lambda *a, pin_memory=False, **k: real_empty(*a, **k))
    monkeypatch.setattr(torch, "device", lambda *a: real_device("cpu"))
    try:
        yield
    finally:
        monkeypatch.setattr(torch, "device", real_device)


def _device_env(monkeypatch, game, n, **kwargs):
    env = nesle.make_vec(game, n, backend="cpu", seed=11, max_episode_steps=20, **kwargs)
    env._batch = _Batch(env._batch)
    with _cpu_device(monkeypatch):
        env._dev = _device.DeviceStep(env, 0)
    return env


def _same(a, b, what):
    np.testing.assert_array_equal(np.asarray(a), to_numpy(b), err_msg=what)


def _same_info(a, b, what):
    # The device step has the final entries on every step (so that a step never waits to learn
    # whether an episode ended); the CPU backend only on steps where one did.
    extra = set(b) - set(a)
    assert extra <= {"final_obs", "_final_obs", "final_info", "_final_info"}, f"{what}: {extra}"
    for key in a:
        if key in ("final_obs", "final_info"):
            continue
        if isinstance(a[key], dict):
            _same_info(a[key], b[key], f"{what}.{key}")
        else:
            _same(a[key], b[key], f"{what}.{key}")


@pytest.mark.parametrize(
    ("game", "n", "kwargs"),
    [
        # Episodes that end inside a step, on frames that vary.
        ("smb", 16, dict(obs="ram", done=lambda ram: (ram[:, 0x09] ^ ram[:, 0x86]) % 11 == 0)),
        ("tetris", 8, dict(obs="ram")),
        ("smb", 8, dict(obs="gray84", frame_stack=2, reward="shaped")),
        ("smb", 8, dict(obs="gray84", start_states=["1-1", "1-2"])),
        # The frame ring of RGB pictures, restarted from two start states.
        ("smb", 4, dict(obs="rgb", frame_stack=2, start_states=["1-1", "1-2"])),
        # NEXT_STEP: ended envs restart on the step after, the masked reset clears that.
        ("smb", 16, dict(obs="ram", autoreset_mode="next_step",
                         done=lambda ram: (ram[:, 0x09] ^ ram[:, 0x86]) % 11 == 0)),  # fmt: skip
        ("smb", 8, dict(obs="gray84", frame_stack=2, autoreset_mode="next_step",
                        start_states=["1-1", "1-2"])),  # fmt: skip
    ],
)
def test_the_device_step_matches_the_cpu_backend(monkeypatch, game, n, kwargs):
    cpu = nesle.make_vec(game, n, backend="cpu", seed=11, max_episode_steps=20, **kwargs)
    dev = _device_env(monkeypatch, game, n, **kwargs)
    o1, i1 = cpu.reset(seed=11)
    o2, i2 = dev.reset(seed=11)
    assert isinstance(o2, torch.Tensor)
    _same(o1, o2, "reset obs")
    _same_info(i1, i2, "reset info")
    rng = np.random.default_rng(2)
    ended = 0
    for t in range(30):
        if t == 15:  # a third of the envs restarted by hand: the same starts and info masks
            mask = np.arange(n) % 3 == 0
            o1, j1 = cpu.reset(options={"reset_mask": mask})
            o2, j2 = dev.reset(options={"reset_mask": mask})
            _same(o1, o2, "masked reset obs")
            _same_info(j1, j2, "masked reset info")
            assert to_numpy(j2["_elapsed_steps"]).tolist() == mask.tolist()
        a = rng.integers(0, cpu.single_action_space.n, n)
        r1, r2 = cpu.step(a), dev.step(torch.as_tensor(a) if t % 2 else a)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated"), r1[:4], r2[:4]):
            _same(x, y, f"{name} at step {t}")
        i1, i2 = r1[4], r2[4]
        _same_info(i1, i2, f"info at step {t}")
        done = r1[2] | r1[3]
        ended += int(done.sum())
        if cpu.autoreset_mode == gym.vector.AutoresetMode.NEXT_STEP:
            assert "final_obs" not in i2  # the last observation is the step's own
            continue
        for i in np.flatnonzero(done):
            _same(i1["final_obs"][i], i2["final_obs"][i], f"final_obs of env {i} at step {t}")
        if done.any():
            f1, f2 = i1["final_info"], to_numpy(i2["final_info"])
            _same_info(f1, f2, f"final_info at step {t}")
    assert ended > 0, "no episode ended: the restart went untested"


def test_a_state_loaded_into_an_env_waiting_to_restart_plays_on_from_it(monkeypatch):
    kwargs = dict(obs="ram", autoreset_mode="next_step")
    cpu = nesle.make_vec("smb", 2, backend="cpu", seed=11, max_episode_steps=20, **kwargs)
    dev = _device_env(monkeypatch, "smb", 2, **kwargs)
    for env in (cpu, dev):
        env.reset(seed=11)
    saved = cpu.save_state(1)
    for t in range(20):  # the 20th step truncates both
        r1, r2 = cpu.step(np.array([3, 0])), dev.step(np.array([3, 0]))
    assert r1[3].all() and to_numpy(r2[3]).all()
    for env in (cpu, dev):
        env.load_state(0, saved)  # env 0 plays on from the state; env 1 restarts
    r1, r2 = cpu.step(np.array([0, 0])), dev.step(np.array([0, 0]))
    assert r1[4]["elapsed_steps"].tolist() == [1, 0]
    for name, x, y in zip(("obs", "reward", "terminated", "truncated"), r1[:4], r2[:4]):
        _same(x, y, name)
    _same_info(r1[4], r2[4], "info")


def test_a_loaded_state_shows_its_screen_on_the_device_step(monkeypatch):
    check_a_loaded_state_shows_its_screen(
        lambda: _device_env(monkeypatch, "smb", 2, obs="ram", render_mode="rgb_array")
    )


def test_a_step_refused_for_its_actions_keeps_a_loaded_states_screen_on_the_device_step(monkeypatch):
    check_a_step_refused_for_its_actions_keeps_a_loaded_states_screen(
        lambda: _device_env(monkeypatch, "smb", 2, obs="ram", render_mode="rgb_array")
    )


def test_a_hook_raising_mid_step_stops_the_device_step_until_a_full_reset(monkeypatch, blank_rom):
    check_a_hook_raising_mid_step_stops_the_env_until_a_full_reset(
        lambda reward: _device_env(monkeypatch, blank_rom, 2, frameskip=1, reward=reward)
    )


def test_words_are_views_of_the_same_bytes():
    t = torch.arange(2 * 3 * 84 * 84, dtype=torch.int64).to(torch.uint8).view(2, 3, 84, 84)
    w = _device._words(t, 2)
    assert w.dtype == torch.int64 and w.shape == (2, 3, 84 * 84 // 8) and w.data_ptr() == t.data_ptr()
    assert torch.equal(w.view(torch.uint8).view(t.shape), t)
    # Rows that 8 bytes do not tile take the widest integer that does.
    assert _device._words(torch.zeros(5, 6, dtype=torch.uint8), 1).dtype == torch.int16
    assert _device._words(torch.zeros(5, 7, dtype=torch.uint8), 1).dtype == torch.uint8

"""The game modules run unchanged on torch tensors (the CUDA backend computes rewards, dones and
infos on the GPU with them): on CPU tensors here, every function must give what it gives on
NumPy arrays, over RAM from real play and over random bytes (which reach every branch: deaths,
teleports, flag, clipped rewards, game over)."""

from __future__ import annotations

import numpy as np
import pytest

import nesle
from nesle.games import smb, tetris

torch = pytest.importorskip("torch")


def _ram_pairs(rom: bytes, start: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(prev, ram) batches: consecutive frames of real play plus random RAM."""
    batch = nesle.CpuBatch(rom, 16)
    rng = np.random.default_rng(seed)
    batch.step(np.full(16, nesle.BUTTON_START, np.uint8), start)
    trace = batch.step_trace(rng.integers(0, 256, 16, dtype=np.uint8), 120)  # (120, 16, 2048)
    played = trace.reshape(-1, 2048)
    noise = rng.integers(0, 256, (2000, 2048), dtype=np.uint8)
    prev = np.concatenate([played[:-1], noise[:-1]])
    ram = np.concatenate([played[1:], noise[1:]])
    return prev, ram


def _same(a, b, what):
    b = b.numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_array_equal(np.asarray(a), b, err_msg=what)


def _same_info(a, b, what):
    for key in a:
        if isinstance(a[key], dict):
            _same_info(a[key], b[key], f"{what}.{key}")
        else:
            _same(a[key], b[key], f"{what}.{key}")


def test_smb_functions_give_the_same_on_torch(smb_rom):
    prev, ram = _ram_pairs(smb_rom, 200, 0)
    tp, tr = torch.from_numpy(prev), torch.from_numpy(ram)
    _same(smb.reward(prev, ram), smb.reward(tp, tr), "reward")
    _same(smb.shaped_reward(prev, ram), smb.shaped_reward(tp, tr), "shaped")
    _same(smb.shaped_reward(prev, ram, death=-3.0, time=0.0), smb.shaped_reward(tp, tr, death=-3.0, time=0.0), "shaped kw")
    for name, fn in smb.DONE_MODES.items():
        _same(fn(ram), fn(tr), f"done {name}")
    _same_info(smb.info(ram), smb.info(tr), "info")
    assert smb.reward(tp, tr).dtype == torch.int64


def test_tetris_functions_give_the_same_on_torch(tetris_rom):
    prev, ram = _ram_pairs(tetris_rom, 300, 1)
    tp, tr = torch.from_numpy(prev), torch.from_numpy(ram)
    for version, kwargs in tetris.REWARD_VERSIONS.items():
        _same(tetris.reward(prev, ram, **kwargs), tetris.reward(tp, tr, **kwargs), f"reward v{version}")
    _same(tetris.done(ram, b_type=True), tetris.done(tr, b_type=True), "done")
    _same_info(tetris.info(ram), tetris.info(tr), "info")

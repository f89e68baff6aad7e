"""Determinism and save states: same inputs give the same consoles, and a state resumes exactly."""

from __future__ import annotations

import numpy as np

import nesle

from .conftest import hold


def _random_play(batch, seed: int, steps: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        batch.step(rng.integers(0, 256, (batch.num_envs, 2), dtype=np.uint8), 4)


def test_two_batches_given_the_same_actions_stay_identical(smb_rom):
    a, b = nesle.CpuBatch(smb_rom, 2), nesle.CpuBatch(smb_rom, 2)
    for batch in (a, b):
        hold(batch, nesle.BUTTON_START, 40)  # past the title screen: inputs now matter
        _random_play(batch, seed=7, steps=20)
    np.testing.assert_array_equal(a.ram(), b.ram())
    np.testing.assert_array_equal(a.pixels(), b.pixels())
    assert a.save_state(0) == b.save_state(0) and a.save_state(1) == b.save_state(1)


def test_consoles_in_one_batch_do_not_interfere(smb_rom):
    batch = nesle.CpuBatch(smb_rom, 3)
    single = nesle.CpuBatch(smb_rom, 1)
    rng = np.random.default_rng(3)
    for _ in range(30):
        acts = rng.integers(0, 256, 3, dtype=np.uint8)
        batch.step(acts, 3)
        single.step(acts[1:2], 3)
    np.testing.assert_array_equal(batch.ram()[1], single.ram()[0])
    np.testing.assert_array_equal(batch.pixels()[1], single.pixels()[0])


def test_a_saved_state_resumes_exactly(smb_rom):
    b = nesle.CpuBatch(smb_rom, 1)
    hold(b, 0, 40)
    hold(b, nesle.BUTTON_START, 5)
    state = b.save_state(0)
    hold(b, nesle.BUTTON_RIGHT, 30)
    ram, pixels, frames = b.ram(), b.pixels(), b.frame_counts()
    b.load_state(0, state)
    assert b.save_state(0) == state
    hold(b, nesle.BUTTON_RIGHT, 30)
    np.testing.assert_array_equal(b.ram(), ram)
    np.testing.assert_array_equal(b.pixels(), pixels)
    np.testing.assert_array_equal(b.frame_counts(), frames)


def test_restore_copies_one_state_into_the_masked_consoles(smb_rom):
    b = nesle.CpuBatch(smb_rom, 3)
    hold(b, 0, 10)
    state = b.save_state(0)
    hold(b, 0, 10)
    b.restore(state, np.array([True, False, True]))
    f = b.frame_counts()
    assert f[1] - f[0] == 10 and f[0] == f[2]
    assert b.save_state(0) == state == b.save_state(2)


def test_reset_power_cycles_the_masked_consoles(smb_rom):
    fresh = nesle.CpuBatch(smb_rom, 1)
    b = nesle.CpuBatch(smb_rom, 2)
    hold(b, nesle.BUTTON_START, 20)
    b.reset(np.array([True, False]))
    assert b.frame_counts()[0] == fresh.frame_counts()[0] < b.frame_counts()[1]
    assert b.save_state(0) == fresh.save_state(0)
    b.reset(soft=True)  # the reset button: every console keeps running
    hold(b, 0, 1)


def test_rendering_off_changes_no_game_state(smb_rom):
    on, off = nesle.CpuBatch(smb_rom, 1), nesle.CpuBatch(smb_rom, 1)
    off.set_render(False)
    for b in (on, off):
        hold(b, 0, 40)
        hold(b, nesle.BUTTON_START, 30)
    np.testing.assert_array_equal(on.ram(), off.ram())

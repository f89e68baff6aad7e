"""CPU/GPU parity and the CUDA backend's Python contract. Needs a CUDA GPU (marked ``gpu``:
deselected unless NESLE_GPU=1, see conftest.py; with it, a missing GPU fails every test here).

    NESLE_GPU=1 python3 -m pytest -q -m gpu tests/python

Parity is one body run on both backends: the same ROM, the same seeded actions and the same
resets give identical RAM, pixels and save-state blobs after every step.

Frame counts are kept small: a kernel launch runs one frame of every env in ~65 ms on an H200
today (one thread per console, latency-bound at small N), so the whole file takes ~1-2 minutes.
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nesle
from nesle import _native
from nesle._device import to_numpy

from .test_env import check_a_loaded_state_shows_its_screen, check_copies_step_on_as_the_original

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

N = 64
STEPS = 200


def _pair(rom: bytes, n: int = N):
    return nesle.CpuBatch(rom, n), _native.CudaBatch(rom, n)


def _assert_same(cpu, gpu, *, blobs: bool = True, where: str = "") -> None:
    np.testing.assert_array_equal(gpu.ram(), cpu.ram(), err_msg=f"RAM {where}")
    np.testing.assert_array_equal(gpu.pixels(), cpu.pixels(), err_msg=f"pixels {where}")
    if blobs:
        for i in range(cpu.num_envs):
            assert gpu.save_state(i) == cpu.save_state(i), f"state of env {i} {where}"


@pytest.fixture(params=["smb", "tetris"])
def game_rom(request, smb_rom, tetris_rom):
    return {"smb": smb_rom, "tetris": tetris_rom}[request.param]


def test_ram_pixels_and_states_match_the_cpu_after_every_step(game_rom):
    cpu, gpu = _pair(game_rom)
    rng = np.random.default_rng(7)
    _assert_same(cpu, gpu, where="at power-on")
    for t in range(STEPS):
        # Mostly Start early (to get past the menus), then random buttons.
        actions = rng.integers(0, 256, N, dtype=np.uint8)
        if t < 40:
            actions[:] = np.where(rng.random(N) < 0.3, nesle.BUTTON_START, 0)
        frames = 1 + (t % 50 == 49)  # mostly one frame per step, some two
        cpu.step(actions, frames)
        gpu.step(actions, frames)
        _assert_same(cpu, gpu, where=f"after step {t}")
    np.testing.assert_array_equal(gpu.frame_counts(), cpu.frame_counts())
    assert gpu.faults() == cpu.faults()
    np.testing.assert_array_equal(gpu.rgb(), cpu.rgb())


def test_a_masked_step_matches_the_cpu(smb_rom):
    # The chosen envs run in a launch of their own threads; the others keep state and picture.
    cpu, gpu = _pair(smb_rom)
    for b in (cpu, gpu):
        b.set_render(True)
    rng = np.random.default_rng(3)
    for t in range(60):
        actions = rng.integers(0, 256, N, dtype=np.uint8)
        if t < 20:
            actions[:] = np.where(rng.random(N) < 0.3, nesle.BUTTON_START, 0)
        mask = rng.random(N) < [0.0, 1.0, 0.05, 0.5][t % 4]
        if t % 3 == 0:  # both controllers: the second is the chosen consoles' only, too
            actions = np.stack([actions, rng.integers(0, 256, N, dtype=np.uint8)], axis=1)
        cpu.step(actions, 2, mask=mask)
        gpu.step(actions, 2, mask=mask)
        _assert_same(cpu, gpu, blobs=t % 10 == 9, where=f"after masked step {t}")
    np.testing.assert_array_equal(gpu.frame_counts(), cpu.frame_counts())
    assert len(set(gpu.frame_counts().tolist())) > 1  # the envs ran different frames
    before = gpu.ram()
    with pytest.raises(TypeError, match="masked step takes host actions"):
        gpu.step(torch.zeros(N, dtype=torch.uint8, device="cuda"), 1, mask=np.ones(N, bool))
    with pytest.raises(ValueError, match="mask"):
        gpu.step(np.zeros(N, np.uint8), 1, mask=np.ones(N + 1, bool))
    np.testing.assert_array_equal(gpu.ram(), before)


def test_skipping_cutscenes_on_cuda_matches_cpu():
    n, kwargs = 16, dict(obs="gray84", frame_stack=2, done="game_over", skip_cutscenes=True)
    cpu = nesle.make_vec("smb", n, backend="cpu", seed=5, **kwargs)
    gpu = nesle.make_vec("smb", n, backend="cuda", seed=5, **kwargs)
    o1, _ = cpu.reset(seed=5)
    o2, _ = gpu.reset(seed=5)
    np.testing.assert_array_equal(o1, o2.cpu().numpy())
    rng = np.random.default_rng(4)
    for t in range(150):
        if t % 4 == 0:  # SIMPLE_MOVEMENT, right-heavy, held 4 steps: lives are lost
            a = rng.choice([1, 2, 3, 4, 5, 6], n)
        r1, r2 = cpu.step(a), gpu.step(a)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated"), r1[:4], r2[:4]):
            np.testing.assert_array_equal(x, y.cpu().numpy(), err_msg=f"{name} at step {t}")
        i1, i2 = r1[4], to_numpy(r2[4])
        for key in ("life", "x_pos", "time", "status", "flag_get", "_life"):
            np.testing.assert_array_equal(i1[key], i2[key], err_msg=f"info {key} at step {t}")
    np.testing.assert_array_equal(cpu.ram(), gpu.ram().cpu().numpy())
    assert (cpu.ram()[:, 0x075A] < 2).sum() >= 4, "too few lives lost to skip a death"


def test_an_env_loaded_with_rendering_off_keeps_its_picture_as_on_the_cpu(smb_rom):
    # The GPU draws a step's last frame after it, line by line; an env whose state says it draws
    # no pixels must keep its picture there too, as nes-core leaves it.
    cpu, gpu = _pair(smb_rom, 8)
    rng = np.random.default_rng(5)
    for verb, args in [("step", (np.full(8, nesle.BUTTON_START, np.uint8), 45)), ("set_render", (False,))]:
        getattr(cpu, verb)(*args)
        getattr(gpu, verb)(*args)
    blob = cpu.save_state(0)
    for b in (cpu, gpu):
        b.set_render(True)
        b.step(np.zeros(8, np.uint8), 2)
        b.load_state(3, blob)
    for t in range(6):
        actions = rng.integers(0, 256, 8, dtype=np.uint8)
        cpu.step(actions, 4)
        gpu.step(actions, 4)
        _assert_same(cpu, gpu, where=f"after step {t}")


def test_step_trace_matches_the_cpu(smb_rom):
    cpu, gpu = _pair(smb_rom, 8)
    rng = np.random.default_rng(1)
    for _ in range(10):
        a = rng.integers(0, 256, 8, dtype=np.uint8)
        np.testing.assert_array_equal(gpu.step_trace(a, 4), cpu.step_trace(a, 4))


def test_reset_restore_write_ram_render_and_pad2_match_the_cpu(smb_rom):
    cpu, gpu = _pair(smb_rom, 16)
    rng = np.random.default_rng(3)

    def both(verb, *args, **kwargs):
        getattr(cpu, verb)(*args, **kwargs)
        getattr(gpu, verb)(*args, **kwargs)

    for t in range(30):
        both("step", rng.integers(0, 256, (16, 2), dtype=np.uint8), 1)  # both controllers
        mask = rng.random(16) < 0.3
        op = t % 6
        if op == 0:  # a byte for all, or one for each (written on the GPU, not through the host)
            value = int(rng.integers(0, 256)) if t % 12 == 0 else rng.integers(0, 256, 16, dtype=np.uint8)
            both("write_ram", int(rng.integers(0, 2048)), value, mask)
        elif op == 1:
            # Off at t = 7 and 19, on at 1, 13 and 25: the loads after 7 and 19 take states
            # saved with rendering off into a batch that renders.
            both("set_render", t % 12 != 7)
        elif op == 2:
            both("reset", mask, soft=True)
        elif op == 3:
            both("restore", cpu.save_state(int(rng.integers(0, 16))), mask)
        elif op == 4:
            blob = gpu.save_state(int(rng.integers(0, 16)))
            both("load_state", int(rng.integers(0, 16)), blob)
        both("step", rng.integers(0, 256, 16, dtype=np.uint8), 1)
        _assert_same(cpu, gpu, where=f"after op {op} at {t}")
    # A hard reset: CPU clears the picture, the GPU redraws it on the next frame (documented).
    both("reset", np.ones(16, bool))
    both("step", np.zeros(16, np.uint8), 2)
    _assert_same(cpu, gpu, where="after a hard reset")


@pytest.mark.parametrize("frames", [4, 7])
def test_a_large_batch_in_lockstep_matches_one_cpu_console(smb_rom, frames):
    # Every env gets the same buttons, so the batch's sorts leave the order as it was and it
    # steps in its lockstep blocks (nes-cuda launch.rs `default_step_block`), which at this
    # size (past 256 envs an SM on GPUs of up to 160 SMs) differ from the default's, and with no
    # pictures it runs each step's frames in launches of up to 4 (batch.rs `launch_step`):
    # 4 frames in one, 7 in a launch of 4 and one of 3.
    n = 40_960
    cpu, gpu = nesle.CpuBatch(smb_rom, 1), _native.CudaBatch(smb_rom, n, render=False)
    cpu.set_render(False)  # as the GPU's: whether pixels are drawn is part of a state
    rng = np.random.default_rng(3)
    for t in range(60):
        a = nesle.BUTTON_START if t in (20, 21) else int(rng.integers(0, 256))
        cpu.step(np.array([a], np.uint8), frames)
        gpu.step(np.full(n, a, np.uint8), frames)
        if t % 10 == 9:
            np.testing.assert_array_equal(gpu.ram(), np.broadcast_to(cpu.ram()[0], (n, 2048)), err_msg=f"step {t}")
    for i in (0, n // 2, n - 1):
        assert gpu.save_state(i) == cpu.save_state(0), f"state of env {i}"


def test_a_loaded_state_shows_its_screen_on_cuda(smb_rom):
    check_a_loaded_state_shows_its_screen(
        lambda: nesle.make_vec(smb_rom, 2, backend="cuda", obs="ram", render_mode="rgb_array")
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(obs="ram", start_states=["1-1", "1-2", "1-3", "1-4"]),
        dict(obs="gray84", frame_stack=3, render_mode="rgb_array", start_states=["1-1", "1-2"],
             start_sampling="random", autoreset_mode="next_step"),  # fmt: skip
    ],
)
def test_a_pickled_or_deep_copied_env_steps_on_as_the_original_on_cuda(smb_rom, kwargs):
    check_copies_step_on_as_the_original(
        lambda: nesle.make_vec(smb_rom, 3, backend="cuda", max_episode_steps=10, seed=5, **kwargs)
    )


def test_a_state_moves_cpu_to_gpu_to_cpu(smb_rom):
    cpu, gpu = nesle.CpuBatch(smb_rom, 1), _native.CudaBatch(smb_rom, 4)
    rng = np.random.default_rng(5)
    for _ in range(100):
        cpu.step(rng.integers(0, 256, 1, dtype=np.uint8), 2)
    gpu.load_state(2, cpu.save_state(0))
    assert gpu.save_state(2) == cpu.save_state(0)
    for _ in range(20):
        a = rng.integers(0, 256, 1, dtype=np.uint8)
        cpu.step(a, 2)
        gpu.step(np.repeat(a, 4), 2)
    back = nesle.CpuBatch(smb_rom, 1)
    back.load_state(0, gpu.save_state(2))
    assert back.save_state(0) == cpu.save_state(0)
    np.testing.assert_array_equal(back.ram()[0], cpu.ram()[0])


@pytest.mark.parametrize(
    ("game", "n", "kwargs"),
    [
        ("smb", 16, dict(obs="gray84", frame_stack=2)),
        # Two start states: the restarts gather each env's start frame and RAM.
        ("smb", 16, dict(obs="gray84", start_states=["1-1", "1-2"])),
        # RGB made by the rgb kernel every step, in a ring of two.
        ("smb", 16, dict(obs="rgb", frame_stack=2)),
        ("tetris", 16, dict(obs="ram")),
        # Three warps regrouped before every step, with the device's auto-resets in between.
        ("smb", 96, dict(obs="ram", regroup_every=1)),
        # Episodes that end inside a step, on frames that vary: the final info is of each env's
        # RAM on the frame its episode ended.
        ("smb", 16, dict(obs="ram", done=lambda ram: (ram[:, 0x09] ^ ram[:, 0x86]) % 11 == 0)),
        # NEXT_STEP: ended envs restart on the step after, the masked reset clears that.
        ("smb", 16, dict(obs="ram", autoreset_mode="next_step",
                         done=lambda ram: (ram[:, 0x09] ^ ram[:, 0x86]) % 11 == 0)),  # fmt: skip
        ("smb", 16, dict(obs="gray84", frame_stack=2, autoreset_mode="next_step",
                         start_states=["1-1", "1-2"])),  # fmt: skip
    ],
)
def test_make_vec_on_cuda_matches_cpu(game, n, kwargs):
    steps = 50
    cpu = nesle.make_vec(game, n, backend="cpu", seed=11, max_episode_steps=20, **kwargs)
    gpu = nesle.make_vec(game, n, backend="cuda", seed=11, max_episode_steps=20, **kwargs)
    assert (cpu.backend, gpu.backend) == ("cpu", "cuda")
    o1, _ = cpu.reset(seed=11)
    o2, _ = gpu.reset(seed=11)
    assert o2.is_cuda and o2.dtype == torch.uint8  # the CUDA backend's step stays on the GPU
    np.testing.assert_array_equal(o1, o2.cpu().numpy())
    rng = np.random.default_rng(2)
    ended = 0
    for t in range(steps):
        if t == steps // 2:  # a third of the envs restarted by hand: the same starts and masks
            mask = np.arange(n) % 3 == 0
            (o1, j1), (o2, j2) = (e.reset(options={"reset_mask": mask}) for e in (cpu, gpu))
            np.testing.assert_array_equal(o1, o2.cpu().numpy())
            j2 = to_numpy(j2)
            assert list(j1) == list(j2) and j2["_elapsed_steps"].tolist() == mask.tolist()
            for key in j1:
                for sub in j1[key] if isinstance(j1[key], dict) else [None]:
                    x = j1[key] if sub is None else j1[key][sub]
                    y = j2[key] if sub is None else j2[key][sub]
                    np.testing.assert_array_equal(x, y, err_msg=f"masked reset's info {key} {sub}")
        a = rng.integers(0, cpu.single_action_space.n, n)
        # Actions as a CUDA tensor half of the time: both must be accepted.
        r1, r2 = cpu.step(a), gpu.step(torch.as_tensor(a, device="cuda") if t % 2 else a)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated"), r1[:4], r2[:4]):
            assert y.is_cuda, name
            np.testing.assert_array_equal(x, y.cpu().numpy(), err_msg=f"{name} at step {t}")
        i1, i2 = r1[4], to_numpy(r2[4])
        for key in i1:
            if key in ("final_obs", "final_info"):
                continue
            if isinstance(i1[key], dict):
                for sub in i1[key]:
                    np.testing.assert_array_equal(i1[key][sub], i2[key][sub], err_msg=f"{key}.{sub}")
            else:
                np.testing.assert_array_equal(i1[key], i2[key], err_msg=f"info {key} at step {t}")
        done = r1[2] | r1[3]
        ended += int(done.sum())
        if "autoreset_mode" in kwargs:  # NEXT_STEP: the last observation is the step's own
            assert "final_obs" not in i2
            continue
        for i in np.flatnonzero(done):  # the final observation and info of an ended episode
            np.testing.assert_array_equal(i1["final_obs"][i], i2["final_obs"][i])
        if done.any():
            f1, f2 = i1["final_info"], i2["final_info"]
            assert list(f1) == list(f2), f"final_info keys at step {t}"
            for key in f1:
                for sub in f1[key] if isinstance(f1[key], dict) else [None]:
                    x = f1[key] if sub is None else f1[key][sub]
                    y = f2[key] if sub is None else f2[key][sub]
                    np.testing.assert_array_equal(x, y, err_msg=f"final_info {key} {sub} at step {t}")
    assert ended > 0  # max_episode_steps=20: the device auto-reset ran
    np.testing.assert_array_equal(cpu.ram(), gpu.ram().cpu().numpy())
    cpu.close()
    gpu.close()


def test_sb3_and_single_env_get_numpy_from_the_cuda_backend(smb_rom):
    from nesle.sb3 import NesleVecEnv

    venv = NesleVecEnv("smb", 4, backend="cuda", max_episode_steps=5)
    obs = venv.reset()
    assert isinstance(obs, np.ndarray)
    ended = []
    for _ in range(6):  # max_episode_steps=5: every env is truncated at the fifth step
        obs, reward, dones, infos = venv.step(np.ones(4, np.int64))
        assert isinstance(obs, np.ndarray) and isinstance(reward, np.ndarray)
        ended += [infos[i] for i in np.flatnonzero(dones)]
    assert ended and all(isinstance(i["terminal_observation"], np.ndarray) for i in ended)
    env = nesle.make("smb", backend="cuda")
    obs, info = env.reset(seed=0)
    assert isinstance(obs, np.ndarray) and isinstance(info["x_pos"], int)
    obs, r, term, trunc, info = env.step(1)
    assert isinstance(obs, np.ndarray) and isinstance(r, float)


def test_device_trace_and_bank_reset_match_the_cpu(smb_rom):
    n = 8
    cpu, gpu = _pair(smb_rom, n)
    trace = torch.empty((3, n, 2048), dtype=torch.uint8, device="cuda")
    rng = np.random.default_rng(4)
    for _ in range(20):
        a = rng.integers(0, 256, n, dtype=np.uint8)
        expect = cpu.step_trace(a, 3)
        assert gpu.step_trace(torch.as_tensor(a, device="cuda"), 3, out=trace) is trace
        np.testing.assert_array_equal(trace.cpu().numpy(), expect)
    blobs = [cpu.save_state(1), cpu.save_state(5)]
    gpu.set_bank(blobs)
    mask = torch.tensor([True, False, True, True, False, False, True, False], device="cuda")
    pick = torch.tensor([0, 1, 1, 7, 0, 0, 0, 1], dtype=torch.int32, device="cuda")  # 7: no such state
    gpu.reset_from_bank(mask, pick)
    for i, (m, p) in enumerate(zip(mask.tolist(), pick.tolist())):
        if m and p < 2:
            cpu.load_state(i, blobs[p])
    assert [gpu.save_state(i) for i in range(n)] == [cpu.save_state(i) for i in range(n)]
    a = rng.integers(0, 256, n, dtype=np.uint8)
    cpu.step(a, 2)
    gpu.step(a, 2)
    _assert_same(cpu, gpu, where="after reset_from_bank and a step")
    # RAM writes change the consoles, not the bank they restart from.
    for b in (cpu, gpu):
        b.write_ram(0x10, np.arange(1, n + 1, dtype=np.uint8))
    _assert_same(cpu, gpu, where="after write_ram")
    gpu.reset_from_bank(mask, pick)
    for i, (m, p) in enumerate(zip(mask.tolist(), pick.tolist())):
        if m and p < 2:
            cpu.load_state(i, blobs[p])
    _assert_same(cpu, gpu, where="after write_ram and reset_from_bank")
    with pytest.raises(ValueError, match="shape"):
        gpu.step_trace(np.zeros(n, np.uint8), 2, out=trace)
    with pytest.raises(TypeError, match="CUDA"):
        gpu.step_trace(np.zeros(n, np.uint8), 3, out=np.zeros((3, n, 2048), np.uint8))
    with pytest.raises(TypeError, match="int32"):
        gpu.reset_from_bank(mask, pick.long())


def test_auto_picks_cuda_here(smb_rom):
    ok, why = _native.cuda_available()
    assert ok, why
    assert nesle.make_vec(smb_rom, 2, backend="auto").backend == "cuda"


# --- DLPack ---


def test_ram_tensor_views_live_state_and_outlives_the_batch(smb_rom):
    torch = pytest.importorskip("torch")
    gpu = _native.CudaBatch(smb_rom, 8)
    gpu.step(np.full(8, nesle.BUTTON_START, np.uint8), 60)
    view = gpu.ram_tensor()
    assert view.__dlpack_device__() == (2, 0)
    t = torch.from_dlpack(view)
    assert t.is_cuda and t.dtype == torch.uint8 and tuple(t.shape) == (8, 2048)
    assert t.stride()[1] == 1 and t.stride()[0] >= 2048  # one FlatState per env
    np.testing.assert_array_equal(t.cpu().numpy(), gpu.ram())
    gpu.step(np.zeros(8, np.uint8), 5)
    gpu.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), gpu.ram())  # a view, not a copy
    expected = gpu.ram()
    gpu.close()
    with pytest.raises(RuntimeError, match="closed"):
        gpu.ram()
    del gpu, view
    gc.collect()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), expected)
    t2 = t + 0  # the memory is still usable by kernels
    np.testing.assert_array_equal(t2.cpu().numpy(), expected)


def test_both_capsule_versions_work_with_torch(smb_rom):
    torch = pytest.importorskip("torch")
    gpu = _native.CudaBatch(smb_rom, 4)
    gpu.step(np.zeros(4, np.uint8), 10)
    for mv in (None, (1, 0)):
        cap = gpu.ram_tensor().__dlpack__(stream=1, max_version=mv)
        np.testing.assert_array_equal(torch.from_dlpack(cap).cpu().numpy(), gpu.ram())
    for _ in range(100):  # unconsumed capsules free themselves
        gpu.ram_tensor().__dlpack__()
    with pytest.raises(BufferError):
        gpu.ram_tensor().__dlpack__(copy=True)
    with pytest.raises(BufferError):
        gpu.ram_tensor().__dlpack__(dl_device=(1, 0))


def test_pixels_tensor_matches_pixels_and_needs_a_buffer(smb_rom):
    torch = pytest.importorskip("torch")
    gpu = _native.CudaBatch(smb_rom, 4)
    gpu.step(np.zeros(4, np.uint8), 20)
    px = torch.from_dlpack(gpu.pixels_tensor())
    assert tuple(px.shape) == (4, 240, 256)
    np.testing.assert_array_equal(px.cpu().numpy(), gpu.pixels())
    bare = _native.CudaBatch(smb_rom, 4, render=False)
    with pytest.raises(ValueError, match="render"):
        bare.pixels_tensor()
    assert not bare.pixels().any()
    bare.set_render(True)
    bare.step(np.zeros(4, np.uint8), 20)
    np.testing.assert_array_equal(bare.pixels(), gpu.pixels())
    np.testing.assert_array_equal(torch.from_dlpack(bare.pixels_tensor()).cpu().numpy(), gpu.pixels())


def test_a_consumer_on_another_stream_sees_finished_steps(smb_rom):
    torch = pytest.importorskip("torch")
    n = 2048
    gpu = _native.CudaBatch(smb_rom, n, render=False)
    side = torch.cuda.Stream()
    for k in range(3):
        gpu.step(np.full(n, nesle.BUTTON_START if k == 0 else 0, np.uint8), 20)  # async
        with torch.cuda.stream(side):
            copy = torch.from_dlpack(gpu.ram_tensor()).clone()  # read on the side stream
        side.synchronize()
        np.testing.assert_array_equal(copy.cpu().numpy(), gpu.ram())


def test_actions_from_a_torch_tensor_are_read_in_place(smb_rom):
    torch = pytest.importorskip("torch")
    n = 32
    a_gpu, a_cpu = _native.CudaBatch(smb_rom, n), nesle.CpuBatch(smb_rom, n)
    side = torch.cuda.Stream()
    gen = torch.Generator(device="cuda").manual_seed(0)
    for t in range(40):
        with torch.cuda.stream(side):  # produced on another stream: the step must wait for it
            acts = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda", generator=gen)
        a_gpu.step(acts, 1)
        a_cpu.step(acts.cpu().numpy(), 1)
        del acts  # torch may reuse the memory: the batch holds the tensor until it synchronizes
        if t % 10 == 0:
            np.testing.assert_array_equal(a_gpu.ram(), a_cpu.ram(), err_msg=f"step {t}")
    trace = a_gpu.step_trace(torch.zeros(n, dtype=torch.uint8, device="cuda"), 3)
    np.testing.assert_array_equal(trace, a_cpu.step_trace(np.zeros(n, np.uint8), 3))
    _assert_same(a_cpu, a_gpu)


def test_bad_device_actions_raise_like_bad_numpy_actions(smb_rom):
    torch = pytest.importorskip("torch")
    gpu = _native.CudaBatch(smb_rom, 4)
    cases = [
        (torch.zeros(4, dtype=torch.int64, device="cuda"), TypeError),
        (torch.zeros(5, dtype=torch.uint8, device="cuda"), ValueError),
        (torch.zeros(4, 2, dtype=torch.uint8, device="cuda"), ValueError),
        (torch.zeros(8, dtype=torch.uint8, device="cuda")[::2], ValueError),
        (torch.zeros(4, dtype=torch.uint8), TypeError),  # a CPU tensor: pass numpy instead
    ]
    for actions, error in cases:
        with pytest.raises(error):
            gpu.step(actions)


# --- errors ---


def test_bad_inputs_raise_the_cpu_backends_errors(smb_rom, blank_rom):
    gpu = _native.CudaBatch(blank_rom, 3)
    with pytest.raises(TypeError, match="uint8"):
        gpu.step(np.zeros(3, np.int64))
    with pytest.raises(TypeError):
        gpu.step([0, 0, 0])
    with pytest.raises(ValueError, match=r"\(3,\)"):
        gpu.step(np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="frames"):
        gpu.step(np.zeros(3, np.uint8), -1)
    with pytest.raises(ValueError, match="frames"):
        gpu.step_trace(np.zeros(3, np.uint8), 0)
    with pytest.raises(IndexError):
        gpu.save_state(3)
    with pytest.raises(nesle.StateError):
        gpu.load_state(0, b"not a state")
    smb_state = _native.CudaBatch(smb_rom, 1).save_state(0)
    with pytest.raises(nesle.StateError):
        gpu.load_state(0, smb_state)  # another ROM
    with pytest.raises(ValueError, match="addr"):
        gpu.write_ram(2048, 0)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        gpu.write_ram(0, np.zeros(2, np.uint8))
    with pytest.raises(TypeError, match="dtype uint8"):
        gpu.write_ram(0, np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="mask"):
        gpu.write_ram(0, 1, np.ones(2, bool))
    with pytest.raises(ValueError, match="mask"):
        gpu.reset(np.ones(2, bool))
    with pytest.raises(ValueError, match="num_envs"):
        _native.CudaBatch(blank_rom, 0)
    with pytest.raises(nesle.RomError):
        _native.CudaBatch(b"NES\x1a", 1)
    with pytest.raises(nesle.BackendUnavailableError, match="GPU 99"):
        _native.CudaBatch(blank_rom, 1, 99)


@pytest.mark.parametrize("n", [10**9, 2**62, 2**63 - 1])  # the last two: bytes past 2^64
def test_too_many_envs_for_gpu_memory_is_a_memory_error(blank_rom, n):
    with pytest.raises(MemoryError, match="GPU memory"):
        _native.CudaBatch(blank_rom, n)
    with pytest.raises(MemoryError, match="GPU memory"):
        _native.CudaBatch(blank_rom, n, regroup_every=0)  # no sort buffer
    # The picture buffer's hint only where the batch would have one.
    with pytest.raises(MemoryError, match="render=False: pixels take 60 KiB"):
        _native.CudaBatch(blank_rom, n)
    with pytest.raises(MemoryError, match="use fewer environments$"):
        _native.CudaBatch(blank_rom, n, render=False)


_HOST_MEMORY_SCRIPT = """
import resource, sys
import numpy as np
from nesle import _native

b = _native.CudaBatch(open(sys.argv[1], "rb").read(), 4096, render=False)
b.step(np.zeros(4096, np.uint8), 1)
before = int(b.frame_counts()[0])
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
resource.setrlimit(resource.RLIMIT_AS, (used + (16 << 20), hard))  # 16 MiB more, no room
for call in (b.pixels, b.rgb, b.frame_counts, b.faults):  # 240, 720, 50 and 50 MiB
    try:
        call()
        print(call.__name__, "allocated")
    except MemoryError as e:
        print(call.__name__, "MemoryError", e)
resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
b.step(np.zeros(4096, np.uint8), 1)
print("usable", int(b.frame_counts()[0]) - before)
"""


def test_a_host_buffer_the_host_cannot_hold_is_a_memory_error(smb_rom, tmp_path):
    """Data copied from the GPU lands in host buffers: one the host has no room for is a
    MemoryError and the batch goes on (a failed allocation used to abort the process). The
    room is taken away with an address-space limit, in a process of its own."""
    rom = tmp_path / "smb.nes"
    rom.write_bytes(smb_rom)
    run = subprocess.run(
        [sys.executable, "-c", _HOST_MEMORY_SCRIPT, str(rom)], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    for name in ("pixels", "rgb", "frame_counts", "faults"):
        assert any(line.startswith(f"{name} MemoryError") for line in lines), run.stdout
    assert "usable 1" in lines, run.stdout


def test_the_device_report_reads_the_gpu_the_loaded_step_kernel_and_the_batchs_memory(smb_rom):
    from nesle import bench

    small, large = (_native.CudaBatch(smb_rom, n, render=False) for n in (1024, 2048))
    r = small.device_report()
    assert set(r) == {"device", "compute_capability", "sms", "driver", "image", "step_registers",
                      "step_local_bytes", "step_block", "step_blocks_per_sm", "step_warps_per_sm",
                      "max_warps_per_sm", "occupancy", "device_bytes", "bytes_per_env"}  # fmt: skip
    props = torch.cuda.get_device_properties(0)
    assert r["device"] == props.name and r["sms"] == props.multi_processor_count
    assert r["compute_capability"] == f"{props.major}.{props.minor}"
    assert 0 < r["step_registers"] <= 255 and r["step_local_bytes"] > 0 and r["image"]
    assert r["step_block"] % 32 == 0 and r["step_blocks_per_sm"] >= 1
    assert r["step_warps_per_sm"] == r["step_blocks_per_sm"] * r["step_block"] // 32
    assert 0 < r["step_warps_per_sm"] <= r["max_warps_per_sm"]
    assert r["occupancy"] == pytest.approx(r["step_warps_per_sm"] / r["max_warps_per_sm"])
    # What an env adds: SMB's packed state (12,896 B: PRG RAM and CHR ROM kept), its action,
    # reset mask and pick (6 B), and up to 16 B for the regrouping sort (README, "Memory").
    per_env = (large.device_report()["device_bytes"] - r["device_bytes"]) / 1024
    assert 12_902 <= per_env <= 12_918
    assert r["bytes_per_env"] == r["device_bytes"] // 1024
    # Pictures on: the picture buffer (61,440 B an env) at least.
    small.set_render(True)
    small.step(np.zeros(1024, np.uint8), 1)
    assert small.device_report()["bytes_per_env"] >= r["bytes_per_env"] + 61_440
    assert bench.describe_gpu(r).startswith(f"GPU: {props.name}")
    assert f"{r['step_registers']} registers" in bench.describe_step(r)


@pytest.mark.parametrize("every", [1, 3])
def test_regrouping_changes_nothing_but_the_speed(smb_rom, every):
    # 96 envs (three warps) that drift apart; regrouped before every (third) step, against the
    # same envs never regrouped and against the CPU.
    n = 96
    cpu = nesle.CpuBatch(smb_rom, n)
    fixed = _native.CudaBatch(smb_rom, n, regroup_every=0)
    moved = _native.CudaBatch(smb_rom, n, regroup_every=every)
    rng = np.random.default_rng(11)
    for t in range(60):
        a = np.where(rng.random(n) < 0.3, nesle.BUTTON_START, 0).astype(np.uint8) if t < 30 else rng.integers(0, 256, n, dtype=np.uint8)
        for b in (cpu, fixed, moved):
            b.step(a, 2)
        np.testing.assert_array_equal(moved.ram(), fixed.ram(), err_msg=f"step {t}")
        np.testing.assert_array_equal(moved.pixels(), cpu.pixels(), err_msg=f"step {t}")
    assert [moved.save_state(i) for i in range(n)] == [cpu.save_state(i) for i in range(n)]


def test_gray84_kernel_gives_the_cpu_bytes(smb_rom):
    n = 24
    gpu = _native.CudaBatch(smb_rom, n)
    rng = np.random.default_rng(9)
    out = torch.zeros((n, 84, 84), dtype=torch.uint8, device="cuda")
    for t in range(8):
        gpu.step(rng.integers(0, 256, n, dtype=np.uint8) if t > 2 else np.full(n, 8, np.uint8), 30)
        assert gpu.gray84(out) is out
        np.testing.assert_array_equal(out.cpu().numpy(), _native.gray84(gpu.pixels()), err_msg=f"step {t}")
    with pytest.raises(ValueError, match="shape"):
        gpu.gray84(torch.zeros((n, 84, 83), dtype=torch.uint8, device="cuda"))
    with pytest.raises(TypeError):
        gpu.gray84(np.zeros((n, 84, 84), np.uint8))


def test_rgb_kernel_gives_the_cpu_bytes(smb_rom):
    n = 24
    gpu = _native.CudaBatch(smb_rom, n)
    rng = np.random.default_rng(9)
    out = torch.zeros((n, 240, 256, 3), dtype=torch.uint8, device="cuda")
    for t in range(8):
        gpu.step(rng.integers(0, 256, n, dtype=np.uint8) if t > 2 else np.full(n, 8, np.uint8), 30)
        assert gpu.rgb(out=out) is out
        want = nesle.palette()[gpu.pixels() & 63]
        np.testing.assert_array_equal(out.cpu().numpy(), want, err_msg=f"step {t}")
        np.testing.assert_array_equal(gpu.rgb(), want, err_msg=f"step {t}, host")
    with pytest.raises(ValueError, match="shape"):
        gpu.rgb(out=torch.zeros((n, 240, 256, 4), dtype=torch.uint8, device="cuda"))
    with pytest.raises(TypeError):
        gpu.rgb(out=np.zeros((n, 240, 256, 3), np.uint8))


@pytest.mark.parametrize("frames", [1, 4])
def test_gray84_made_by_the_step_gives_the_cpu_bytes(smb_rom, frames):
    # The line renderer's 84x84 pictures (step_trace(gray84=...)), the drawn envs' and any
    # redrawn ones' (crates/nes-cuda/tests/lines.rs covers those on the host), against the
    # CPU's of the same pictures; Start at random at first, so the envs' frames differ (title,
    # black screens, play).
    n = 64
    gpu = _native.CudaBatch(smb_rom, n)
    rng = np.random.default_rng(5)
    trace = torch.zeros((frames, n, 2048), dtype=torch.uint8, device="cuda")
    gray = torch.zeros((n, 84, 84), dtype=torch.uint8, device="cuda")
    for t in range(40):
        a = np.where(rng.random(n) < 0.3, nesle.BUTTON_START, 0) if t < 20 else rng.integers(0, 256, n)
        gray.fill_(7)  # every byte must be written again
        assert gpu.step_trace(a.astype(np.uint8), frames, out=trace, gray84=gray) is trace
        np.testing.assert_array_equal(gray.cpu().numpy(), _native.gray84(gpu.pixels()), err_msg=f"step {t}")
    with pytest.raises(ValueError, match="shape"):
        gpu.step_trace(np.zeros(n, np.uint8), frames, out=trace, gray84=torch.zeros((n, 84, 83), dtype=torch.uint8, device="cuda"))
    with pytest.raises(ValueError, match="out"):
        gpu.step_trace(np.zeros(n, np.uint8), frames, gray84=gray)


_SOURCE_RUN = """
import sys, numpy as np, nesle
from nesle import _native
rom, n = open(sys.argv[1], "rb").read(), int(sys.argv[2])
cpu, gpu = nesle.CpuBatch(rom, n), _native.CudaBatch(rom, n)
rng = np.random.default_rng(3)
for t in range(30):
    a = np.where(rng.random(n) < 0.3, nesle.BUTTON_START, 0).astype(np.uint8) if t < 20 else rng.integers(0, 256, n, dtype=np.uint8)
    cpu.step(a, 2)
    gpu.step(a, 2)
    assert all(gpu.save_state(i) == cpu.save_state(i) for i in range(n)), t
print("same")
"""


def _source_env(**extra: str) -> dict[str, str]:
    kernels = Path(__file__).resolve().parents[2] / "kernels"
    nvidia = Path(torch.__file__).resolve().parent.parent / "nvidia"
    libs = [str(p) for p in nvidia.glob("*/lib") if list(p.glob("libnvrtc.so*"))]
    env = dict(os.environ, NESLE_KERNEL_SOURCE=str(kernels), **extra)
    env["LD_LIBRARY_PATH"] = ":".join(libs + [env.get("LD_LIBRARY_PATH", "")])
    return env


def test_kernels_compiled_from_source_at_run_time_match_the_cpu(smb_rom, tmp_path):
    """NESLE_KERNEL_SOURCE: the kernels compiled by NVRTC at run time (a fresh process, so the
    embedded images are not loaded first) give the CPU's states; a broken source is a clear error."""
    env = _source_env()
    rom = tmp_path / "smb.nes"
    rom.write_bytes(smb_rom)
    run = subprocess.run([sys.executable, "-c", _SOURCE_RUN, str(rom), "8"], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-3000:]

    kernels = Path(env["NESLE_KERNEL_SOURCE"])
    broken = tmp_path / "broken"
    shutil.copytree(kernels, broken)
    (broken / "nesle.cu").write_text((kernels / "nesle.cu").read_text() + "\nthis is not CUDA\n")
    env["NESLE_KERNEL_SOURCE"] = str(broken)
    run = subprocess.run([sys.executable, "-c", _SOURCE_RUN, str(rom), "8"], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode != 0 and "NVRTC failed" in run.stderr, run.stderr[-3000:]

    # Sources whose entry points take other parameters would run on misplaced arguments: refused.
    other = tmp_path / "other"
    shutil.copytree(kernels, other)
    sig = "nesle_gather_ram(const u8* states, u32 stride, u8* out, u32 n_envs)"
    text = (kernels / "nesle.cu").read_text()
    assert sig in text
    (other / "nesle.cu").write_text(text.replace(sig, sig[:-1] + ", u32 extra)"))
    env["NESLE_KERNEL_SOURCE"] = str(other)
    run = subprocess.run([sys.executable, "-c", _SOURCE_RUN, str(rom), "8"], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode != 0 and "entry points" in run.stderr and "u32, u32)" in run.stderr, run.stderr[-3000:]


@pytest.mark.parametrize(("n", "block"), [(24, None), (24, "32"), (300, "512")], ids=["24", "24-block32", "300-block512"])
def test_diverging_envs_over_long_steps_finish_with_the_cpus_results(smb_rom, tmp_path, n, block):
    """Steps of 30 frames, in lockstep at first (Start), then with random buttons, so that the
    warps diverge inside steps that cross hundreds of the frame's part barriers; in partial
    blocks (24 envs), one-warp blocks and blocks of 512. In a child process with a time limit, so
    a kernel that hangs (as #187's first barrier did, kernel-notes "The pair hangs") fails this
    test instead of stopping the suite: bench/long_steps.py with --check."""
    rom = tmp_path / "smb.nes"
    rom.write_bytes(smb_rom)
    script = Path(__file__).resolve().parents[2] / "bench" / "long_steps.py"
    env = dict(os.environ, **({"NESLE_BLOCK": block} if block else {}))
    try:
        run = subprocess.run([sys.executable, str(script), str(rom), str(n), "30", "--check"], env=env,
                             capture_output=True, text=True, timeout=180, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"{n} envs (block {block or 'default'}): the steps did not finish in 180 s (a kernel hung)")
    assert run.returncode == 0 and "the CPU's results" in run.stdout, run.stderr[-3000:]


@pytest.mark.parametrize("options", ["-DNESLE_PC_VOTE=1", "-DNESLE_PC_VOTE=2"], ids=["1", "2"])
def test_the_pc_vote_keeps_every_env_exact(smb_rom, tmp_path, options):
    """`-DNESLE_PC_VOTE=1|2` (sm_80+: the threads of a warp take turns by 6502 PC, or by stack
    depth then PC) changes which thread waits, never what an env computes: 40 envs (a whole warp
    and a partial one) with diverging random inputs give the CPU's states after every step."""
    env = _source_env(NESLE_KERNEL_OPTIONS=options)
    rom = tmp_path / "smb.nes"
    rom.write_bytes(smb_rom)
    run = subprocess.run([sys.executable, "-c", _SOURCE_RUN, str(rom), "40"], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-3000:]


def test_an_output_tensor_at_an_odd_byte_offset_is_refused_and_cuda_goes_on(smb_rom):
    """The kernels store the RAM trace 8 bytes and RGB pictures 4 bytes at a time: a view at an
    odd offset, contiguous and of the right shape, would fault with a misaligned address, an
    error the whole CUDA context keeps (torch's work after it failed too)."""
    n = 4
    cpu, gpu = _pair(smb_rom, n)
    a = np.zeros(n, np.uint8)
    size = n * 2048
    arena = torch.zeros(size + 8, dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match="multiple of 8 bytes"):
        gpu.step_trace(a, 1, out=arena[3 : 3 + size].view(1, n, 2048))
    size = n * 240 * 256 * 3
    arena = torch.zeros(size + 8, dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match="multiple of 8 bytes"):
        gpu.rgb(out=arena[1 : 1 + size].view(n, 240, 256, 3))
    # Nothing ran: the batch and torch go on, and an aligned view of the same arena is taken.
    assert float(torch.ones(3, device="cuda").sum()) == 3.0
    out = gpu.step_trace(a, 1, out=arena[8 : 8 + n * 2048].view(1, n, 2048))
    np.testing.assert_array_equal(out.cpu().numpy(), cpu.step_trace(a, 1))


def test_a_batch_past_one_gather_run_gathers_every_env(smb_rom):
    """The RAM gather launches in runs of 2^22 envs (nes-cuda launch.rs `GATHER_RUN`); this
    batch has a second run of 5. A few envs on either side of the seam get buttons of their own
    (SMB keeps the pad's bits in RAM), so a run that read or wrote another run's envs shows; the
    idle envs checked lie in both runs.
    ~65 GB of GPU memory and ~9 GB of host memory: a GPU with less free memory cannot run it."""
    free, _ = torch.cuda.mem_get_info()
    if free < 66e9:
        pytest.skip(f"needs ~65 GB of free GPU memory, {free / 1e9:.0f} GB free here")
    n = 2**22 + 5
    probes = [0, 2**22 - 1, 2**22, 2**22 + 1, n - 1]
    buttons = [nesle.BUTTON_A, nesle.BUTTON_B, nesle.BUTTON_SELECT, nesle.BUTTON_LEFT, nesle.BUTTON_RIGHT]
    gpu = _native.CudaBatch(smb_rom, n, render=False)
    cpu = nesle.CpuBatch(smb_rom, len(probes) + 1)  # the last one idle, as the other envs
    cpu.set_render(False)
    actions = np.zeros(n, np.uint8)
    actions[probes] = buttons
    for _ in range(4):
        gpu.step(actions, 4)
        cpu.step(np.array([*buttons, 0], np.uint8), 4)
    want = cpu.ram()
    assert len({bytes(row) for row in want}) == len(want), "the buttons must leave different RAM"
    ram = gpu.ram()
    assert ram.shape == (n, 2048)
    np.testing.assert_array_equal(ram[probes], want[:-1])
    for i in (1, 2**21, 2**22 - 2, 2**22 + 2, n - 2):
        np.testing.assert_array_equal(ram[i], want[-1], err_msg=f"env {i}")

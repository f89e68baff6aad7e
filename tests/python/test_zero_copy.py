"""CPU buffers without copies: ``ram_view()`` / ``pixels_view()`` (read-only views of the batch's
own mirrors), ``out=`` (a caller's array filled in place), and ``make_vec(copy=False)``."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import nesle

N = 3
START = 1 << 3  # the Start button


def _stepped(rom: bytes, n: int = N, frames: int = 40) -> nesle.CpuBatch:
    b = nesle.CpuBatch(rom, n)
    b.step(np.zeros(n, np.uint8), frames)
    return b


def _same(view: np.ndarray, b: nesle.CpuBatch) -> None:
    np.testing.assert_array_equal(view, b.ram())


# --- views ---


def test_ram_view_is_one_read_only_array_over_the_batch_buffer(blank_rom):
    b = nesle.CpuBatch(blank_rom, N)
    v = b.ram_view()
    assert v.shape == (N, 2048) and v.dtype == np.uint8 and v.flags.c_contiguous
    assert b.ram_view() is v
    b.step(np.zeros(N, np.uint8), 2)
    assert np.shares_memory(b.ram_view(), v)
    assert not np.shares_memory(b.ram(), v)  # ram() stays a new array
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0, 0] = 1
    with pytest.raises(ValueError):
        v.flags.writeable = True  # the base is a DLPack capsule, not a writable buffer


def test_the_views_follow_every_call_that_changes_consoles(smb_rom):
    b = _stepped(smb_rom)
    ram, pixels = b.ram_view(), b.pixels_view()
    assert pixels.shape == (N, 240, 256) and not pixels.flags.writeable

    def check(what: str) -> None:
        np.testing.assert_array_equal(ram, b.ram(), err_msg=what)
        np.testing.assert_array_equal(pixels, b.pixels(), err_msg=what)

    check("first view")
    state = b.save_state(0)
    before = ram.copy()
    b.step(np.full(N, START, np.uint8), 30)
    assert (ram != before).any()  # the same array, new contents
    check("step")
    b.step_trace(np.zeros(N, np.uint8), 3)
    check("step_trace")
    b.write_ram(0x10, 0xAB, np.array([True, False, True]))
    check("write_ram")
    b.reset(np.array([False, True, False]))
    check("hard reset")
    b.reset(soft=True)
    check("soft reset")
    b.restore(state, np.array([True, True, False]))
    check("restore")
    b.step(np.zeros(N, np.uint8), 5)
    b.load_state(2, state)
    check("load_state")


def test_views_outlive_their_batch(smb_rom):
    b = _stepped(smb_rom, 4)
    ram, pixels = b.ram_view(), b.pixels_view()
    want_ram, want_pixels = b.ram(), b.pixels()
    assert want_pixels.any()
    del b
    gc.collect()
    # Churn the allocator: freed blocks of these sizes would be handed out again (and the 240
    # KiB picture buffer, an mmap, unmapped: reading it would crash).
    junk = [np.full(want_ram.shape, 0xEE, np.uint8) for _ in range(64)]
    junk += [np.full(want_pixels.shape, 0xEE, np.uint8) for _ in range(8)]
    junk += [_stepped(smb_rom, 4, 1) for _ in range(4)]
    np.testing.assert_array_equal(ram, want_ram)
    np.testing.assert_array_equal(pixels, want_pixels)
    del junk


# --- out= ---


def test_out_fills_slices_of_a_rollout_buffer_in_place(smb_rom):
    b = _stepped(smb_rom)
    steps, frames = 4, 2
    rollout = np.zeros((steps, N, 2048), np.uint8)
    traces = np.zeros((steps, frames, N, 2048), np.uint8)
    screens = np.zeros((steps, N, 240, 256), np.uint8)
    colour = np.zeros((2, N, 240, 256, 3), np.uint8)
    want_ram, want_traces, want_screens = [], [], []
    for t in range(steps):
        slot = traces[t]
        assert b.step_trace(np.full(N, START, np.uint8), frames, out=slot) is slot
        want_traces.append(b.ram())  # the RAM after the last frame
        slot = rollout[t]
        assert b.ram(out=slot) is slot
        assert b.pixels(out=screens[t]) is not None
        want_ram.append(b.ram())
        want_screens.append(b.pixels())
    np.testing.assert_array_equal(rollout, np.stack(want_ram))
    np.testing.assert_array_equal(traces[:, -1], np.stack(want_traces))
    np.testing.assert_array_equal(screens, np.stack(want_screens))
    b.rgb(out=colour[1])
    np.testing.assert_array_equal(colour[1], b.rgb())
    assert not colour[0].any()  # only the slice was written


def test_step_trace_out_matches_the_new_array(smb_rom):
    a, b = _stepped(smb_rom), _stepped(smb_rom)
    actions = np.array([0, START, 0x81], np.uint8)
    out = np.full((5, N, 2048), 0xEE, np.uint8)
    b.step_trace(actions, 5, out=out)
    np.testing.assert_array_equal(out, a.step_trace(actions, 5))
    _same(b.ram_view(), a)


def test_out_takes_a_torch_cpu_tensor_slice(smb_rom):
    torch = pytest.importorskip("torch")
    b = _stepped(smb_rom)
    rollout = torch.zeros((4, N, 2048), dtype=torch.uint8)
    slot = rollout[2]
    assert b.ram(out=slot) is slot
    np.testing.assert_array_equal(rollout[2].numpy(), b.ram())
    assert not rollout[[0, 1, 3]].any()
    screens = torch.zeros((2, N, 240, 256), dtype=torch.uint8)
    b.pixels(out=screens[1])
    np.testing.assert_array_equal(screens[1].numpy(), b.pixels())
    with pytest.raises(ValueError, match="C-contiguous"):
        b.ram(out=torch.zeros((N, 4, 2048), dtype=torch.uint8)[:, 1])
    with pytest.raises(TypeError, match="uint8"):
        b.ram(out=torch.zeros((N, 2048), dtype=torch.int64))


def test_out_takes_a_buffer_protocol_object(blank_rom):
    b = _stepped(blank_rom)
    buf = bytearray(N * 2048)
    b.ram(out=memoryview(buf).cast("B", (N, 2048)))
    np.testing.assert_array_equal(np.frombuffer(buf, np.uint8).reshape(N, 2048), b.ram())


@pytest.mark.parametrize(
    ("out", "error", "match"),
    [
        (np.zeros((N, 2047), np.uint8), ValueError, r"shape \(3, 2048\)"),
        (np.zeros((N + 1, 2048), np.uint8), ValueError, "shape"),
        (np.zeros(N * 2048, np.uint8), ValueError, "shape"),
        (np.zeros((N, 2048), np.int8), TypeError, "uint8"),
        (np.zeros((N, 2048), np.float32), TypeError, "uint8"),
        (np.zeros((2048, N), np.uint8).T, ValueError, "C-contiguous"),
        (np.zeros((N, 4096), np.uint8)[:, ::2], ValueError, "C-contiguous"),
        (np.zeros((N, 2048), np.uint8, order="F"), ValueError, "C-contiguous"),
        ([[0] * 2048] * N, TypeError, "numpy.ndarray"),
        (memoryview(bytes(N * 2048)).cast("B", (N, 2048)), ValueError, "writable"),
        ("ram", TypeError, "numpy.ndarray"),
    ],
)
def test_bad_out_arguments_raise(blank_rom, out, error, match):
    b = nesle.CpuBatch(blank_rom, N)
    with pytest.raises(error, match=match):
        b.ram(out=out)


def test_read_only_out_arrays_are_refused(blank_rom):
    b = nesle.CpuBatch(blank_rom, N)
    frozen = np.zeros((N, 2048), np.uint8)
    frozen.flags.writeable = False
    for out in (frozen, b.ram_view()):
        with pytest.raises(ValueError, match="writable"):
            b.ram(out=out)
    with pytest.raises(ValueError, match="shape"):
        b.rgb(out=np.zeros((N, 240, 256), np.uint8))
    with pytest.raises(ValueError, match=r"shape \(2, 3, 2048\)"):
        b.step_trace(np.zeros(N, np.uint8), 2, out=np.zeros((3, N, 2048), np.uint8))


def test_out_may_not_alias_the_batch_buffers(smb_rom):
    torch = pytest.importorskip("torch")
    b = _stepped(smb_rom)
    # torch ignores NumPy's read-only flag: a writable alias of the batch's own buffers.
    ram, pixels = torch.from_dlpack(b.ram_view()), torch.from_dlpack(b.pixels_view())
    with pytest.raises(ValueError, match="overlap"):
        b.ram(out=ram)
    with pytest.raises(ValueError, match="overlap"):
        b.pixels(out=pixels)
    with pytest.raises(ValueError, match="overlap"):
        b.step_trace(np.zeros(N, np.uint8), 1, out=ram[None])


# --- the vector env ---


def _run(copy: bool, steps: int = 6, **kwargs) -> list[np.ndarray]:
    venv = nesle.make_vec("smb", 2, backend="cpu", seed=0, copy=copy, **kwargs)
    rng = np.random.default_rng(0)
    out = [venv.reset(seed=0)[0].copy()]
    for _ in range(steps):
        out.append(venv.step(rng.integers(0, 7, 2))[0].copy())
    return out


@pytest.mark.parametrize(
    "kwargs", [dict(obs="ram"), dict(obs="ram", frame_stack=3), dict(obs="gray84", frame_stack=2)]
)
def test_copy_false_observes_the_same_as_copy_true(kwargs):
    for a, b in zip(_run(True, **kwargs), _run(False, **kwargs)):
        np.testing.assert_array_equal(a, b)


def test_copy_false_returns_a_read_only_view_the_next_step_overwrites():
    venv = nesle.make_vec("smb", 2, backend="cpu", obs="ram", seed=0, copy=False,
                          max_episode_steps=2)  # fmt: skip
    first, _ = venv.reset(seed=0)
    assert not first.flags.writeable
    obs, *_, info = venv.step(np.array([3, 3]))
    assert np.shares_memory(obs, first)  # the env's own buffer, no copy
    np.testing.assert_array_equal(obs, venv.ram())
    obs, _, _, truncated, info = venv.step(np.array([3, 3]))
    assert truncated.all()
    assert not any(np.shares_memory(f, obs) for f in info["final_obs"])  # finals are copies


def test_copy_true_returns_new_arrays_and_stacks_oldest_first():
    venv = nesle.make_vec("smb", 2, backend="cpu", obs="ram", frame_stack=3, seed=0)
    a, _ = venv.reset(seed=0)
    rams = [venv.ram()]
    for _ in range(4):
        b = venv.step(np.array([3, 0]))[0]
        assert not np.shares_memory(a, b) and b.flags.writeable
        rams.append(venv.ram())
        a = b
    for j in range(3):
        np.testing.assert_array_equal(b[:, j], rams[-3 + j])

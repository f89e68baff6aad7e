"""Which backend runs, and the errors when CUDA cannot: runs on every machine (not ``gpu``).

On a machine without a GPU (or a build without kernels) these check the clear errors; on a GPU
machine they check that CUDA is picked. Neither case skips.
"""

from __future__ import annotations

import numpy as np
import pytest

import nesle
from nesle import _native, cli


def test_cuda_available_answers_with_a_reason():
    ok, why = _native.cuda_available()
    assert isinstance(ok, bool) and isinstance(why, str) and why
    assert _native.cuda_available(device=-1)[0] is False
    assert nesle.vector.cuda_available() == (ok, why)


def test_cuda_batch_works_or_raises_backend_unavailable(blank_rom):
    ok, why = _native.cuda_available()
    assert issubclass(nesle.BackendUnavailableError, RuntimeError)
    assert nesle.BackendUnavailableError is _native.BackendUnavailableError
    if ok:
        b = _native.CudaBatch(blank_rom, 2)
        b.step(np.zeros(2, np.uint8), 1)
        assert b.ram().shape == (2, 2048)
        return
    with pytest.raises(nesle.BackendUnavailableError) as e:
        _native.CudaBatch(blank_rom, 2)
    assert str(e.value) and why.split(":")[0] in str(e.value)


def test_make_vec_picks_the_backend_or_says_why_not():
    ok, why = _native.cuda_available()
    assert nesle.make_vec("smb", 1, backend="auto").backend == ("cuda" if ok else "cpu")
    assert nesle.make_vec("smb", 1, backend="cpu").backend == "cpu"
    if ok:
        assert nesle.make_vec("smb", 1, backend="cuda").backend == "cuda"
        return
    with pytest.raises(nesle.BackendUnavailableError, match="unavailable") as e:
        nesle.make_vec("smb", 1, backend="cuda")
    assert why in str(e.value)


def test_bench_on_cuda_runs_or_is_a_clear_error(capsys):
    ok, _ = _native.cuda_available()
    code = cli.main(["bench", "--backend", "cuda", "--envs", "2", "--steps", "1", "--warmup", "0"])
    if ok:
        assert code == 0
    else:
        assert code == 2 and "backend='cuda' is unavailable" in capsys.readouterr().err


def test_a_negative_regroup_every_is_a_value_error(blank_rom):
    # Checked before any GPU is asked for, so it holds on every machine.
    with pytest.raises(ValueError, match="regroup_every"):
        _native.CudaBatch(blank_rom, 2, regroup_every=-1)


def test_auto_on_a_device_this_machine_lacks_is_an_error_where_it_has_a_gpu(monkeypatch, blank_rom):
    def one_gpu(device=0):
        return (True, "CUDA device 0: a GPU") if device == 0 else (False, f"no CUDA device {device}")

    monkeypatch.setattr(nesle.vector, "cuda_available", one_gpu)
    with pytest.raises(nesle.BackendUnavailableError, match="device 3 .* has CUDA device 0: a GPU"):
        nesle.vector.make_batch(blank_rom, 2, backend="auto", device=3)
    with pytest.raises(nesle.BackendUnavailableError, match="device 3"):
        nesle.make_vec("smb", 1, device=3)
    # Without any GPU, auto falls back to the CPU whatever the device: a setting made for
    # another machine still runs here.
    monkeypatch.setattr(nesle.vector, "cuda_available", lambda device=0: (False, "no CUDA driver"))
    assert nesle.make_vec("smb", 1, device=3).backend == "cpu"


def test_auto_on_a_real_missing_device_is_an_error_on_a_gpu_machine():
    ok, _ = _native.cuda_available()
    if ok:
        with pytest.raises(nesle.BackendUnavailableError, match="device 999"):
            nesle.make_vec("smb", 1, device=999)
    else:
        assert nesle.make_vec("smb", 1, device=999).backend == "cpu"

"""The DLPack export machinery, on host memory: runs on every machine.

``nesle._native._host_view`` wraps a private copy of some bytes in the same ``DLPackView`` type
that ``CudaBatch.ram_tensor()`` returns (only the device and the owner differ), so capsules,
strides, both struct versions, deleters and lifetimes are tested without a GPU.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from nesle import _native

# 3 "states" of 10 bytes, each with a 4-byte "ram" field at offset 2: an AoS layout.
DATA = bytes(range(30))
SHAPE, STRIDES, OFFSET = [3, 4], [10, 1], 2
EXPECTED = np.frombuffer(DATA, np.uint8).reshape(3, 10)[:, 2:6]


def _view():
    return _native._host_view(DATA, SHAPE, STRIDES, OFFSET)


def test_a_strided_view_reads_the_right_bytes_through_numpy():
    v = _view()
    assert v.__dlpack_device__() == (1, 0)
    assert v.shape == SHAPE and v.strides == STRIDES
    a = np.from_dlpack(v)
    assert a.dtype == np.uint8 and a.shape == (3, 4) and a.strides == (10, 1)
    np.testing.assert_array_equal(a, EXPECTED)


def test_the_array_outlives_the_view_object():
    a = np.from_dlpack(_view())
    gc.collect()
    np.testing.assert_array_equal(a, EXPECTED)


@pytest.mark.parametrize("max_version", [None, (1, 0), (1, 1), (0, 8)])
def test_legacy_and_versioned_capsules(max_version):
    torch = pytest.importorskip("torch")
    cap = _view().__dlpack__(max_version=max_version)
    versioned = max_version is not None and max_version[0] >= 1
    assert ("dltensor_versioned" if versioned else "dltensor") in repr(cap)
    t = torch.from_dlpack(cap)
    assert t.dtype == torch.uint8 and tuple(t.shape) == (3, 4) and t.stride() == (10, 1)
    np.testing.assert_array_equal(t.numpy(), EXPECTED)
    del cap
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), EXPECTED)


def test_torch_from_dlpack_takes_the_view_object():
    torch = pytest.importorskip("torch")
    t = torch.from_dlpack(_view())
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), EXPECTED)


def test_an_unconsumed_capsule_frees_itself():
    for _ in range(1000):
        _view().__dlpack__()
        _view().__dlpack__(max_version=(1, 0))
    gc.collect()


def test_copy_and_other_devices_are_refused():
    v = _view()
    with pytest.raises(BufferError):
        v.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        v.__dlpack__(dl_device=(2, 0))
    v.__dlpack__(copy=False, dl_device=(1, 0))
    with pytest.raises(ValueError, match="stream"):
        v.__dlpack__(stream=1)


def test_a_view_past_the_data_is_refused():
    with pytest.raises(ValueError):
        _native._host_view(DATA, [3, 10], [10, 1], 2)
    # Extents whose products pass i64 must not wrap around into a small, "in bounds" end.
    with pytest.raises(ValueError, match="past the data"):
        _native._host_view(DATA, [3, 3], [2**62, 2**62], 0)
    with pytest.raises(ValueError, match="past the data"):
        _native._host_view(DATA, [2, 1], [2**63 - 1, 1], 2**63)

"""The native verbs the environments add: ``step_trace`` and ``write_ram``."""

from __future__ import annotations

import numpy as np
import pytest

import nesle


def test_step_trace_returns_the_ram_after_every_frame_as_step_would(smb_rom):
    a, b = nesle.CpuBatch(smb_rom, 2), nesle.CpuBatch(smb_rom, 2)
    actions = np.array([nesle.BUTTON_START, 0], np.uint8)
    a.step(np.zeros(2, np.uint8), 30)
    b.step(np.zeros(2, np.uint8), 30)
    trace = a.step_trace(actions, 5)
    assert trace.shape == (5, 2, 2048) and trace.dtype == np.uint8
    for f in range(5):
        b.step(actions, 1)
        np.testing.assert_array_equal(trace[f], b.ram())
    assert a.save_state(0) == b.save_state(0) and a.save_state(1) == b.save_state(1)


def test_step_trace_checks_its_arguments_like_step(blank_rom):
    b = nesle.CpuBatch(blank_rom, 2)
    with pytest.raises(TypeError, match="dtype uint8"):
        b.step_trace(np.zeros(2, np.int64), 1)
    with pytest.raises(ValueError, match=r"shape \(2,\) or \(2, 2\)"):
        b.step_trace(np.zeros(3, np.uint8), 1)
    for frames in (0, 1025):
        with pytest.raises(ValueError, match="frames must be between 1 and 1024"):
            b.step_trace(np.zeros(2, np.uint8), frames)


def test_write_ram_writes_one_byte_where_the_mask_is_true(blank_rom):
    b = nesle.CpuBatch(blank_rom, 3)
    before = b.ram()
    b.write_ram(0x75F, 7, np.array([True, False, True]))
    after = b.ram()
    assert after[:, 0x75F].tolist() == [7, before[1, 0x75F], 7]
    after[:, 0x75F] = before[:, 0x75F]
    np.testing.assert_array_equal(after, before)  # nothing else changed
    b.write_ram(0, 255)
    assert (b.ram()[:, 0] == 255).all()


@pytest.mark.parametrize(("addr", "value"), [(-1, 0), (2048, 0), (0, 256), (0, -1)])
def test_write_ram_refuses_addresses_and_values_out_of_range(blank_rom, addr, value):
    with pytest.raises(ValueError, match="addr must be|value must be a byte"):
        nesle.CpuBatch(blank_rom, 1).write_ram(addr, value)


def test_write_ram_takes_a_byte_for_each_console(blank_rom):
    b = nesle.CpuBatch(blank_rom, 4)
    before = b.ram()
    values = np.array([10, 20, 30, 40], np.uint8)
    b.write_ram(0x123, values[::-1], np.array([True, True, False, True]))  # a strided view too
    after = b.ram()
    assert after[:, 0x123].tolist() == [40, 30, before[2, 0x123], 10]
    after[:, 0x123] = before[:, 0x123]
    np.testing.assert_array_equal(after, before)  # nothing else changed
    b.write_ram(0x124, values)
    assert b.ram()[:, 0x124].tolist() == values.tolist()
    for one in (np.uint8(5), np.array(6), np.array(7, np.uint8)):  # one number, as an int is
        b.write_ram(0x125, one)
        assert (b.ram()[:, 0x125] == int(one)).all()


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (np.zeros(3, np.uint8), ValueError, r"shape \(4,\), got shape \(3,\)"),
        (np.zeros((4, 1), np.uint8), ValueError, r"shape \(4,\), got shape \(4, 1\)"),
        (np.zeros(4, np.int64), TypeError, "dtype uint8 and shape \\(4,\\), got ndarray of dtype int64"),
        ([1, 2, 3, 4], TypeError, "a byte or a numpy.ndarray"),
        (1.5, TypeError, "a byte or a numpy.ndarray"),
        (np.array(1.5), TypeError, "a byte or a numpy.ndarray"),
        (np.array(256), ValueError, r"a byte \(0..255\), got 256"),
    ],
    ids=["short", "2d", "int64", "list", "float", "0-d float", "0-d 256"],
)
def test_write_ram_refuses_values_of_another_shape_or_kind(blank_rom, value, error, match):
    b = nesle.CpuBatch(blank_rom, 4)
    before = b.ram()
    with pytest.raises(error, match=match):
        b.write_ram(0x10, value)
    np.testing.assert_array_equal(b.ram(), before)

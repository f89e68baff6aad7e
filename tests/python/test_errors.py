"""One error mapping: bad ROMs, bad states and bad arguments raise clear Python exceptions."""

from __future__ import annotations

import numpy as np
import pytest

import nesle

HEADER = b"NES\x1a\x02\x01\x01\x00" + bytes(8)


@pytest.mark.parametrize(
    ("rom", "message"),
    [
        (b"", "too short"),
        (b"NES\x1a", "too short"),
        (b"PK\x03\x04" + bytes(40000), "not an iNES ROM"),
        (HEADER + bytes(100), "truncated"),
        (b"NES\x1a\x02\x01\x50\x00" + bytes(8) + bytes(0xA000), "mapper 5 is not supported"),
    ],
    ids=["empty", "header-only", "bad-magic", "truncated", "mmc5"],
)
def test_bad_rom_bytes_raise_rom_error_with_a_clear_message(rom, message):
    with pytest.raises(nesle.RomError, match=f"(?i){message}"):
        nesle.CpuBatch(rom, 1)
    with pytest.raises(nesle.RomError, match=f"(?i){message}"):
        nesle.rom_info(rom)


def test_num_envs_must_be_positive(blank_rom):
    with pytest.raises(ValueError, match="num_envs"):
        nesle.CpuBatch(blank_rom, 0)


@pytest.mark.parametrize("num_envs", [10**12, 2**62], ids=["petabytes", "past-the-address-space"])
def test_more_envs_than_host_memory_is_a_memory_error_and_the_process_goes_on(blank_rom, num_envs):
    # Rust's allocator would abort the process; the batch asks first and reports the size.
    with pytest.raises(MemoryError, match="GiB of host memory for their consoles"):
        nesle.CpuBatch(blank_rom, num_envs)
    b = nesle.CpuBatch(blank_rom, 2)
    b.step(np.zeros(2, np.uint8), 1)


@pytest.mark.parametrize(
    "actions",
    [np.zeros(4, np.int64), np.zeros(4, np.float32), [0, 0, 0, 0], None],
    ids=["int64", "float32", "list", "none"],
)
def test_actions_of_another_type_or_dtype_raise_type_error(blank_rom, actions):
    b = nesle.CpuBatch(blank_rom, 4)
    with pytest.raises(TypeError, match=r"dtype uint8 .*shape \(4,\) or \(4, 2\)"):
        b.step(actions, 1)


@pytest.mark.parametrize("shape", [(3,), (5,), (4, 1), (4, 3), (2, 2), (4, 2, 1), ()])
def test_actions_of_another_shape_raise_value_error(blank_rom, shape):
    b = nesle.CpuBatch(blank_rom, 4)
    with pytest.raises(ValueError, match=r"shape \(4,\) or \(4, 2\)"):
        b.step(np.zeros(shape, np.uint8), 1)


def test_non_contiguous_actions_are_accepted(blank_rom):
    b = nesle.CpuBatch(blank_rom, 4)
    b.step(np.zeros((4, 4), np.uint8)[:, ::2], 1)
    b.step(np.zeros(8, np.uint8)[::2], 1)


@pytest.mark.parametrize("frames", [-1, 2**21])
def test_frames_out_of_range_raise_value_error(blank_rom, frames):
    b = nesle.CpuBatch(blank_rom, 1)
    with pytest.raises(ValueError, match="frames must be between"):
        b.step(np.zeros(1, np.uint8), frames)


def test_environment_indices_are_checked(blank_rom):
    b = nesle.CpuBatch(blank_rom, 2)
    b.save_state(-2)  # Python-style negative indices work
    for i in (2, -3):
        with pytest.raises(IndexError, match="out of range for 2 environments"):
            b.save_state(i)
        with pytest.raises(IndexError):
            b.load_state(i, b.save_state(0))


def test_masks_must_be_bool_arrays_of_shape_n(blank_rom):
    b = nesle.CpuBatch(blank_rom, 2)
    with pytest.raises(TypeError, match="dtype bool"):
        b.reset(np.array([1, 0]))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        b.reset(np.array([True]))


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (lambda s: s[:10], "truncated"),
        (lambda s: b"XXXX" + s[4:], "magic"),
        (lambda s: s[:-1] + bytes([s[-1] ^ 1]), "checksum"),
        (lambda s: b"", "truncated"),
    ],
    ids=["truncated", "magic", "checksum", "empty"],
)
def test_bad_states_raise_state_error_and_leave_the_console_alone(smb_rom, corrupt, message):
    b = nesle.CpuBatch(smb_rom, 1)
    b.step(np.zeros(1, np.uint8), 5)
    good = b.save_state(0)
    with pytest.raises(nesle.StateError, match=f"(?i){message}"):
        b.load_state(0, corrupt(good))
    with pytest.raises(nesle.StateError):
        b.restore(corrupt(good))
    with pytest.raises(nesle.StateError):  # a mask naming no console does not skip the check
        b.restore(corrupt(good), np.zeros(1, bool))
    assert b.save_state(0) == good


@pytest.mark.parametrize(
    "pixels",
    [np.zeros((1, 240, 256), np.int16), np.zeros((1, 240, 256), bool), [[[0]]], None],
    ids=["int16", "bool", "list", "none"],
)
def test_gray84_of_pixels_of_another_type_is_a_clear_type_error(pixels):
    want = r"pixels must be a numpy.ndarray of dtype uint8 and shape \(N, 240, 256\)"
    with pytest.raises(TypeError, match=want):
        nesle._native.gray84(pixels)


def test_a_state_from_another_rom_is_refused(smb_rom, blank_rom):
    smb = nesle.CpuBatch(smb_rom, 1)
    blank = nesle.CpuBatch(blank_rom, 1)
    with pytest.raises(nesle.StateError, match="another ROM"):
        smb.load_state(0, blank.save_state(0))


_BOOL = (TypeError, "expected an int, got the bool")
_PAST_64_BITS = (ValueError, "out of range")


@pytest.mark.parametrize(
    ("call", "refusal"),
    [
        (lambda b, rom: nesle.CpuBatch(rom, True), _BOOL),
        (lambda b, rom: b.step(np.zeros(2, np.uint8), True), _BOOL),
        (lambda b, rom: b.step_trace(np.zeros(2, np.uint8), True), _BOOL),
        (lambda b, rom: b.write_ram(True, 7), _BOOL),
        (lambda b, rom: b.write_ram(16, True), _BOOL),
        (lambda b, rom: b.save_state(True), _BOOL),
        (lambda b, rom: b.load_state(True, b.save_state(0)), _BOOL),
        (lambda b, rom: nesle._native.cuda_available(False), _BOOL),
        (lambda b, rom: nesle.CpuBatch(rom, 2**70), _PAST_64_BITS),
        (lambda b, rom: b.step(np.zeros(2, np.uint8), 2**64), _PAST_64_BITS),
        (lambda b, rom: b.write_ram(-(2**63) - 1, 7), _PAST_64_BITS),
        (lambda b, rom: b.save_state(2**100), _PAST_64_BITS),
        (lambda b, rom: nesle._native.cuda_available(2**64), _PAST_64_BITS),
    ],
    ids=["num_envs", "frames", "trace-frames", "address", "value", "save-index", "load-index", "device",
         "num_envs-64", "frames-64", "address-64", "save-index-64", "device-64"],  # fmt: skip
)
def test_an_int_argument_refuses_a_bool_and_a_value_past_64_bits(smb_rom, call, refusal):
    b = nesle.CpuBatch(smb_rom, 2)
    b.step(np.zeros(2, np.uint8), 3)
    before = [b.save_state(i) for i in range(2)]
    with pytest.raises(refusal[0], match=refusal[1]):
        call(b, smb_rom)
    assert [b.save_state(i) for i in range(2)] == before
    b.step(np.zeros(2, np.uint8), np.int64(1))  # NumPy's integers are ints


def test_gray84_refuses_pixels_past_the_palette():
    pixels = np.full((2, 240, 256), 0x30, np.uint8)
    nesle._native.gray84(pixels)
    pixels[1, 239, 255] = 64
    with pytest.raises(ValueError, match="palette indices 0..63, got a pixel of 64"):
        nesle._native.gray84(pixels)

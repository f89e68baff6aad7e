"""Alignment: nesle and cynes (a cycle-accurate C++ NES) play the same Super Mario Bros. movie.

From power-on, a scripted movie (Start on the title screen, then ~3,000 frames of running right
with jumps of varied length) is played on both emulators; the game's own variables must follow
the same trajectory, frame for frame, up to one constant frame offset.

Why an offset: the two emulators cut frames at different points of the PPU's 262 scanlines
(nesle ends a frame when vertical blank starts), so the same game frame has a different number
on each. The offset is measured by behaviour, before any input: the first frame at which SMB's
title screen is running (OperMode_Task $0772 = 3) on each side, measured on the same cynes
instance that then plays the movie (its power-on phase varies between instances). cynes gets
the movie shifted by that offset, so both consoles see every input at the same game frame, and the
frame where OperMode ($0770) first becomes 1 (game started) must differ by that same offset.

Any remaining difference is a real emulation difference: it is either fixed in nes-core or
documented, with test-ROM evidence of which emulator follows the hardware, in docs/alignment.md.

nesle runs through ``nesle._native`` when it is built, else through the
``crates/nes-core/examples/movie.rs`` binary (built with cargo).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import cynes  # a test dependency (pip install 'nesle[test]'): fail loudly if missing, never skip

REPO = Path(__file__).resolve().parents[2]
START, A, B, RIGHT = 0x08, 0x01, 0x02, 0x80

#: SMB RAM (python/nesle/games/smb.py and the SMB disassembly).
GAME_VARIABLES = {
    "oper_mode": [0x0770],
    "oper_task": [0x0772],
    "world": [0x075F],
    "level": [0x075C],
    "lives": [0x075A],
    "player_state": [0x000E],
    "x_page": [0x006D],
    "x_on_page": [0x0086],
    "y": [0x00CE],
    "y_viewport": [0x00B5],
    "timer_digits": [0x07F8, 0x07F9, 0x07FA],
    "score_digits": [0x07DD, 0x07DE, 0x07DF, 0x07E0, 0x07E1, 0x07E2, 0x07E3],
}
ADDRS = [a for addrs in GAME_VARIABLES.values() for a in addrs]
#: Frames of the movie, and every how many frames the whole 2 KiB RAM is compared too.
FRAMES = 3000
FULL_RAM_EVERY = 10


def movie(frames: int = FRAMES, seed: int = 7) -> np.ndarray:
    """Idle to the title, tap Start, wait out the 'WORLD 1-1' card, then run right (B held),
    jumping every 10-40 frames for 5-30 frames (a seeded pattern, so deaths, stomps and pipes
    all happen)."""
    m = np.zeros(frames, np.uint8)
    m[60:65] = START
    rng = np.random.default_rng(seed)
    f = 200
    while f < frames:
        run, jump = int(rng.integers(10, 40)), int(rng.integers(5, 30))
        m[f:f + run] = RIGHT | B
        m[f + run:f + run + jump] = RIGHT | B | A
        f += run + jump
    return m


def cynes_pad(m: int) -> int:
    """cynes orders the pad bits the other way round (bit 0 Right ... bit 7 A)."""
    return int(f"{m:08b}"[::-1], 2)


def run_cynes(rom_path: Path, m: np.ndarray, nesle_title: int) -> tuple[np.ndarray, dict[int, np.ndarray], int]:
    """Plays movie ``m`` on cynes, aligned to nesle by behaviour, on the fly.

    cynes's power-on phase differs from one instance to the next (its title screen has come up
    at frame 30 in most instances and 31 in some), so the offset is measured on the very
    instance that plays the movie: idle until its title screen runs, then frame g gets the
    movie's input for nesle frame g + offset. Returns the game variables per frame, the whole
    RAM every FULL_RAM_EVERY frames, and the offset (nesle frame - cynes frame).
    """
    assert not m[: nesle_title + 4].any(), "the movie must be idle until after the title screen"
    nes = cynes.NES(str(rom_path))
    vars_ = np.zeros((len(m), len(ADDRS)), np.uint8)
    full = {}
    offset = None
    for g in range(len(m)):
        f = g + offset if offset is not None else -1
        nes.controller = cynes_pad(int(m[f])) if 0 <= f < len(m) else 0
        nes.step(1)
        vars_[g] = [nes[a] for a in ADDRS]
        if offset is None and nes[0x0770] == 0 and nes[0x0772] == 3:
            offset = nesle_title - g
            assert abs(offset) <= 3, f"title screens {offset} frames apart: not a frame-boundary difference"
        if g % FULL_RAM_EVERY == 0:
            full[g] = np.array([nes[a] for a in range(0x800)], np.uint8)
    assert offset is not None, "cynes: the title screen never came up"
    return vars_, full, offset


def run_nesle(rom: bytes, inputs: np.ndarray, tmp: Path) -> np.ndarray:
    """Work RAM after every frame, shape (frames, 2048)."""
    try:
        from nesle import _native
    except ImportError:
        _native = None
    if _native is not None:
        batch = _native.CpuBatch(rom, 1)
        batch.set_render(False)
        out = np.zeros((len(inputs), 0x800), np.uint8)
        for f, m in enumerate(inputs):
            batch.step(np.array([m], np.uint8), 1)
            out[f] = batch.ram()[0]
        return out
    (tmp / "smb.nes").write_bytes(rom)
    (tmp / "movie.bin").write_bytes(inputs.astype(np.uint8).tobytes())
    subprocess.run(["cargo", "run", "--release", "-q", "-p", "nes-core", "--example", "movie", "--",
                    str(tmp / "smb.nes"), str(tmp / "movie.bin"), str(tmp / "ram.bin")], cwd=REPO, check=True)
    return np.fromfile(tmp / "ram.bin", np.uint8).reshape(len(inputs), 0x800)


def title_frame(oper_mode: np.ndarray, oper_task: np.ndarray) -> int:
    """First frame where the title screen runs (OperMode 0, task 3)."""
    hits = np.nonzero((oper_mode == 0) & (oper_task == 3))[0]
    assert len(hits), "the title screen never came up"
    return int(hits[0])


def first_frame(cond: np.ndarray, what: str) -> int:
    hits = np.nonzero(cond)[0]
    assert len(hits), f"{what} never happened"
    return int(hits[0])


@pytest.mark.rom
def test_smb_trajectories_match_cynes(smb_rom: bytes, tmp_path: Path) -> None:
    rom_path = tmp_path / "super-mario-bros.nes"
    rom_path.write_bytes(smb_rom)
    i_mode, i_task = ADDRS.index(0x0770), ADDRS.index(0x0772)

    # 1. nesle plays the movie from power-on; its title screen sets the reference frame.
    m = movie()
    n_ram = run_nesle(smb_rom, m, tmp_path)
    n_vars = n_ram[:, ADDRS]
    n_title = title_frame(n_vars[:, i_mode], n_vars[:, i_task])

    # 2. cynes plays it shifted so that both see each input at the same game frame: cynes frame
    #    g is nesle frame g + offset.
    c_vars, c_full, offset = run_cynes(rom_path, m, n_title)

    # 3. The game starts at the same game frame on both.
    n_start = first_frame(n_vars[:, i_mode] == 1, "nesle: game start")
    c_start = first_frame(c_vars[:, i_mode] == 1, "cynes: game start")
    assert n_start - c_start == offset, f"game started at nesle {n_start}, cynes {c_start}, offset {offset}"

    # 4. Frame-by-frame equality of the game variables from the title screen on, and of the
    #    whole RAM every FULL_RAM_EVERY frames (power-on RAM differs until SMB clears it).
    lo, hi = n_title, FRAMES - abs(offset)
    for f in range(lo, hi):
        g = f - offset
        if not (0 <= g < FRAMES):
            continue
        if not np.array_equal(n_vars[f], c_vars[g]):
            diff = {name: (n_ram[f, addrs].tolist(), c_vars[g, [ADDRS.index(a) for a in addrs]].tolist())
                    for name, addrs in GAME_VARIABLES.items()
                    if not np.array_equal(n_ram[f, addrs], c_vars[g, [ADDRS.index(a) for a in addrs]])}
            pytest.fail(f"game variables diverge at nesle frame {f} (cynes {g}), input {m[f]:#04x}: "
                        f"{{name: (nesle, cynes)}} = {diff}")
        if g in c_full and not np.array_equal(n_ram[f], c_full[g]):
            where = np.nonzero(n_ram[f] != c_full[g])[0]
            pytest.fail(f"RAM diverges at nesle frame {f} (cynes {g}) at "
                        f"{[hex(a) for a in where[:16]]} ({len(where)} bytes)")

    # 5. The movie really played: Mario moved far, and the run got past the first screens.
    x = n_vars[:, ADDRS.index(0x006D)].astype(int) * 256 + n_vars[:, ADDRS.index(0x0086)]
    assert x.max() > 600, f"Mario only reached x = {x.max()}; the movie does not exercise the game"

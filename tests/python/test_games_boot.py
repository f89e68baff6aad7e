"""Games nesle has no logic for boot from power-on to gameplay through the generic path.

The Legend of Zelda (MMC1, mapper 1) and Contra (UxROM, mapper 2) run as plain ROMs:
``make_vec(rom, backend=..., obs="ram", action_space="raw", reward=..., done=...)``, the
action being the controller bitmask, one frame per step, on the CPU backend and (marked
``gpu``) the CUDA one, where the reward and done callables get torch tensors on the GPU. The input scripts are the ones the gym
packages run in ``_skip_start_screen`` (nes-py's ``_frame_advance(buttons)`` is one frame, with
the same button bits as nesle), and "in gameplay" is read from the RAM addresses those packages
use. The ROMs come from nesle.roms; a missing ROM fails (conftest.py), never skips.
"""

from __future__ import annotations

from collections.abc import Callable

import nesle
import numpy as np
import pytest
from nesle import BUTTON_A, BUTTON_LEFT, BUTTON_RIGHT, BUTTON_SELECT, BUTTON_START, BUTTON_UP
from nesle._device import to_numpy
from nesle.games._xp import i64

from .conftest import _rom

pytestmark = pytest.mark.rom
BACKENDS = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]

# --- The Legend of Zelda: gym-zelda-1 0.2.2, gym_zelda_1/zelda_env.py ---
ZELDA_LEVEL = 0x10  # _current_level: 0 = overworld
#: Game mode. gym-zelda-1 names only the scroll modes {4, 6, 7}; the rest is from Data Crystal's
#: RAM map (datacrystal.tcrf.net/wiki/The_Legend_of_Zelda/RAM_map): 0 title, 1 file select,
#: 5 normal play, 0x0E registration.
ZELDA_MODE = 0x12
ZELDA_MODE_PLAYING = 5
ZELDA_X = 0x70  # _x_pixel
ZELDA_Y = 0x84  # _y_pixel
ZELDA_DIRECTION = 0x98  # _direction: 8 N, 4 S, 1 E, 2 W; anything else before Link appears
ZELDA_OPENING = 0x7C  # nonzero while the opening animation runs (_skip_start_screen waits on it)
ZELDA_HEARTS = 0x66F  # high nibble: containers - 1; low nibble: full hearts
ZELDA_PARTIAL_HEART = 0x670  # the partial heart, out of 255

# --- Contra: gym-contra 0.1.1 (sdist), Contra/env_contra.py ---
CONTRA_SCREEN = 0x2C  # 0 menu, 4 normal gameplay, 5 credits, 6 continue, 8 boss defeated
CONTRA_SCREEN_PLAYING = 4
CONTRA_PLAYER_STATE = 0x90  # 0 dead, 1 alive, 2 dying
CONTRA_LIVES = 0x32  # lives left ("REST 2" at the start of a game)
CONTRA_GAME_OVER = 0x38  # 0 playing, 1 game over
CONTRA_X = 0x334
CONTRA_Y = 0x31A  # screen y of the player's sprite (gym-contra's y_pos is 255 minus this)


class Console:
    """One console of a generic ``make_vec`` env, stepped a frame at a time by button mask."""

    def __init__(self, game: str, mapper: int, reward: Callable, done: Callable, backend: str) -> None:
        rom = _rom(game)
        assert nesle.rom_info(rom)["mapper"] == mapper
        self.env = nesle.make_vec(
            rom, 1, backend=backend, frameskip=1, obs="ram", action_space="raw",
            reward=reward, done=done, autoreset=False,
        )  # fmt: skip
        assert self.env.game is None, f"{game} must run through the generic path"
        assert self.env.backend == backend
        self.ram = to_numpy(self.env.reset(seed=0))[0][0]
        self.frames = 0
        self.reward = 0.0

    def hold(self, buttons: int, frames: int = 1) -> np.ndarray:
        """Hold ``buttons`` for ``frames`` frames; returns the RAM after them."""
        for _ in range(frames):
            obs, reward, terminated, _, _ = to_numpy(self.env.step(np.array([buttons])))
            assert not terminated[0], f"the episode ended at frame {self.frames}"
            self.ram, self.reward, self.frames = obs[0], self.reward + reward[0], self.frames + 1
        return self.ram

    def tap(self, buttons: int, times: int = 1) -> np.ndarray:
        """Press and release ``buttons`` ``times`` times (a frame each: nes-py's idiom)."""
        for _ in range(times):
            self.hold(buttons)
            self.hold(0)
        return self.ram

    def until(self, cond: Callable[[np.ndarray], bool], limit: int, what: str) -> np.ndarray:
        for _ in range(limit):
            if cond(self.ram):
                return self.ram
            self.hold(0)
        raise AssertionError(f"{what}: not reached within {limit} frames (frame {self.frames})")


def x_delta(x_addr: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Reward: signed change of a position byte (the generic reward callable under test)."""
    return lambda prev, ram: i64(ram[:, x_addr]) - i64(prev[:, x_addr])


def zelda_dead(ram: np.ndarray) -> np.ndarray:
    """Done: no hearts left in play (RAM is zero before the game starts, hence the mode)."""
    no_hearts = ((ram[:, ZELDA_HEARTS] & 0x0F) == 0) & (ram[:, ZELDA_PARTIAL_HEART] == 0)
    return (ram[:, ZELDA_MODE] == ZELDA_MODE_PLAYING) & no_hearts


@pytest.mark.parametrize("backend", BACKENDS)
def test_zelda_boots_through_registration_to_the_overworld_and_link_walks(backend: str) -> None:
    c = Console("zelda", 1, x_delta(ZELDA_X), zelda_dead, backend)
    # gym-zelda-1's _skip_start_screen: Start x31 (title -> file select -> "register your
    # name"), A x6 (types a letter), Select x3 (cursor to "register end"), Start x9 (register,
    # back to file select, start slot 1), then wait out the opening.
    c.tap(BUTTON_START, 31)
    assert c.ram[ZELDA_MODE] == 0x0E, "Start x31 should open the registration screen"
    c.tap(BUTTON_A, 6)
    c.tap(BUTTON_SELECT, 3)
    c.tap(BUTTON_START, 9)
    c.until(
        lambda r: r[ZELDA_DIRECTION] in (1, 2, 4, 8) and r[ZELDA_OPENING] == 0,
        600, "Link on screen (a facing direction, the opening over)",
    )  # fmt: skip
    ram = c.until(lambda r: r[ZELDA_MODE] == ZELDA_MODE_PLAYING, 120, "game mode 5 (playing)")
    assert ram[ZELDA_LEVEL] == 0, "a new game starts on the overworld"
    assert ram[ZELDA_HEARTS] >> 4 == 2, "a new game has 3 heart containers"
    assert c.frames < 600, f"took {c.frames} frames from power-on"

    x0, y0 = int(ram[ZELDA_X]), int(ram[ZELDA_Y])
    c.reward = 0.0
    ram = c.hold(BUTTON_RIGHT, 30)
    assert ram[ZELDA_X] > x0 and ram[ZELDA_Y] == y0, "Right moves Link right"
    assert c.reward == int(ram[ZELDA_X]) - x0, "the reward callable saw every frame"
    assert ram[ZELDA_DIRECTION] == 1, "Link faces east"
    x1 = int(ram[ZELDA_X])
    ram = c.hold(BUTTON_UP, 30)
    assert ram[ZELDA_Y] < y0, "Up moves Link up"
    assert abs(int(ram[ZELDA_X]) - x1) <= 8, "Up snaps Link to the grid at most"
    assert ram[ZELDA_MODE] == ZELDA_MODE_PLAYING


@pytest.mark.parametrize("backend", BACKENDS)
def test_contra_boots_to_stage_1_and_the_player_runs(backend: str) -> None:
    c = Console("contra", 2, x_delta(CONTRA_X), lambda ram: ram[:, CONTRA_GAME_OVER] == 1, backend)
    # gym-contra's _skip_start_screen: Start twice, then Start until the screen type says
    # gameplay. The title ignores Start while it scrolls in (~320 frames here).
    c.tap(BUTTON_START, 2)
    for _ in range(600):
        c.tap(BUTTON_START)
        if c.ram[CONTRA_SCREEN] == CONTRA_SCREEN_PLAYING:
            break
    assert c.ram[CONTRA_SCREEN] == CONTRA_SCREEN_PLAYING, f"no gameplay after {c.frames} frames"
    # The screen type turns to gameplay a frame before the player spawns.
    ram = c.until(lambda r: r[CONTRA_PLAYER_STATE] == 1, 10, "the player alive")
    assert ram[CONTRA_LIVES] == 2, "a new game starts with REST 2"
    assert ram[CONTRA_GAME_OVER] == 0

    # The player drops in from the top of the screen and lands on the jungle floor.
    y_drop = int(ram[CONTRA_Y])
    ram = c.hold(0, 60)
    assert ram[CONTRA_Y] > y_drop + 40, "the player falls onto the ground"
    x0, y0 = int(ram[CONTRA_X]), int(ram[CONTRA_Y])
    c.reward = 0.0
    ram = c.hold(BUTTON_RIGHT, 30)
    assert ram[CONTRA_X] > x0 + 10 and ram[CONTRA_Y] == y0, "Right runs right on the ground"
    assert c.reward == int(ram[CONTRA_X]) - x0, "the reward callable saw every frame"
    x1 = int(ram[CONTRA_X])
    ram = c.hold(BUTTON_LEFT, 30)
    assert ram[CONTRA_X] < x1, "Left runs left"
    assert ram[CONTRA_SCREEN] == CONTRA_SCREEN_PLAYING and ram[CONTRA_PLAYER_STATE] == 1

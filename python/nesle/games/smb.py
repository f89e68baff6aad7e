"""Super Mario Bros. (NES, the gym-super-mario-bros 7.4.0 ROM): RAM map, info, reward, done.

Pure functions of work RAM, vectorised: ``ram`` is a uint8 array of shape (..., 2048), e.g.
``CpuBatch.ram()`` (N, 2048) or one console's (2048,), or a torch tensor on the GPU (the CUDA
backend computes rewards and infos there, with the same code; see ``_xp.py``). The functions
reproduce ``gym_super_mario_bros/smb_env.py`` of gym-super-mario-bros 7.4.0 (with nes-py 8.2.1)
frame for frame. That environment also skips the frames where Mario is not in control (dying,
pipes, the flag, area changes), which nesle's environments run as steps unless made with
``skip_cutscenes=True``: see the README, "Games".

Where gym-super-mario-bros keeps state between steps (the last x position and clock), the
functions here take the previous RAM instead: ``prev`` is the RAM the previous reward was computed
from (after ``reset`` it is the RAM right after the reset).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from nesle.games._xp import clip, f64, host, i64, isin, where

Ram = npt.NDArray[np.uint8]

# fmt: off
#: Named RAM addresses (see https://datacrystal.tcrf.net/wiki/Super_Mario_Bros./RAM_map).
ADDR = {
    "player_state":      0x000E,  # 0x06 dead, 0x0B dying, 0x08 normal, 0x00-0x05/0x07 busy
    "float_state":       0x001D,  # 3 = sliding down the flagpole
    "enemy_types":       0x0016,  # 5 slots, 0x0016-0x001A
    "x_page":            0x006D,  # x position = page * 256 + x_on_page
    "x_on_page":         0x0086,
    "y_viewport":        0x00B5,  # 0 above the screen, 1 on screen, >1 falling into a pit
    "y_pixel":           0x03B8,
    "player_status":     0x0756,  # 0 small, 1 tall, 2 fireball
    "lives":             0x075A,  # 2, 1, 0, then 0xFF = game over
    "stage":             0x075C,  # 0-based
    "world":             0x075F,  # 0-based
    "area":              0x0760,  # 0-based
    "oper_mode":         0x0770,  # 0 title/demo, 1 playing, 2 end of world (victory)
    "prelevel_timer":    0x07A0,
    "score_digits":      0x07DE,  # 6 bytes, one decimal digit each
    "coin_digits":       0x07ED,  # 2 bytes
    "time_digits":       0x07F8,  # 3 bytes
    "change_area_timer": 0x06DE,
}
# fmt: on

OPER_MODE_TITLE = 0
OPER_MODE_PLAYING = 1
OPER_MODE_END_OF_WORLD = 2

#: Player states in which Mario is "busy" (entering a pipe, auto-walking, ...).
BUSY_STATES = np.array([0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07], dtype=np.uint8)
#: Enemy types whose presence means a stage ends on the flag: Bowser and the flagpole.
STAGE_OVER_ENEMIES = np.array([0x2D, 0x31], dtype=np.uint8)
#: gym-super-mario-bros declares rewards in [-15, 15] and nes-py clips to it.
REWARD_RANGE = (-15, 15)
#: |x delta| above this is a teleport (death, pipe), not progress: the x reward is then 0.
MAX_X_DELTA = 5
DEATH_PENALTY = -25
STATUS_NAMES = np.array(["small", "tall", "fireball"])


def _byte(ram: Ram, name: str) -> npt.NDArray[np.int64]:
    return i64(ram[..., ADDR[name]])


def _digits(ram: Ram, name: str, n: int) -> npt.NDArray[np.int64]:
    """A number stored one decimal digit per byte, most significant first."""
    start = ADDR[name]
    return sum(i64(ram[..., start + k]) * 10 ** (n - 1 - k) for k in range(n))


def x_pos(ram: Ram) -> npt.NDArray[np.int64]:
    return _byte(ram, "x_page") * 256 + _byte(ram, "x_on_page")


def y_pos(ram: Ram) -> npt.NDArray[np.int64]:
    """Height above the bottom of the screen; above the screen it keeps counting past 255."""
    y = 255 - _byte(ram, "y_pixel")
    return where(_byte(ram, "y_viewport") < 1, 255 + y, y)


def world(ram: Ram) -> npt.NDArray[np.int64]:
    return _byte(ram, "world") + 1


def stage(ram: Ram) -> npt.NDArray[np.int64]:
    return _byte(ram, "stage") + 1


def area(ram: Ram) -> npt.NDArray[np.int64]:
    return _byte(ram, "area") + 1


def oper_mode(ram: Ram) -> npt.NDArray[np.int64]:
    return _byte(ram, "oper_mode")


def score(ram: Ram) -> npt.NDArray[np.int64]:
    return _digits(ram, "score_digits", 6)


def time(ram: Ram) -> npt.NDArray[np.int64]:
    return _digits(ram, "time_digits", 3)


def coins(ram: Ram) -> npt.NDArray[np.int64]:
    return _digits(ram, "coin_digits", 2)


def life(ram: Ram) -> npt.NDArray[np.int64]:
    return _byte(ram, "lives")


def status(ram: Ram) -> npt.NDArray[np.str_]:
    """'small', 'tall' or 'fireball' (gym-super-mario-bros maps every value above 1 to fireball)."""
    return STATUS_NAMES[np.minimum(host(_byte(ram, "player_status")), 2)]


def is_dying(ram: Ram) -> npt.NDArray[np.bool_]:
    return (_byte(ram, "player_state") == 0x0B) | (_byte(ram, "y_viewport") > 1)


def is_dead(ram: Ram) -> npt.NDArray[np.bool_]:
    return _byte(ram, "player_state") == 0x06


def is_game_over(ram: Ram) -> npt.NDArray[np.bool_]:
    return _byte(ram, "lives") == 0xFF


def is_busy(ram: Ram) -> npt.NDArray[np.bool_]:
    return isin(ram[..., ADDR["player_state"]], BUSY_STATES)


def is_world_over(ram: Ram) -> npt.NDArray[np.bool_]:
    return _byte(ram, "oper_mode") == OPER_MODE_END_OF_WORLD


def is_stage_over(ram: Ram) -> npt.NDArray[np.bool_]:
    """Bowser or the flagpole is loaded and Mario slides down the pole."""
    start = ADDR["enemy_types"]
    enemies = ram[..., start : start + 5]
    boss_or_flag = isin(enemies, STAGE_OVER_ENEMIES).any(-1)
    return boss_or_flag & (_byte(ram, "float_state") == 3)


def flag_get(ram: Ram) -> npt.NDArray[np.bool_]:
    return is_world_over(ram) | is_stage_over(ram)


def info(ram: Ram) -> dict[str, np.ndarray]:
    """The info dict of gym-super-mario-bros, one array per key."""
    return {
        "coins": coins(ram),
        "flag_get": flag_get(ram),
        "life": life(ram),
        "score": score(ram),
        "stage": stage(ram),
        "status": status(ram),
        "time": time(ram),
        "world": world(ram),
        "x_pos": x_pos(ram),
        "y_pos": y_pos(ram),
    }


def reward(prev: Ram, ram: Ram) -> npt.NDArray[np.int64]:
    """x progress + clock penalty + death penalty, clipped to [-15, 15].

    - x: ``x_pos - prev x_pos``, but 0 when it jumps by more than 5 (a death or a warp);
    - clock: ``time - prev time`` when the clock went down, else 0 (a reset refills it);
    - death: -25 while Mario is dying or dead.
    """
    dx = x_pos(ram) - x_pos(prev)
    dx = where(abs(dx) > MAX_X_DELTA, 0, dx)
    dt = clip(time(ram) - time(prev), None, 0)
    death = where(is_dying(ram) | is_dead(ram), DEATH_PENALTY, 0)
    return clip(dx + dt + death, *REWARD_RANGE)


def done(ram: Ram, *, single_stage: bool = False) -> npt.NDArray[np.bool_]:
    """Game over; for a single-stage environment (``SuperMarioBros-1-1-v0``) also death or flag."""
    if single_stage:
        return is_dying(ram) | is_dead(ram) | flag_get(ram)
    return is_game_over(ram)


# --- What the environments (nesle.vector) need: done modes, a shaped reward, stage targets. ---


def life_lost(ram: Ram) -> npt.NDArray[np.bool_]:
    """Mario is dying (hit, or falling into a pit) or dead: the life is gone."""
    return is_dying(ram) | is_dead(ram)


#: Episode ends, by name: ``life`` (a life lost; the default of ``nesle/SuperMarioBros-v0``),
#: ``stage`` (a life lost or the flag: gym-super-mario-bros' single-stage envs and
#: ``nesle/SuperMarioBros-W-S-v0``), ``game_over`` (gym-super-mario-bros' full-game env).
DONE_MODES = {
    "life": life_lost,
    "stage": lambda ram: life_lost(ram) | flag_get(ram),
    "game_over": is_game_over,
}

#: The 32 stages as (world, stage), 1-based.
STAGES = [(w, s) for w in range(1, 9) for s in range(1, 5)]


def target_area(world_: int, stage_: int) -> int:
    """The 1-based area number that loads (world, stage), as gym-super-mario-bros' decode_target
    computes it: worlds 1, 2, 4 and 7 have an extra area (the pipe intro) before stage 2."""
    if not (1 <= world_ <= 8 and 1 <= stage_ <= 4):
        raise ValueError(f"no stage {world_}-{stage_}: worlds are 1-8, stages 1-4")
    return stage_ + 1 if world_ in (1, 2, 4, 7) and stage_ >= 2 else stage_


#: Defaults of :func:`shaped_reward`, each a reward per event.
SHAPED_REWARD = {
    "progress": 1.0,  # per pixel moved right (negative left); teleports count 0, as in reward()
    "checkpoint": 10.0,  # per 256-pixel page newly entered moving right (a level is ~12-14)
    "death": -50.0,  # once, on the frame a life is lost
    "flag": 100.0,  # once, on the frame the flag (or Bowser's axe) is reached
    "time": -0.1,  # per tick of the in-game clock (400 ticks ~ 160 s)
}


def shaped_reward(prev: Ram, ram: Ram, **weights: float) -> npt.NDArray[np.float64]:
    """A reward built from events, each weighted by ``weights`` (defaults: :data:`SHAPED_REWARD`).

    Unlike :func:`reward`, death and flag count once (on the frame they happen) and nothing is
    clipped, so an agent sees the size of a death against a level's worth of progress.
    """
    unknown = set(weights) - set(SHAPED_REWARD)
    if unknown:
        raise ValueError(
            f"unknown shaped reward components {sorted(unknown)}; known: {list(SHAPED_REWARD)}"
        )
    for name, value in weights.items():
        number = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
        if not (number and np.isfinite(value)):
            raise ValueError(f"shaped reward {name!r} must be a finite number, got {value!r}")
    w = {**SHAPED_REWARD, **weights}
    dx = x_pos(ram) - x_pos(prev)
    moved = abs(dx) <= MAX_X_DELTA
    # Each term made float64 before its weight: torch would round a float weight times an
    # integer or bool tensor to float32.
    r = w["progress"] * f64(where(moved, dx, 0))
    r = r + w["checkpoint"] * f64(moved & (_byte(ram, "x_page") > _byte(prev, "x_page")))
    r = r + w["death"] * f64(life_lost(ram) & ~life_lost(prev))
    r = r + w["flag"] * f64(flag_get(ram) & ~flag_get(prev))
    r = r + w["time"] * f64(clip(time(prev) - time(ram), 0, None))
    return r


# --- The frames gym-super-mario-bros skips (``make_vec(..., skip_cutscenes=True)``). ---


class Consoles(Protocol):
    """What :func:`skip_cutscenes` needs of a batch: masks are (N,) bool arrays (NumPy, or
    torch on the CUDA backend's device), RAM is (N, 2048) uint8 of the same kind."""

    def ram(self) -> Ram: ...
    def write(self, addr: int, value: int, mask: npt.NDArray[np.bool_]) -> None: ...
    def frame(self, mask: npt.NDArray[np.bool_]) -> None:
        """One frame with no button held, for the consoles in ``mask`` only."""


#: The most frames one of the skips below runs. gym's loops have no bound, and the game reaches
#: a state that never leaves them: its ending after 8-4's axe, which waits for B with the world
#: over and the clock stopped. There gym's step never returns; here every step runs both loops
#: to this bound (8,192 frames, the batch waiting for them), until the agent presses B.
MAX_SKIP_FRAMES = 4096


def skip_cutscenes(consoles: Consoles, live: npt.NDArray[np.bool_]) -> None:
    """gym-super-mario-bros' ``_did_step`` for the consoles in ``live`` (their episode goes on),
    after a step: a dying Mario is made dead and a frame runs; past a world's end, frames run
    until the clock changes; an area change's timer is cut to 1; then, while Mario is busy (a
    pipe, the flagpole, the walk to the castle, the screen between lives) or the world is over,
    the pre-level timer is zeroed and a frame runs. Frames run without input, only for the
    consoles that need them. Each loop stops after :data:`MAX_SKIP_FRAMES` frames."""
    ram = consoles.ram()
    dying = live & is_dying(ram)
    if dying.any():
        consoles.write(ADDR["player_state"], 0x06, dying)
        consoles.frame(dying)
        ram = consoles.ram()
    # The end of a world: frames until the clock ticks (gym skips this in single-stage envs,
    # whose episodes end at the flag, as nesle's do with done="stage").
    over = live & is_world_over(ram)
    clock = time(ram)
    for _ in range(MAX_SKIP_FRAMES):
        if not over.any():
            break
        consoles.frame(over)
        ram = consoles.ram()
        over = over & (time(ram) == clock)
    timer = _byte(ram, "change_area_timer")
    cut = live & (timer > 1) & (timer < 255)
    if cut.any():
        consoles.write(ADDR["change_area_timer"], 1, cut)
        ram = consoles.ram()
    busy = live & (is_busy(ram) | is_world_over(ram))
    for _ in range(MAX_SKIP_FRAMES):
        if not busy.any():
            break
        consoles.write(ADDR["prelevel_timer"], 0, busy)
        consoles.frame(busy)
        ram = consoles.ram()
        busy = busy & (is_busy(ram) | is_world_over(ram))

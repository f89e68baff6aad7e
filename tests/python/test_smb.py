"""Super Mario Bros. boots from power-on into World 1-1 and Mario runs right (the README demo)."""

from __future__ import annotations

import numpy as np
import pytest

import nesle
from nesle import cli
from nesle.games import smb


@pytest.fixture(scope="module")
def demo(smb_rom):
    return cli.run_demo(smb_rom, frames=120)


def test_the_demo_reaches_world_1_1_gameplay(demo):
    assert demo.fault is None
    assert int(smb.oper_mode(demo.ram)) == smb.OPER_MODE_PLAYING
    assert (int(smb.world(demo.ram)), int(smb.stage(demo.ram))) == (1, 1)


def test_mario_moves_right_while_right_is_held(demo):
    assert int(smb.x_pos(demo.ram)) > demo.x_start + 100


def test_the_info_dict_has_gym_super_mario_bros_values_at_the_start(demo):
    info = smb.info(demo.ram)
    assert info["life"] == 2  # 3 lives, counted 2, 1, 0
    assert info["coins"] == 0 and info["score"] == 0
    assert 390 <= info["time"] <= 400
    assert info["status"] == "small"
    assert not info["flag_get"]
    assert 0 < info["y_pos"] < 255


def test_the_screen_is_the_overworld_sky(demo):
    sky = nesle.palette()[0x22]  # the light blue of World 1-1's background
    share = (demo.rgb.reshape(-1, 3) == sky).all(axis=1).mean()
    assert share > 0.4, f"only {share:.0%} of the screen is sky"


def test_the_cli_demo_writes_a_png_and_reports_gameplay(tmp_path, capsys):
    out = tmp_path / "mario.png"
    assert cli.main(["demo", "--frames", "30", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    # The demo runs on the best backend there is: CUDA on a GPU machine, else the CPU.
    backend = "cuda" if nesle._native.cuda_available()[0] else "cpu"
    assert f"backend:   {backend}" in text and "World 1-1" in text and "OperMode:  1" in text
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_rewards_follow_gym_super_mario_bros():
    def ram(x=0x40, page=0, time=(4, 0, 0), state=0x08, viewport=1):
        r = np.zeros(2048, np.uint8)
        r[0x86], r[0x6D], r[0x0E], r[0xB5] = x, page, state, viewport
        r[0x07F8:0x07FB] = time
        return r

    start = ram()
    assert smb.reward(start, ram(x=0x43)) == 3  # progress
    assert smb.reward(start, ram(x=0x3E)) == -2  # going back
    assert smb.reward(start, ram(x=0x40, page=1)) == 0  # a jump of 256: teleport, not progress
    assert smb.reward(start, ram(time=(3, 9, 9))) == -1  # the clock ticked
    assert smb.reward(ram(time=(3, 0, 0)), ram(time=(4, 0, 0))) == 0  # refilled by a reset
    assert smb.reward(start, ram(state=0x0B)) == -15  # dying: -25, clipped to -15
    assert smb.reward(start, ram(viewport=2)) == -15  # falling into a pit
    batch = np.stack([start, ram(x=0x44)])
    np.testing.assert_array_equal(smb.reward(batch, batch[::-1]), [4, -4])


def test_flag_and_done_follow_gym_super_mario_bros():
    r = np.zeros((2, 2048), np.uint8)
    r[:, 0x0E] = 0x08
    r[1, 0x18] = 0x31  # the flagpole is loaded...
    r[1, 0x1D] = 3  # ...and Mario slides down it
    assert smb.flag_get(r).tolist() == [False, True]
    assert smb.done(r, single_stage=True).tolist() == [False, True]
    assert smb.done(r).tolist() == [False, False]
    r[0, 0x075A] = 0xFF
    assert smb.done(r).tolist() == [True, False]

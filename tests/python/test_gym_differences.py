"""Where nesle's environments still differ from gym-super-mario-bros' (README, "Games"): each
test states gym's behaviour and is a known failure, strict, so that it fails as soon as nesle
behaves as gym does and the README's list must change with it.
"""

from __future__ import annotations

import numpy as np
import pytest

import nesle
from nesle.games import smb

RIGHT = 0x80


@pytest.mark.xfail(
    strict=True,
    reason="gym skips a death's frames inside one step; nesle's batches cannot run extra frames "
    "for some envs only, so each dying frame is a step at -15 (README, Games)",
)
def test_a_death_in_the_whole_game_costs_one_death_penalty_as_in_gym():
    env = nesle.make("smb", frameskip=1, action_space="raw", done="game_over")
    env.reset(seed=0)
    rewards = []
    # Run right into World 1-1's first Goomba, until Mario is in control of his next life.
    for _ in range(2000):
        _, r, terminated, _, info = env.step(RIGHT)
        rewards.append(r)
        if info["life"] == 1 and env.ram()[smb.ADDR["player_state"]] == 0x08:
            break
    else:
        pytest.fail("Mario did not lose a life running right for 2,000 frames")
    assert not terminated
    at_penalty = np.flatnonzero(np.array(rewards) <= -15)
    assert at_penalty.size > 0, "no death penalty at all"
    # gym: the dying step costs -15, then the frames to the next life are skipped unrewarded.
    assert sum(rewards[at_penalty[0]:]) >= -15 - 2

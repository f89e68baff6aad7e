"""Stable-Baselines3: nesle.sb3.NesleVecEnv keeps SB3's VecEnv contract, and PPO learns on it.

Needs stable-baselines3 (``pip install nesle[sb3]``). Without it this module FAILS, unless
``NESLE_NO_SB3=1`` says the run leaves SB3 out on purpose (then it is reported as skipped).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

try:
    import stable_baselines3  # noqa: F401
except ImportError as e:
    if os.environ.get("NESLE_NO_SB3") == "1":
        pytest.skip(
            "NESLE_NO_SB3=1: Stable-Baselines3 left out on purpose", allow_module_level=True
        )
    raise ImportError(
        "tests/python/test_sb3.py needs stable-baselines3 (pip install 'nesle[sb3]'); "
        "set NESLE_NO_SB3=1 to leave these tests out on purpose"
    ) from e

from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env

import nesle
from nesle.sb3 import NesleVecEnv

RIGHT_B = 3


def test_sb3_check_env_accepts_the_single_env():
    check_env(nesle.make("smb"), warn=False)


def test_sb3_check_env_with_its_render_check_closes_and_reuses_the_env():
    # SB3's render check calls close() and then keeps stepping the same env.
    check_env(nesle.make("smb", render_mode="rgb_array"), warn=False, skip_render_check=False)


def test_attributes_and_methods_are_the_whole_batchs():
    env = NesleVecEnv("tetris", 2, seed=0)
    env.reset()
    assert env.get_attr("frameskip", indices=[1]) == [4]
    env.set_attr("label", "a")
    assert env.get_attr("label") == ["a", "a"]
    calls = []
    env.venv.probe = lambda: calls.append(1) or "batch"
    assert env.env_method("probe") == ["batch", "batch"] and len(calls) == 1  # called once
    for verb in (lambda: env.set_attr("label", "b", indices=[0]),
                 lambda: env.env_method("probe", indices=1)):  # fmt: skip
        with pytest.raises(ValueError, match="indices must be None or every env"):
            verb()
    assert env.get_attr("label") == ["a", "a"] and len(calls) == 1  # nothing changed or ran
    assert env.env_method("probe", indices=[1, 0]) == ["batch", "batch"]
    assert env.get_attr("frameskip", indices=-1) == [4]
    for verb in (lambda: env.get_attr("frameskip", indices=[2]),
                 lambda: env.env_is_wrapped(object, indices=[-3])):  # fmt: skip
        with pytest.raises(IndexError, match="env index -?[23] out of range for 2 envs"):
            verb()
    # One env's spaces, as this VecEnv's own (gray84 with its channel), not the batch's.
    gray = NesleVecEnv("smb", 2, obs="gray84")
    assert gray.get_attr("observation_space") == [gray.observation_space] * 2
    assert gray.get_attr("action_space", indices=0) == [gray.action_space]


@pytest.mark.parametrize(("name", "value"), [
    ("copy", False), ("frameskip", 8), ("frame_stack", 2), ("obs_mode", "rgb"),
    ("render_mode", "rgb_array"), ("autoreset_mode", AutoresetMode.NEXT_STEP), ("num_envs", 3),
])  # fmt: skip
def test_settings_the_batch_is_made_for_cannot_be_set_after(name, value):
    env = NesleVecEnv("smb", 2, seed=0)
    before = env.reset()
    with pytest.raises(AttributeError, match=f"{name} is fixed when the env is made"):
        env.set_attr(name, value)
    with pytest.raises(AttributeError, match=f"{name} is fixed"):
        setattr(env.venv, name, value)
    obs, _, _, _ = env.step(np.zeros(2, np.int64))  # the env goes on as made
    assert obs.shape == before.shape and env.venv.copy and env.venv.frameskip == 4


def test_the_time_limit_and_start_sampling_can_be_set_and_are_checked():
    env = NesleVecEnv("smb", 2, seed=0)
    env.reset()
    env.set_attr("max_episode_steps", np.int64(3))
    for _ in range(3):
        _, _, dones, infos = env.step(np.zeros(2, np.int64))
    assert dones.all() and all(info["TimeLimit.truncated"] for info in infos)
    assert env.get_attr("max_episode_steps") == [3, 3]
    for name, value in (("max_episode_steps", 0), ("max_episode_steps", "9"),
                        ("start_sampling", "shuffled")):  # fmt: skip
        with pytest.raises((TypeError, ValueError), match=name):
            env.set_attr(name, value)
    assert env.get_attr("max_episode_steps") == [3, 3]


def test_metadata_gives_a_recordings_speed():
    # SB3's VecVideoRecorder reads render_fps (else 30): one picture a step of 4 frames at 60 Hz.
    assert NesleVecEnv("smb", 1, render_mode="rgb_array").metadata["render_fps"] == 15
    assert NesleVecEnv("smb", 1, frameskip=1).metadata["render_fps"] == 60


def test_reset_options_are_the_batchs_and_a_pending_step_ends_at_reset():
    env = NesleVecEnv("smb", 2, seed=0)
    env.reset()
    for _ in range(5):
        env.step(np.zeros(2, np.int64))
    env.set_options({"reset_mask": np.array([True, False])})
    env.reset()
    assert env.venv._elapsed.tolist() == [0, 5]  # only env 0 restarted
    env.reset()  # options are used once, as SB3's
    assert env.venv._elapsed.tolist() == [0, 0]
    with pytest.raises(TypeError, match="the whole batch's: give one dict"):
        env.set_options([{}, {}])
    env.step_async(np.zeros(2, np.int64))
    env.reset()
    with pytest.raises(RuntimeError, match=r"step_wait\(\) without step_async\(\)"):
        env.step_wait()
    env.step_async(None)  # None is a bad action set, not "no actions"
    with pytest.raises(TypeError):
        env.step_wait()


def test_views_of_the_observation_buffer_are_refused():
    with pytest.raises(ValueError, match="copy=False is not supported"):
        NesleVecEnv("smb", 1, copy=False)
    with pytest.raises(ValueError, match="copy=False is not supported"):
        NesleVecEnv(nesle.make_vec("smb", 1, copy=False))


@pytest.mark.parametrize("kwargs", [dict(autoreset_mode="next_step"), dict(autoreset=False)])
def test_envs_that_do_not_restart_in_the_ending_step_are_refused(monkeypatch, kwargs):
    with pytest.raises(ValueError, match="autoreset_mode SAME_STEP"):
        NesleVecEnv(nesle.make_vec("smb", 1, **kwargs))
    # Refused before any console is made.
    monkeypatch.setattr(nesle.vector, "make_batch", lambda *a, **k: pytest.fail("consoles made"))
    with pytest.raises(ValueError, match="autoreset_mode SAME_STEP"):
        NesleVecEnv("smb", 1, **kwargs)
    with pytest.raises(ValueError, match="'next_step', 'same_step'"):
        NesleVecEnv("smb", 1, autoreset_mode="sometimes")


def test_a_numpy_integer_seed_works():
    a, b = NesleVecEnv("tetris", 2, seed=np.int64(3)), NesleVecEnv("tetris", 2, seed=3)
    np.testing.assert_array_equal(a.reset(), b.reset())
    a.seed(np.int64(9))
    b.seed(9)
    np.testing.assert_array_equal(a.reset(), b.reset())


def test_a_bad_seed_or_reset_option_is_refused_when_given_not_at_every_reset():
    env = NesleVecEnv("smb", 2, seed=0)
    env.reset()
    for seed, error in ((-5, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="seed must be"):
            env.seed(seed)
    with pytest.raises(ValueError, match=r"reset_mask'\] must be a bool array"):
        env.set_options({"reset_mask": np.ones(2, int)})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.set_options({"mask": np.ones(2, bool)})
    env.reset()  # the refused seeds and options were not kept for it
    assert env.seed(7) == [7, 8]


def test_step_wait_reports_terminal_observation_and_time_limit_truncation():
    env = NesleVecEnv("smb", 2, max_episode_steps=40, seed=0)
    first = env.reset()
    assert first.shape == (2, 2048) and len(env.reset_infos) == 2
    for _ in range(40):
        obs, rewards, dones, infos = env.step(np.array([RIGHT_B, 0]))
        if dones.all():
            break
    assert rewards.dtype == np.float32 and dones.dtype == bool
    # env 0 ran into the first Goomba (a lost life), env 1 stood still until the time limit.
    died = [i for i, info in enumerate(infos) if "terminal_observation" in info]
    assert died, "no episode ended"
    for i in died:
        assert infos[i]["terminal_observation"].shape == (2048,)
        np.testing.assert_array_equal(obs[i], first[i])  # reset in the same step
    assert infos[1]["TimeLimit.truncated"] is True
    assert "world" in infos[0] and "x_pos" in infos[0]
    # Every step's infos say it, as SB3's own VecEnvs (False where no time limit cut).
    _, _, dones, infos = env.step(np.array([0, 0]))
    assert [info["TimeLimit.truncated"] for info in infos] == [False, False] and not dones.any()


def test_reset_infos_follow_restarts_in_a_step():
    """An episode restarted in the step that ended it: its start's info is reset_infos[i], as
    DummyVecEnv keeps it, while infos[i] carries the ended episode's entries."""
    env = NesleVecEnv("smb", 2, seed=0, start_states="all", start_sampling="random",
                      max_episode_steps=5)  # fmt: skip
    env.reset()
    levels = set()
    for t in range(40):
        _, _, dones, infos = env.step(np.array([0, RIGHT_B]))
        assert dones.all() == (t % 5 == 4)
        for i in np.flatnonzero(dones):
            ram, start = env.venv.ram()[i], env.reset_infos[i]
            assert (start["world"], start["stage"]) == (ram[0x075F] + 1, ram[0x075C] + 1)
            assert "terminal_observation" not in start and "terminal_observation" in infos[i]
            assert "TimeLimit.truncated" not in start  # a step's entry, not a reset's
            levels.add((start["world"], start["stage"]))
    assert len(levels) > 1  # the restarts' levels differ, so a stale reset_infos would show


def test_a_masked_reset_updates_only_its_envs_reset_infos_and_its_mask_is_copied():
    env = NesleVecEnv("smb", 3, seed=0)
    env.reset()
    starts = [dict(info) for info in env.reset_infos]
    for _ in range(10):
        env.step(np.array([RIGHT_B] * 3))
    mask = np.array([True, False, False])
    env.set_options({"reset_mask": mask})
    mask[:] = [False, False, True]  # after set_options: not what the next reset restarts
    env.reset()
    assert env.reset_infos[0]["elapsed_steps"] == 0
    assert env.reset_infos[1:] == starts[1:]  # left running: their latest start's info
    assert env.venv._elapsed.tolist() == [0, 10, 10]  # env 0 alone restarted


def test_gray84_without_stacking_gets_a_channel_axis():
    env = NesleVecEnv("smb", 1, obs="gray84")
    assert env.observation_space.shape == (1, 84, 84)
    assert env.reset().shape == (1, 1, 84, 84)


def test_ppo_learns_for_256_steps():
    env = NesleVecEnv("smb", 2, obs="ram", seed=0)
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    env.close()

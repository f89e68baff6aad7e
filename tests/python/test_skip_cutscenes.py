"""``skip_cutscenes=True``: the frames gym-super-mario-bros skips after a step, and the masked
step (``CpuBatch.step(mask=...)``) they run on.

The reference here is gym-super-mario-bros 7.4.0's ``_did_step``, rewritten line for line on one
console at a time with the addresses of its own source (not nesle.games.smb's helpers), run
beside the batched environment from the same states with the same actions.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import nesle
from nesle.games import smb
from nesle.vector import EnvState

RIGHT, B = 0x80, 0x02
# gym_super_mario_bros/smb_env.py: _BUSY_STATES.
GYM_BUSY = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07]


def gym_time(ram: np.ndarray) -> int:
    return int(ram[0x07F8]) * 100 + int(ram[0x07F9]) * 10 + int(ram[0x07FA])


def gym_did_step(console: nesle.CpuBatch) -> int:
    """gym's ``_did_step(done=False)`` on a one-console batch; returns the frames it ran."""
    frames = 0

    def ram() -> np.ndarray:
        return console.ram()[0]

    def frame_advance() -> None:
        nonlocal frames
        console.step(np.zeros(1, np.uint8), 1)
        frames += 1

    if ram()[0x000E] == 0x0B or ram()[0x00B5] > 1:  # _is_dying -> _kill_mario
        console.write_ram(0x000E, 0x06)
        frame_advance()
    if ram()[0x0770] == 2:  # _skip_end_of_world
        t = gym_time(ram())
        while gym_time(ram()) == t:
            frame_advance()
    timer = ram()[0x06DE]  # _skip_change_area
    if 1 < timer < 255:
        console.write_ram(0x06DE, 1)
    while ram()[0x000E] in GYM_BUSY or ram()[0x0770] == 2:  # _skip_occupied_states
        console.write_ram(0x07A0, 0)
        frame_advance()
    return frames


@pytest.mark.parametrize("frameskip", [1, 4])
def test_the_skipped_frames_are_gym_s_console_by_console(smb_rom, frameskip):
    n, steps = 6, 1500 // frameskip
    env = nesle.make_vec(
        "smb", n, backend="cpu", frameskip=frameskip, action_space="raw", done="game_over",
        skip_cutscenes=True,
    )  # fmt: skip
    env.reset(seed=3)
    refs = []
    for i in range(n):
        ref = nesle.CpuBatch(smb_rom, 1)
        ref.load_state(0, env.save_state(i).console)
        refs.append(ref)
    rng = np.random.default_rng(frameskip)
    skipped = np.zeros(n, int)
    a = np.zeros(n, np.int64)
    for t in range(steps):
        # Right, B and A held for 16 frames at a time, drawn anew: Mario meets Goombas and
        # pits, so lives are lost.
        if t % (16 // frameskip) == 0:
            a = rng.choice([RIGHT, RIGHT | B, RIGHT | 0x01, RIGHT | B | 0x01, 0x40], n)
        _, reward, terminated, _, _ = env.step(a)
        ram = env.ram()
        for i, ref in enumerate(refs):
            if terminated[i]:  # game over: gym skips nothing, and the env restarts
                continue
            ref.step(np.array([a[i]], np.uint8), frameskip)
            skipped[i] += gym_did_step(ref)
            np.testing.assert_array_equal(ram[i], ref.ram()[0], err_msg=f"env {i}, step {t}")
        for i in np.flatnonzero(terminated):
            refs[i].load_state(0, env.save_state(int(i)).console)
    # The skips did run in every env: a death and the screen before the next life skip ~29
    # frames.
    assert (skipped > 0).all() and skipped.sum() > 200, skipped


def test_a_death_in_the_whole_game_costs_one_death_penalty_as_in_gym():
    def run(skip: bool) -> list[float]:
        env = nesle.make(
            "smb", frameskip=1, action_space="raw", done="game_over", skip_cutscenes=skip
        )
        env.reset(seed=0)
        rewards = []
        # Run right into World 1-1's first Goomba, until Mario is in control of his next life.
        for _ in range(2000):
            _, r, terminated, _, info = env.step(RIGHT)
            rewards.append(r)
            if info["life"] == 1 and env.ram()[smb.ADDR["player_state"]] == 0x08:
                assert not terminated
                return rewards
        pytest.fail("Mario did not lose a life running right for 2,000 frames")

    skipped, played = run(True), run(False)
    at = np.flatnonzero(np.array(skipped) <= -15)
    assert at.size == 1, "the dying frame is a step, the rest of the death is skipped"
    # gym: the dying step costs -15, then the frames to the next life are skipped unrewarded.
    assert sum(skipped[at[0] :]) >= -15 - 2
    # Without skipping, each dying frame is a step at -15 (README, Games).
    assert sum(np.array(played) <= -15) > 100
    assert len(played) > len(skipped) + 100


#: Inputs from World 1-1's start to x 3,026, alive, just before the flagpole: one byte of
#: buttons a hex pair, each held 8 frames (found by a search over random presses).
TO_THE_FLAG = (
    "8280828083838383808382838382828281838083818382838381818183818081838182828283828383818382"
    "8181838183808383838081838383808381828382828383838081838081828183828183828183818283838181"
    "8382838182838183838383818382818182824183824183838083828381808381828383818383838081838382"
    "81818183"
)


def test_the_flag_the_castle_and_the_next_stage_s_intro_are_skipped_as_gym_skips_them(smb_rom):
    env = nesle.make_vec("smb", 1, backend="cpu", frameskip=1, action_space="raw",
                         start_states="1-1", done="game_over", skip_cutscenes=True)  # fmt: skip
    env.reset(seed=0)
    ref = nesle.CpuBatch(smb_rom, 1)
    ref.set_render(True)
    ref.load_state(0, env.save_state(0).console)
    for a in bytes.fromhex(TO_THE_FLAG):
        ref.step(np.array([a], np.uint8), 8)
    ram = ref.ram()[0]
    assert smb.x_pos(ram) >= 3000 and ram[0x0E] == 0x08, "the inputs no longer reach the flag"
    env.load_state(0, EnvState(ref.save_state(0), ref.pixels()[0], 0))
    skipped, flag = 0, False
    for t in range(1500):
        a = RIGHT | B | (0x01 if t // 20 % 2 == 0 else 0)  # jumps of 20 frames: up the stairs
        _, _, terminated, _, info = env.step(np.array([a]))
        assert not terminated[0], f"Mario died at step {t}"
        flag |= bool(info["flag_get"][0])
        ref.step(np.array([a], np.uint8), 1)
        skipped += gym_did_step(ref)
        np.testing.assert_array_equal(env.ram()[0], ref.ram()[0], err_msg=f"step {t}")
    ram = env.ram()[0]
    assert flag and (smb.world(ram), smb.stage(ram)) == (1, 2), "1-1's flag was not reached"
    # The flag, the tally, the walk to the castle and 1-2's intro pipe: hundreds of frames.
    assert skipped > 500, skipped


class _Script:
    """Consoles whose RAM is a script of (N, 2048) arrays, one more per frame run: records the
    writes and frames skip_cutscenes asks for."""

    def __init__(self, rams: list[np.ndarray]) -> None:
        self.rams, self.at, self.calls = rams, 0, []

    def ram(self) -> np.ndarray:
        return self.rams[self.at].copy()

    def write(self, addr: int, value: int, mask: np.ndarray) -> None:
        self.calls.append(("write", addr, value, mask.tolist()))
        self.rams[self.at][mask, addr] = value

    def frame(self, mask: np.ndarray) -> None:
        self.calls.append(("frame", mask.tolist()))
        self.at += 1


def _ram(n: int, state: int = 0x08, mode: int = 1, clock: int = 300, area_timer: int = 0) -> np.ndarray:
    r = np.zeros((n, 2048), np.uint8)
    r[:, 0x0E], r[:, 0x0770], r[:, 0x06DE], r[:, 0xB5] = state, mode, area_timer, 1
    r[:, 0x07F8:0x07FB] = [clock // 100, clock // 10 % 10, clock % 10]
    return r


def test_a_world_s_end_runs_until_the_clock_ticks_then_while_it_lasts():
    # Env 0 is past a world's end (the clock ticks on the third frame, the next world starts
    # on the fourth), env 1 plays on, env 2's episode ended.
    rams = [_ram(3, mode=2), _ram(3, mode=2), _ram(3, mode=2, clock=299), _ram(3, mode=1)]
    for r in rams:
        r[1, 0x0770] = 1
    script = _Script(rams)
    smb.skip_cutscenes(script, np.array([True, True, False]))
    assert script.calls == [
        ("frame", [True, False, False]),
        ("frame", [True, False, False]),  # the clock ticked on this one
        ("write", 0x07A0, 0, [True, False, False]),  # still the world's end: gym's last loop
        ("frame", [True, False, False]),
    ]


def test_an_area_change_s_timer_is_cut_and_busy_states_run_out():
    rams = [_ram(4, state=0x03), _ram(4, state=0x07), _ram(4)]
    rams[0][:, 0x06DE] = [5, 1, 255, 200]
    rams[0][1:, 0x0E] = 0x08  # envs 1-3 in control
    rams[1][1:, 0x0E] = 0x08
    script = _Script(rams)
    smb.skip_cutscenes(script, np.array([True, True, True, False]))
    assert script.calls == [
        ("write", 0x06DE, 1, [True, False, False, False]),  # only 1 < timer < 255, and live
        ("write", 0x07A0, 0, [True, False, False, False]),
        ("frame", [True, False, False, False]),
        ("write", 0x07A0, 0, [True, False, False, False]),
        ("frame", [True, False, False, False]),
    ]


def test_the_option_is_checked_kept_by_copies_and_off_by_default(smb_rom, tetris_rom):
    with pytest.raises(ValueError, match="tetris has no cutscenes"):
        nesle.make_vec("tetris", 1, backend="cpu", skip_cutscenes=True)
    unknown = smb_rom[:-1] + bytes([smb_rom[-1] ^ 1])  # a ROM of no game nesle knows
    with pytest.raises(ValueError, match="this ROM has no cutscenes"):
        nesle.make_vec(unknown, 1, backend="cpu", skip_cutscenes=True)
    with pytest.raises(TypeError, match="skip_cutscenes must be a bool"):
        nesle.make_vec("smb", 1, backend="cpu", skip_cutscenes="yes")
    env = nesle.make_vec("smb", 2, backend="cpu", skip_cutscenes=True)
    assert pickle.loads(pickle.dumps(env))._skip is not None
    assert nesle.make_vec("smb", 2, backend="cpu")._skip is None


def test_a_masked_step_runs_the_chosen_consoles_only(smb_rom):
    n = 5
    batch, alone = nesle.CpuBatch(smb_rom, n), [nesle.CpuBatch(smb_rom, 1) for _ in range(n)]
    for b in [batch, *alone]:
        b.set_render(True)
    rng = np.random.default_rng(1)
    for t in range(120):
        a = rng.integers(0, 256, n).astype(np.uint8)
        if t < 30:
            a[:] = np.where(rng.random(n) < 0.3, nesle.BUTTON_START, 0)
        if t % 3 == 0:  # both controllers
            a = np.stack([a, rng.integers(0, 256, n).astype(np.uint8)], axis=1)
        mask = rng.random(n) < 0.6
        batch.step(a, 2, mask=mask)
        for i in np.flatnonzero(mask):
            alone[i].step(a[i : i + 1], 2)
    for i in range(n):
        assert batch.save_state(i) == alone[i].save_state(0), f"console {i}"
        np.testing.assert_array_equal(batch.pixels()[i], alone[i].pixels()[0])
    assert len({batch.save_state(i) for i in range(n)}) == n  # each ran its own frames
    before = [batch.save_state(i) for i in range(n)]
    for bad, error in [(np.ones(n - 1, bool), ValueError), (np.ones(n, np.float32), TypeError)]:
        with pytest.raises(error, match="mask"):
            batch.step(np.zeros(n, np.uint8), 1, mask=bad)
    assert [batch.save_state(i) for i in range(n)] == before


def test_the_observation_is_the_ram_after_the_skip_even_when_only_a_byte_was_written(smb_rom):
    # An area change's timer set under Mario in control: the skip cuts it to 1 and runs no frame.
    env = nesle.make_vec("smb", 2, backend="cpu", skip_cutscenes=True)
    env.reset(seed=0)
    env._batch.write_ram(smb.ADDR["change_area_timer"], 40, np.array([True, False]))
    obs, *_ = env.step(np.ones(2, np.int64))
    np.testing.assert_array_equal(obs, env._batch.ram())
    np.testing.assert_array_equal(env.ram(), env._batch.ram())
    assert obs[0, smb.ADDR["change_area_timer"]] == 1

"""The PPO trainer (nesle.ppo): its parts against plain computations, a tiny run through the
command line, determinism, learning on World 1-1, and its errors. The GPU tests run the same
loop on the CUDA backend."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # a test dependency (through stable-baselines3)

import nesle  # noqa: E402
from nesle import cli, ppo  # noqa: E402

pytestmark = pytest.mark.rom


def tiny(**kw) -> ppo.Args:
    """A run of two updates of 4 envs x 16 steps on the CPU."""
    base = dict(game="smb", backend="cpu", num_envs=4, num_steps=16, total_steps=128,
                num_minibatches=2, update_epochs=2)  # fmt: skip
    return ppo.Args(**{**base, **kw})


def gae_by_hand(rewards, values, dones, next_value, gamma, lam):
    """GAE one env at a time, as the paper writes it: the sum over the episode's remaining
    steps of (gamma lambda)^l delta_{t+l}."""
    t_max, n = rewards.shape
    v_next = np.concatenate([values[1:], next_value[None]])
    delta = rewards + gamma * v_next * (1 - dones) - values
    out = np.zeros_like(rewards)
    for i in range(n):
        for t in range(t_max):
            total, weight = 0.0, 1.0
            for u in range(t, t_max):
                total += weight * delta[u, i]
                if dones[u, i]:
                    break
                weight *= gamma * lam
            out[t, i] = total
    return out


def test_gae_is_the_discounted_sum_of_td_errors_cut_where_episodes_end():
    rng = np.random.default_rng(1)
    t_max, n = 9, 5
    rewards = rng.normal(size=(t_max, n))
    values = rng.normal(size=(t_max, n))
    dones = (rng.random((t_max, n)) < 0.25).astype(np.float64)
    next_value = rng.normal(size=n)
    got = ppo.gae(*(torch.from_numpy(a) for a in (rewards, values, dones, next_value)), 0.9, 0.8)
    want = gae_by_hand(rewards, values, dones, next_value, 0.9, 0.8)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    # With gamma = lambda = 1 and no ends, A_t + V(s_t) is the rest of the rollout's rewards
    # plus the bootstrap: the Monte Carlo return.
    zeros = torch.zeros(t_max, n, dtype=torch.float64)
    mc = ppo.gae(torch.from_numpy(rewards), zeros, zeros, torch.from_numpy(next_value), 1.0, 1.0)
    want_mc = np.cumsum(rewards[::-1], axis=0)[::-1] + next_value
    np.testing.assert_allclose(mc.numpy(), want_mc, rtol=1e-12)


def test_the_reward_scaler_divides_by_the_std_of_every_discounted_return_seen():
    rng = np.random.default_rng(2)
    n, gamma = 6, 0.9
    scaler = ppo.RewardScaler(n, gamma, torch.device("cpu"))
    ret = np.zeros(n)
    seen = []
    for _ in range(40):
        r = rng.normal(size=n) * 5
        done = rng.random(n) < 0.2
        scaled = scaler(torch.from_numpy(r), torch.from_numpy(done))
        ret = ret * gamma + r
        seen.append(ret.copy())
        ret[done] = 0.0
        # The running statistics start from a tiny prior (variance 1, weight 1e-4).
        all_returns = np.concatenate(seen)
        count = 1e-4 + all_returns.size
        mean = all_returns.sum() / count
        m2 = ((all_returns - mean) ** 2).sum() + 1e-4 * (1.0 + mean**2)
        np.testing.assert_allclose(scaled.numpy(), r / np.sqrt(m2 / count + 1e-8), rtol=1e-5)


def test_episode_means_keep_apart_from_a_games_info_of_the_same_names():
    stats = ppo.EpisodeStats(2, torch.device("cpu"))
    clash = {"episodes": np.array([9, 9]), "return": np.array([5.0, 7.0]), "length": np.array([1, 1])}
    stats.record(torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([False, False]), {})
    stats.record(torch.tensor([3.0, 4.0], dtype=torch.float64), torch.tensor([True, False]),
                 {"final_info": clash})  # fmt: skip
    assert stats.take() == {"episodes": 1, "episode_return": 4.0, "episode_length": 2.0,
                            "episode_episodes": 9.0, "episode_info_return": 5.0,
                            "episode_info_length": 1.0}  # fmt: skip


def test_a_tiny_run_from_the_command_line_saves_an_agent_that_loads_and_acts(tmp_path, capsys, smb_rom):
    out = tmp_path / "run"
    code = cli.main(["train", "smb", "--backend", "cpu", "--envs", "4", "--num-steps", "16",
                     "--steps", "128", "--minibatches", "2", "--epochs", "1", "--no-tf32",
                     "--skip-cutscenes", "--out", str(out)])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert printed.count("update ") == 2, printed
    assert "trained: 128 steps" in printed and "cpu backend" in printed
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["steps"] for r in rows] == [64, 128]
    saved = json.loads((out / "args.json").read_text())
    assert saved["num_envs"] == 4 and saved["tf32"] is False and saved["skip_cutscenes"] is True
    assert ppo.make_env(ppo.Args(**saved).resolved("cpu"))._skip is not None
    agent = ppo.load(out / "agent.pt")
    assert agent.args is not None and agent.args["total_steps"] == 128
    ram = torch.zeros((3, 2048), dtype=torch.uint8)
    actions = agent.act(ram)
    assert actions.shape == (3,) and int(actions.max()) < 7  # SMB's simple actions
    # Greedy acting is a function of the weights alone: the same as the saved run's agent.
    assert torch.equal(agent.act(ram, greedy=True), ppo.load(out / "agent.pt").act(ram, greedy=True))


def test_a_trained_agent_records_one_episode_to_its_last_screen(tmp_path, capsys, smb_rom):
    run = ppo.train(tiny(out=str(tmp_path / "run")))
    gif = tmp_path / "agent.gif"
    r = ppo.record(run.agent, run.args, gif, seed=7)
    assert r["episodes"] == 1 and r["unfinished"] == 0
    data = gif.read_bytes()
    assert data[:6] == b"GIF89a" and data[-1:] == b";"
    # One image a step and the start's: GIF image descriptors (0x2C after a graphic control
    # block's terminator) counted.
    assert data.count(b"\x00\x2c") >= r["episode_length"] + 1
    cut = ppo.record(run.agent, run.args, tmp_path / "cut.gif", max_steps=3, seed=7)
    assert cut["episodes"] == 0 and cut["unfinished"] == 1
    # The episode so far: 3 steps, and its return the rewards of those steps.
    env = ppo.make_env(run.args, 1, 7, autoreset=False)
    env.reset(seed=7)
    generator = torch.Generator().manual_seed(7)
    obs, so_far = torch.as_tensor(env.reset(seed=7)[0]), 0.0
    for _ in range(3):
        obs, reward, _, _, _ = env.step(run.agent.act(obs, generator=generator).numpy())
        obs, so_far = torch.as_tensor(obs), so_far + float(reward[0])
    assert cut["episode_length"] == 3 and cut["episode_return"] == so_far
    # The command line: the agent's own game and settings, on the CPU backend.
    out = tmp_path / "cli.gif"
    assert cli.main(["record", "--agent", str(tmp_path / "run" / "agent.pt"), "--out", str(out),
                     "--seed", "7"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert f"{r['episode_length']:.0f} steps" in printed and out.read_bytes() == data
    assert "not ended" not in printed
    frames = 3 * run.args.frameskip
    assert cli.main(["record", "--agent", str(tmp_path / "run" / "agent.pt"), "--out", str(out),
                     "--seed", "7", "--frames", str(frames)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert f"episode: return {so_far:.1f}, 3 steps, not ended" in printed, printed
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"nope")
    assert cli.main(["record", "--agent", str(bad), "--out", str(tmp_path / "x.gif")]) == 2
    assert "is not a nesle PPO agent" in capsys.readouterr().err
    # The output's name is checked before the agent is read; a missing agent is one line too.
    assert cli.main(["record", "--agent", str(bad), "--out", str(tmp_path / "x.txt")]) == 2
    assert "must end in .gif" in capsys.readouterr().err
    assert cli.main(["record", "--agent", str(tmp_path / "none.pt"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("error: [Errno 2] No such file")


def test_an_out_holding_a_run_is_refused_unless_resumed_or_overwritten(tmp_path, capsys, smb_rom):
    out = tmp_path / "run"
    ppo.train(tiny(out=str(out)))
    files = {name: (out / name).read_bytes() for name in ppo.RUN_FILES}
    with pytest.raises(ValueError, match="holds a run already .*agent.pt, args.json, log.jsonl"):
        ppo.train(tiny(out=str(out), seed=1))
    assert cli.main(["train", "smb", "--backend", "cpu", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert {name: (out / name).read_bytes() for name in ppo.RUN_FILES} == files
    ppo.train(tiny(out=str(out), resume=str(out / "agent.pt")))  # a resume appends to the log
    assert len((out / "log.jsonl").read_text().splitlines()) == 4
    ppo.train(tiny(out=str(out), seed=1, overwrite=True))
    assert len((out / "log.jsonl").read_text().splitlines()) == 2


def test_an_agent_that_cannot_be_saved_is_refused_first_and_leaves_no_part_file(tmp_path, smb_rom):
    out = tmp_path / "run"
    (out / "agent.pt").mkdir(parents=True)
    with pytest.raises(ValueError, match="agent.pt' is not a file"):
        ppo.train(tiny(out=str(out)))
    agent = ppo.Agent((2048,), 7, ppo.NETWORKS["ram"], 16)
    with pytest.raises(IsADirectoryError):
        ppo.save(agent, out / "agent.pt")
    assert sorted(p.name for p in out.iterdir()) == ["agent.pt"]


def test_the_agent_is_saved_every_few_updates_and_when_the_run_is_interrupted(tmp_path, monkeypatch, capsys, smb_rom):
    out = tmp_path / "run"
    saved = []
    real_save = ppo.save

    def counting_save(agent, path, *rest):
        saved.append(agent.actor.weight.detach().clone())
        return real_save(agent, path, *rest)

    monkeypatch.setattr(ppo, "save", counting_save)
    ppo.train(tiny(total_steps=4 * 16 * 4, save_every=2, out=str(out)))
    assert len(saved) == 3  # after updates 2 and 4, and at the end

    def stop_at_3(row):
        if row["update"] == 3:
            raise KeyboardInterrupt

    saved.clear()
    with pytest.raises(KeyboardInterrupt):
        ppo.train(tiny(total_steps=4 * 16 * 6, save_every=0, out=str(out), overwrite=True), on_update=stop_at_3)
    assert len(saved) == 1 and len((out / "log.jsonl").read_text().splitlines()) == 3
    assert torch.equal(ppo.load(out / "agent.pt").actor.weight, saved[0])
    # The command line says where the agent is and exits with 128 + SIGINT.
    monkeypatch.setattr(ppo, "train", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert cli.main(["train", "smb", "--backend", "cpu", "--out", str(out), "--overwrite"]) == 130
    assert f"the agent so far is in {out / 'agent.pt'}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="save_every"):
        ppo.check(tiny(save_every=-1))


def test_a_run_resumes_from_a_saved_agent_and_its_optimizer_state(tmp_path, smb_rom):
    first = ppo.train(tiny(out=str(tmp_path / "a")))
    saved = ppo.load(tmp_path / "a" / "agent.pt")
    assert saved.optimizer_state is not None and saved.optimizer_state["state"]
    # At a learning rate of 1e-12 the resumed run can only keep the weights it started from;
    # a run that ignored resume would keep its own fresh ones.
    again = ppo.train(tiny(resume=str(tmp_path / "a" / "agent.pt"), learning_rate=1e-12, seed=9,
                           out=str(tmp_path / "b")))  # fmt: skip
    fresh = ppo.train(tiny(learning_rate=1e-12, seed=9))
    # Adam's state goes on from the saved one: its step count is both runs' steps.
    steps = [ppo.load(tmp_path / d / "agent.pt").optimizer_state["state"][0]["step"] for d in "ab"]
    assert float(steps[1]) == 2 * float(steps[0]) > 0
    for (name, w0), w1, w2 in zip(first.agent.state_dict().items(), again.agent.state_dict().values(),
                                  fresh.agent.state_dict().values()):  # fmt: skip
        assert torch.allclose(w0, w1, atol=1e-6), name
        assert not torch.allclose(w0, w2, atol=1e-6), name
    with pytest.raises(ValueError, match="cannot resume"):
        ppo.train(tiny(resume=str(tmp_path / "a" / "agent.pt"), obs="gray84", num_envs=2))
    # Resumed into its own folder, a run's log goes on after the earlier rows.
    rows = (tmp_path / "a" / "log.jsonl").read_text().splitlines()
    ppo.train(tiny(resume=str(tmp_path / "a" / "agent.pt"), out=str(tmp_path / "a")))
    after = (tmp_path / "a" / "log.jsonl").read_text().splitlines()
    assert after[: len(rows)] == rows and len(after) == 2 * len(rows)


def test_the_same_seed_gives_the_same_run_and_another_seed_another(smb_rom):
    a, b = ppo.train(tiny(seed=3)), ppo.train(tiny(seed=3))
    c = ppo.train(tiny(seed=4))

    def learned(r):  # the log without its clock
        return [{k: v for k, v in row.items() if "second" not in k} for row in r.log]

    assert learned(a) == learned(b)
    for (name, wa), wb in zip(a.agent.state_dict().items(), b.agent.state_dict().values()):
        assert torch.equal(wa, wb), name
    assert learned(a) != learned(c)
    # The run seeds its own draws and hands the caller's generator and settings back untouched.
    torch.manual_seed(11)
    expected = torch.rand(4)
    torch.manual_seed(11)
    deterministic = torch.backends.cudnn.deterministic
    d = ppo.train(tiny(seed=3, torch_deterministic=not deterministic))
    assert torch.equal(torch.rand(4), expected)
    assert torch.backends.cudnn.deterministic == deterministic
    assert learned(d) == learned(a)


def test_the_run_sets_tf32_for_its_products_and_hands_the_callers_setting_back(smb_rom):
    caller = torch.backends.cuda.matmul.allow_tf32
    try:
        for wanted in (True, False):
            torch.backends.cuda.matmul.allow_tf32 = not wanted
            seen = []
            ppo.train(tiny(tf32=wanted), on_update=lambda row: seen.append(torch.backends.cuda.matmul.allow_tf32))
            assert seen == [wanted, wanted]  # each update ran with the run's setting
            assert torch.backends.cuda.matmul.allow_tf32 == (not wanted)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = caller


# Records OMP_WAIT_POLICY at the moment torch is first imported, then imports the module.
_OPENMP_PROBE = """
import os, sys
seen = []
class Probe:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not seen:
            seen.append(os.environ.get("OMP_WAIT_POLICY"))
sys.meta_path.insert(0, Probe())
import {module}
print(seen)
"""


@pytest.mark.parametrize("module, user", [("nesle.ppo", None), ("nesle.ppo", "ACTIVE"), ("nesle.sb3", None)])
def test_torch_loads_with_openmp_threads_that_sleep_unless_the_user_chose(module, user):
    """The CPU backend's envs and torch's OpenMP threads share the cores, so the trainer and the
    SB3 adapter set OMP_WAIT_POLICY before torch loads OpenMP (it is read once, at load), and
    keep a user's own."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if user is not None:
        env["OMP_WAIT_POLICY"] = user
    out = subprocess.run([sys.executable, "-c", _OPENMP_PROBE.format(module=module)], env=env,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out.split() == [f"['{user or 'PASSIVE'}']"]


def test_ppo_learns_to_run_right_in_world_1_1(smb_rom):
    """32 envs for 12 rollouts (24,576 steps, ~10 s on 2 cores) beside the same run with a
    learning rate of 1e-12 (an untrained control: same seed, same starts, the same phases of
    the level in each rollout). Over the last 3 rollouts the trained agent's reward per step
    (gym-super-mario-bros': Mario's progress right, less time and deaths) must be twice the
    control's. Measured at seeds 0-2: trained 4.0-5.0, control 1.2-1.6. With the advantages
    negated it fell to 0.4, with a zero reward it stayed at the control's 1.2 (checked by hand).
    Episode means would not do: the first rollouts see only episodes short enough to end in
    them, and 16 evaluation episodes of SMB are too noisy to tell 24,576 steps of learning."""
    args = ppo.Args(game="smb", backend="cpu", num_envs=32, num_steps=64,
                    total_steps=32 * 64 * 12, seed=0)  # fmt: skip
    trained = ppo.train(args)
    control = ppo.train(dataclasses.replace(args, learning_rate=1e-12))

    def late(r):
        return float(np.mean([row["reward_per_step"] for row in r.log[-3:]]))

    assert late(trained) > 2.0 * late(control), (
        [round(row["reward_per_step"], 2) for row in trained.log],
        [round(row["reward_per_step"], 2) for row in control.log],
    )


def test_evaluate_plays_one_episode_per_env_and_reports_its_means(smb_rom):
    args = tiny().resolved("cpu")
    torch.manual_seed(0)
    agent = ppo.Agent((2048,), 7, "mlp")
    a, b = ppo.evaluate(agent, args, num_envs=3, seed=1), ppo.evaluate(agent, args, num_envs=3, seed=1)
    assert a["episodes"] == 3 and a["unfinished"] == 0
    assert a["episode_x_pos"] > 40 and a["episode_length"] > 1  # Mario starts at x 40
    assert a == b  # the same seed, the same episodes
    assert ppo.evaluate(agent, args, num_envs=3, seed=2) != a
    cut = ppo.evaluate(agent, args, num_envs=3, max_steps=2, seed=1)
    assert cut["unfinished"] == 3 and cut["episodes"] == 0
    with pytest.raises(ValueError, match="num_envs must be at least 1"):  # not the run's count
        ppo.evaluate(agent, args, num_envs=0)


def test_bad_settings_and_files_are_clear_errors(tmp_path, capsys, smb_rom):
    with pytest.raises(ValueError, match="obs must be one of"):
        ppo.train(tiny(obs="rgb"))
    with pytest.raises(ValueError, match="num_steps must be a positive int or None"):
        ppo.train(tiny(num_steps=0))
    with pytest.raises(ValueError, match="gamma must be in"):
        ppo.check(tiny(gamma=1.5))
    with pytest.raises(ValueError, match="total_steps must be a positive int or None"):
        ppo.check(tiny(total_steps=0))
    bad = tmp_path / "agent.pt"
    for junk in (b"not a checkpoint", b"PK\x03\x04 a zip cut short"):
        bad.write_bytes(junk)
        with pytest.raises(ValueError, match="is not a nesle PPO agent") as e:
            ppo.load(bad)
        # One line, without torch's paragraphs (which suggest loading with weights_only=False).
        assert "\n" not in str(e.value) and "weights_only" not in str(e.value)
    torch.save({"weights": torch.zeros(1)}, bad)
    with pytest.raises(ValueError, match="is not a nesle PPO agent"):
        ppo.load(bad)
    with pytest.raises(FileNotFoundError):
        ppo.load(tmp_path / "missing.pt")
    for argv in (["--steps", "0"], ["--obs", "rgb"], ["--backend", "tpu"], ["--device", "-1"]):
        with pytest.raises(SystemExit) as e:
            cli.main(["train", "smb", *argv])
        assert e.value.code == 2
    # A ROM without a built-in reward: nothing to learn from the command line.
    assert cli.main(["train", "zelda", "--backend", "cpu", "--steps", "32"]) == 2
    assert "has no built-in reward" in capsys.readouterr().err
    # Settings only the env can judge, and bad JSON: an error line and code 2, no traceback.
    assert cli.main(["train", "smb", "--backend", "cpu", "--actions", "no_such_set"]) == 2
    assert cli.main(["train", "smb", "--backend", "cpu", "--reward", "{death: -1}"]) == 2
    assert cli.main(["train", "smb", "--backend", "cpu", "--reward", '{"no_such_part": 1}']) == 2
    # A GPU named for the CPU backend: refused, not taken and ignored.
    assert cli.main(["train", "smb", "--backend", "cpu", "--device", "1", "--steps", "32"]) == 2
    assert "--backend cpu runs on none" in capsys.readouterr().err
    # More envs than the host holds: the batch's error line, not a traceback or a killed process.
    assert cli.main(["train", "smb", "--backend", "cpu", "--envs", str(10**12), "--steps", "64"]) == 2
    assert "GiB of host memory" in capsys.readouterr().err
    # CUDA asked for where it cannot run: the backend's own error line, not torch's traceback.
    if not nesle.vector.cuda_available()[0]:
        assert cli.main(["train", "smb", "--backend", "cuda", "--steps", "32"]) == 2
        assert "backend='cuda' is unavailable" in capsys.readouterr().err


@pytest.mark.parametrize(("setting", "message"), [
    (dict(learning_rate=math.inf), "learning_rate must be positive and finite"),
    (dict(learning_rate="1e-3"), "learning_rate must be positive and finite, got '1e-3'"),
    (dict(learning_rate=True), "learning_rate must be"),
    (dict(ent_coef=math.nan), "ent_coef must be finite and >= 0"),
    (dict(vf_coef=math.inf), "vf_coef must be finite and >= 0"),
    (dict(vf_coef=-1.0), "vf_coef must be finite and >= 0"),
    (dict(target_kl=-1.0), "target_kl must be positive and finite, or None"),
    (dict(target_kl=math.nan), "target_kl must be positive and finite, or None"),
    (dict(gamma=None), "gamma must be in"),
    (dict(seed=None), "seed must be an int >= 0"),
    (dict(num_steps=True), "num_steps must be a positive int or None"),
    (dict(save_every=True), "save_every must be an int >= 0"),
    (dict(num_minibatches=3), r"num_minibatches \(3\) must divide .* = 64 samples"),
    (dict(num_minibatches=128), r"num_minibatches \(128\) must divide"),
    (dict(anneal_lr="no"), "anneal_lr must be True or False, got 'no'"),
    (dict(norm_reward=None), "norm_reward must be True or False"),
    (dict(tf32=1), "tf32 must be True or False"),
    (dict(resume=""), "resume must be a path or None, got ''"),
    (dict(resume=3), "resume must be a path or None, got 3"),
])  # fmt: skip
def test_settings_that_would_fail_or_turn_to_nan_in_the_first_update_are_refused_first(
    tmp_path, setting, message
):
    run = tiny(out=str(tmp_path / "run"), **setting)
    with pytest.raises(ValueError, match=message):
        ppo.train(run)
    assert not (tmp_path / "run").exists()  # nothing written, nothing of an earlier run lost


def test_a_run_that_diverges_says_so_in_one_line_and_saves_no_nan_agent(tmp_path, capsys, smb_rom):
    diverged = r"the run diverged in update \d+: the policy's outputs are not finite"
    with pytest.raises(ValueError, match=diverged):
        ppo.train(tiny(learning_rate=1e30, out=str(tmp_path / "a")))
    assert not (tmp_path / "a" / "agent.pt").exists()
    argv = ["train", "smb", "--backend", "cpu", "--envs", "4", "--num-steps", "16", "--steps", "128",
            "--lr", "1e30", "--out", str(tmp_path / "b")]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the run diverged") and err.count("\n") == 1
    # Diverged by the run's very last step (one minibatch, one epoch, one update), or by the
    # step before a save: nothing is saved, and the run does not end as if it had trained.
    for name, total, every in (("c", 64, 50), ("d", 192, 1)):
        with pytest.raises(ValueError, match=diverged + r" \(these weights are not saved\)"):
            ppo.train(tiny(learning_rate=1e30, num_minibatches=1, update_epochs=1, total_steps=total,
                           save_every=every, out=str(tmp_path / name)))  # fmt: skip
        assert not (tmp_path / name / "agent.pt").exists()


def test_an_agent_whose_policy_is_not_finite_is_refused_before_any_file(tmp_path, capsys, smb_rom):
    args = tiny().resolved("cpu")
    agent = ppo.Agent((2048,), 7, "mlp", 16)
    with torch.no_grad():
        agent.actor.bias.fill_(math.nan)
    path = ppo.save(agent, tmp_path / "agent.pt", args)
    out = tmp_path / "x.gif"
    assert cli.main(["record", "--agent", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "policy is not finite" in err and err.count("\n") == 1 and not out.exists()
    with pytest.raises(ValueError, match="policy is not finite"):
        ppo.evaluate(agent, args, num_envs=2)


@pytest.mark.parametrize("norm_reward", [True, False])
def test_a_truncated_episode_is_bootstrapped_in_the_scaled_rewards_units(monkeypatch, norm_reward, smb_rom):
    """r_t / std + gamma V(final_obs): the critic learns scaled returns, so the bootstrap joins
    the reward after the scaling, and the scaler's statistics see the env's reward alone."""
    args = tiny(max_episode_steps=5, num_steps=10, total_steps=40, num_minibatches=1,
                norm_reward=norm_reward).resolved("cpu")  # fmt: skip
    env = nesle.make_vec("smb", 4, backend="cpu", seed=0, max_episode_steps=5)
    steps, scaled, finals, rollouts = [], [], [], []
    real_step, real_scale, real_final = env.step, ppo.RewardScaler.__call__, ppo._final_obs
    real_value, real_gae = ppo.Agent.value, ppo.gae

    def step(action):
        out = real_step(action)
        steps.append((np.array(out[1], np.float64), np.array(out[3])))
        return out

    def scale(self, reward, done):
        out = real_scale(self, reward, done)
        scaled.append((reward.clone(), out.clone()))
        return out

    def final(info, mask, like):
        finals.append(real_final(info, mask, like))
        return finals[-1]

    def value(self, obs):
        v = real_value(self, obs)
        if finals and obs is finals[-1]:
            finals[-1] = v.clone()  # V(final_obs) as the loop computed it
        return v

    def gae(rewards, *rest):
        rollouts.append(rewards.clone())
        return real_gae(rewards, *rest)

    monkeypatch.setattr(env, "step", step)
    monkeypatch.setattr(ppo.RewardScaler, "__call__", scale)
    monkeypatch.setattr(ppo, "_final_obs", final)
    monkeypatch.setattr(ppo.Agent, "value", value)
    monkeypatch.setattr(ppo, "gae", gae)
    ppo._train(args, env, None)
    k = 0
    for t in range(10):  # the first rollout
        reward, truncated = steps[t]
        assert truncated.any() == (t in (4, 9))  # no death in SMB's first 10 steps
        if norm_reward:
            assert torch.equal(scaled[t][0], torch.from_numpy(reward))  # the env's reward alone
            want = scaled[t][1]
        else:
            want = torch.from_numpy(reward).float()
        if truncated.any():
            want = want + args.gamma * torch.where(torch.from_numpy(truncated), finals[k], 0.0)
            k += 1
        assert torch.equal(rollouts[0][t], want), t

def test_settings_of_numpy_ints_and_unset_minibatch_splits_are_taken(tmp_path, smb_rom):
    ppo.check(tiny(num_envs=np.int64(4), num_steps=np.int64(16)))
    ppo.train(tiny(num_envs=np.int64(4), out=str(tmp_path)))
    assert ppo.args_of(ppo.load(tmp_path / "agent.pt")).num_envs == 4  # saved as a number
    ppo.check(tiny(num_envs=None, num_minibatches=3))  # the batch is known once resolved
    with pytest.raises(ValueError, match="must divide"):  # ... and checked then
        ppo.train(tiny(num_envs=5, num_steps=7, num_minibatches=3))


def test_a_rollout_larger_than_the_host_is_a_memory_error_naming_its_size(smb_rom):
    with pytest.raises(MemoryError, match=r"rollout needs about \d[\d,.]* GiB of host memory"):
        ppo.train(tiny(num_envs=2, num_steps=2**50, num_minibatches=1))


@pytest.mark.filterwarnings("ignore:var\\(\\). degrees of freedom")
def test_the_log_is_strict_json_when_a_number_is_not_finite(tmp_path, smb_rom):
    # One sample a rollout: its returns have no variance, so the explained variance is NaN.
    r = ppo.train(tiny(num_envs=1, num_steps=1, total_steps=2, num_minibatches=1,
                       out=str(tmp_path)))  # fmt: skip
    assert math.isnan(r.log[0]["explained_variance"])

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    rows = [json.loads(line, parse_constant=refuse) for line in (tmp_path / "log.jsonl").open()]
    assert rows[0]["explained_variance"] is None and len(rows) == 2


def test_an_agent_whose_run_had_a_reward_callable_says_so_when_its_args_are_asked(tmp_path, smb_rom):
    ppo.train(tiny(reward=lambda prev, ram: np.zeros(len(ram)), out=str(tmp_path)))
    agent = ppo.load(tmp_path / "agent.pt")
    with pytest.raises(ValueError, match=r"set reward=<function .*which cannot be saved"):
        ppo.args_of(agent)
    assert cli.main(["record", "--agent", str(tmp_path / "agent.pt"),
                     "--out", str(tmp_path / "x.gif")]) == 2  # fmt: skip
    assert not (tmp_path / "x.gif").exists()


def test_agent_files_with_parts_missing_or_for_another_device_are_told_apart(tmp_path, smb_rom):
    path = tmp_path / "agent.pt"
    torch.save({"format": "nesle-ppo-1"}, path)
    with pytest.raises(ValueError, match=r"is not a whole nesle PPO agent \(KeyError: 'obs_shape'\)"):
        ppo.load(path)
    assert cli.main(["record", "--agent", str(path), "--out", str(tmp_path / "x.gif")]) == 2
    ppo.save(ppo.Agent((2048,), 7, "mlp", 16), path)
    with pytest.raises(RuntimeError, match="bogus") as e:
        ppo.load(path, device="bogus")
    assert "not a nesle PPO agent" not in str(e.value)
    if not torch.cuda.is_available():  # the device's fault, not the file's
        with pytest.raises(Exception) as e:
            ppo.load(path, device="cuda")
        assert "not a nesle PPO agent" not in str(e.value)
    assert ppo.load(path).num_actions == 7


def test_paths_given_as_path_objects_are_saved_as_paths(tmp_path, capsys, smb_rom):
    run = ppo.train(tiny(out=tmp_path / "run", game=nesle.roms.find("smb")))
    args = ppo.args_of(ppo.load(tmp_path / "run" / "agent.pt"))
    assert args.out == str(tmp_path / "run") and args.game == str(nesle.roms.find("smb"))
    assert json.loads((tmp_path / "run" / "args.json").read_text())["out"] == args.out
    out = tmp_path / "x.gif"
    assert cli.main(["record", "--agent", str(run.checkpoint), "--out", str(out), "--frames", "8"]) == 0
    assert out.exists()


def test_agent_files_with_args_or_optimizer_state_not_their_own_are_clear_errors(tmp_path, capsys, smb_rom):
    ppo.train(tiny(out=str(tmp_path / "run")))
    good = torch.load(tmp_path / "run" / "agent.pt", weights_only=True)
    path = tmp_path / "agent.pt"

    def with_part(**parts):
        torch.save({**good, **parts}, path)
        return path

    for parts in (dict(args=[1, 2]), dict(optimizer=[1, 2]), dict(optimizer={"state": {}}),
                  dict(state_dict={1: 2})):  # fmt: skip
        with pytest.raises(ValueError, match="is not a whole nesle PPO agent"):
            ppo.load(with_part(**parts))
    with pytest.raises(ValueError, match="saved args cannot run: frameskip must be"):
        ppo.args_of(ppo.load(with_part(args={**good["args"], "frameskip": "four"})))
    with pytest.raises(ValueError, match=r"saved args cannot run: obs must be one of .* got \['ram'\]"):
        ppo.args_of(ppo.load(with_part(args={**good["args"], "obs": ["ram"]})))
    with pytest.raises(ValueError, match="saved args cannot run: anneal_lr must be True or False"):
        ppo.args_of(ppo.load(with_part(args={**good["args"], "anneal_lr": "no"})))
    diverged = {k: v.fill_(float("nan")) if v.is_floating_point() else v for k, v in
                {k: v.clone() for k, v in good["state_dict"].items()}.items()}  # fmt: skip
    with pytest.raises(ValueError, match="its weights are not finite"):
        ppo.train(tiny(resume=str(with_part(state_dict=diverged))))
    misshapen = {**good["optimizer"], "state": {k: {**v, "exp_avg": v["exp_avg"][..., :1]}
                                                for k, v in good["optimizer"]["state"].items()}}  # fmt: skip
    with pytest.raises(ValueError, match="optimizer state is not Adam's .*exp_avg of shape"):
        ppo.train(tiny(resume=str(with_part(optimizer=misshapen))))
    torn = {**good["optimizer"], "param_groups": "x"}
    with pytest.raises(ValueError, match="its optimizer state is not Adam's for this network"):
        ppo.train(tiny(resume=str(with_part(optimizer=torn))))
    assert cli.main(["train", "smb", "--backend", "cpu", "--envs", "4", "--num-steps", "16",
                     "--steps", "64", "--resume", str(path)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "optimizer state is not Adam's" in err and "Traceback" not in err


def test_an_agent_of_another_env_is_refused_before_any_step_or_file(tmp_path, capsys, smb_rom):
    tetris_like = ppo.Agent((2048,), 12, "mlp", 16)  # SMB's "simple" set has 7 actions
    args = tiny().resolved("cpu")
    out = tmp_path / "x.gif"
    with pytest.raises(ValueError, match=r"picks from 12 actions, and this env's are \(2048,\) and 7"):
        ppo.record(tetris_like, args, out)
    assert not out.exists()
    with pytest.raises(ValueError, match="picks from 12 actions"):
        ppo.evaluate(tetris_like, args, num_envs=2)
    for bad in (0, -5, 2.5):
        with pytest.raises(ValueError, match="max_steps must be a positive int"):
            ppo.evaluate(ppo.Agent((2048,), 7, "mlp", 16), args, max_steps=bad)
    path = tmp_path / "agent.pt"
    ppo.save(ppo.Agent((2048,), 7, "mlp", 16), path, args)
    with pytest.raises(SystemExit) as e:  # the parser's refusal, before the agent is loaded
        cli.main(["record", "--agent", str(path), "--out", str(out), "--seed", "-1"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--seed: must be an integer >= 0" in err and "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("weight", ['"x"', "null", '{"a": 1}', "[1, 2]", "NaN", "Infinity", "true"])
def test_a_shaped_reward_weight_that_is_not_a_finite_number_is_one_error_line(weight, capsys, smb_rom):
    argv = ["train", "smb", "--backend", "cpu", "--envs", "2", "--num-steps", "8", "--steps", "16",
            "--reward", f'{{"death": {weight}}}']  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "shaped reward 'death' must be a finite number" in err and "Traceback" not in err


def test_the_step_budget_left_unset_is_the_backends_own():
    # The main job (`make run`) trains with nesle train's defaults: minutes on either backend.
    assert ppo.Args().resolved("cpu").total_steps == 1_500_000
    assert ppo.Args().resolved("cuda").total_steps == 80_000_000
    assert ppo.Args(total_steps=96).resolved("cuda").total_steps == 96
    ppo.check(ppo.Args())  # None is a setting, not an error


def test_the_gray84_network_trains_on_stacked_frames(smb_rom):
    r = ppo.train(tiny(obs="gray84", num_envs=2, total_steps=64))
    assert r.args.frame_stack == 4 and r.agent.network == "cnn"
    assert r.agent.obs_shape == (4, 84, 84)
    assert r.steps == 64 and all(np.isfinite(row["value_loss"]) for row in r.log)


def test_truncated_episodes_are_counted_as_ended_and_bootstrapped(smb_rom):
    r = ppo.train(tiny(max_episode_steps=5, num_steps=10, total_steps=40))
    # 4 envs x 10 steps each with a limit of 5 steps: at least 8 ends, every one at length <= 5.
    ended = sum(row["episodes"] for row in r.log)
    assert ended >= 8
    assert all(row["episode_length"] <= 5 for row in r.log if row["episodes"])


@pytest.mark.parametrize("obs", ["ram", "gray84"])
def test_the_device_steps_torch_path_trains_exactly_as_the_cpu_backend(monkeypatch, obs, smb_rom):
    """The CUDA backend's Python step (tensors in and out, final_obs as one tensor, infos of
    tensors) through test_device_step's stand-in on CPU tensors: the same run, bit for bit, as
    on the CPU backend's NumPy, truncations and their bootstrap included."""
    from .test_device_step import _device_env

    n = 6
    args = tiny(obs=obs, num_envs=n, num_steps=16, total_steps=n * 16 * 3,
                max_episode_steps=20).resolved("cpu")  # fmt: skip
    kwargs = dict(obs=obs, frame_stack=args.frame_stack)
    runs = []
    for env in (nesle.make_vec("smb", n, backend="cpu", seed=11, max_episode_steps=20, **kwargs),
                _device_env(monkeypatch, "smb", n, **kwargs)):  # fmt: skip
        torch.manual_seed(0)
        runs.append(ppo._train(args, env, None))
    cpu, dev = runs
    assert isinstance(env.reset(seed=0)[0], torch.Tensor)  # the stand-in speaks torch
    assert sum(row["episodes"] for row in cpu.log) >= n  # every env truncated at 20 steps

    def learned(r):
        return [{k: v for k, v in row.items() if "second" not in k} for row in r.log]

    assert learned(cpu) == learned(dev)
    for (name, wa), wb in zip(cpu.agent.state_dict().items(), dev.agent.state_dict().values()):
        assert torch.equal(wa, wb), name


@pytest.mark.gpu
def test_ppo_runs_on_the_gpu_with_the_rollout_on_the_device_and_repeats_itself(smb_rom):
    args = ppo.Args(game="smb", backend="cuda", num_envs=256, num_steps=16, total_steps=256 * 16 * 3,
                    max_episode_steps=40, seed=5)  # fmt: skip
    torch.cuda.manual_seed(11)
    expected = torch.rand(4, device="cuda")
    torch.cuda.manual_seed(11)
    a, b = ppo.train(args), ppo.train(args)
    # The runs seed the GPU's generator inside a fork: the caller's stream goes on untouched.
    assert torch.equal(torch.rand(4, device="cuda"), expected)
    assert a.args.backend == "cuda"
    assert next(a.agent.parameters()).device.type == "cuda"
    assert a.steps == 256 * 16 * 3 and a.steps_per_second > 0
    assert sum(row["episodes"] for row in a.log) >= 256  # every env truncated at 40 steps
    for (name, wa), wb in zip(a.agent.state_dict().items(), b.agent.state_dict().values()):
        assert torch.equal(wa, wb), name


@pytest.mark.gpu
def test_ppo_on_the_gpu_trains_gray84_and_evaluates_and_records_on_the_device(tmp_path, smb_rom):
    run = ppo.train(ppo.Args(game="smb", backend="cuda", obs="gray84", num_envs=64, num_steps=16,
                             total_steps=64 * 16 * 2, seed=1))  # fmt: skip
    assert run.agent.obs_shape == (4, 84, 84) and run.steps == 64 * 16 * 2
    ev = ppo.evaluate(run.agent, run.args, num_envs=8, max_steps=400)
    assert ev["episodes"] + ev["unfinished"] == 8
    r = ppo.record(run.agent, run.args, tmp_path / "gpu.gif", max_steps=50)
    assert r["episodes"] + r["unfinished"] == 1 and (tmp_path / "gpu.gif").stat().st_size > 0


def test_the_gpu_memory_estimate_is_the_agents_own_and_fits_the_e2e_protocol_on_an_80_gb_card():
    """gpu_memory_need (what refuses a run too large for the GPU) is measured from the agent's
    forward: the E2E protocol's largest run (65,536 envs x 64 steps, the MLP over RAM) fits the
    ~70 GiB an 80 GB card leaves free, while the estimate still covers the rollout and the
    scaled input the first layer keeps; a CNN sample costs far more than an MLP one."""
    mlp, cnn = ppo.Agent((1, 2048), 7, "mlp"), ppo.Agent((4, 84, 84), 7, "cnn")
    args = ppo.Args(game="smb", num_envs=65_536, num_steps=64, num_minibatches=8)
    need = ppo.gpu_memory_need(args, mlp)
    samples = 65_536 * 64
    assert need < 0.9 * 70 * 2**30
    assert need > samples * 2048 + samples // 8 * 4 * 2048
    # A sample holds at least the cast and the scaled input and the first layer's kept input.
    assert ppo._sample_bytes(mlp) >= 3 * 4 * 2048
    assert ppo._sample_bytes(cnn) > 10 * ppo._sample_bytes(mlp)
    outside = ppo._sample_bytes(mlp)
    with torch.no_grad():  # a caller's context: the forward still counts what training keeps
        assert ppo._sample_bytes(mlp) == outside
    # Linear in the minibatch: twice the minibatches, half the activations.
    halved = ppo.gpu_memory_need(dataclasses.replace(args, num_minibatches=16), mlp)
    rollout = samples * (2048 + 5 * 4 + 8)
    assert need - rollout == pytest.approx(2 * (halved - rollout), rel=1e-6)


def test_the_gpu_memory_estimate_covers_the_measured_peaks_and_lets_runs_that_fit_run():
    """The runs measured on an 80 GB card (docs/benchmarks/gpu-2026-12-05-o-lands.json, torch's
    peaks over two updates): the estimate covers each run's reserved peak, and a run whose peak
    fits is not refused (the check asks for 90% of what is free)."""
    from pathlib import Path

    record = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "gpu-2026-12-05-o-lands.json"
    rows = json.loads(record.read_text())["memory"]["rows"]
    assert {r["obs"] for r in rows} == {"ram", "gray84"}
    agents = {"ram": ppo.Agent((1, 2048), 7, "mlp"), "gray84": ppo.Agent((4, 84, 84), 7, "cnn")}
    for r in rows:
        args = ppo.Args(game="smb", obs=r["obs"], num_envs=r["envs"], num_steps=r["num_steps"])
        need = ppo.gpu_memory_need(args, agents[r["obs"]]) / 2**30
        assert need >= r["peak_reserved_gib"], r
        assert need < 0.9 * r["free_before_gib"], r


@pytest.mark.gpu
def test_ppo_asks_for_fewer_envs_when_its_rollout_cannot_fit_the_gpu(smb_rom):
    free, _ = torch.cuda.mem_get_info()
    # Enough steps a rollout that 16 envs of 84x84x4 frames overflow the free memory.
    steps = int(free // (16 * 4 * 84 * 84)) + 1
    with pytest.raises(ValueError, match="lower num_envs"):
        ppo.train(ppo.Args(game="smb", backend="cuda", obs="gray84", num_envs=16, num_steps=steps,
                           total_steps=16 * steps))  # fmt: skip
    # The GPU is still usable after the refusal.
    run = ppo.train(ppo.Args(game="smb", backend="cuda", num_envs=16, num_steps=8, total_steps=128))
    assert run.steps == 128


def test_the_e2e_bench_runs_its_three_rows_and_writes_their_figures(tmp_path, smb_rom):
    """bench/ppo_e2e.py at a tiny budget: the env alone, nesle.ppo and SB3's PPO, one round."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "ppo_e2e.py"
    out = tmp_path / "e2e.json"
    done = subprocess.run([sys.executable, str(script), "--envs", "2", "--steps", "128", "--rounds", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert set(result["median"]) == {"env", "nesle.ppo", "sb3"}
    assert all(v > 0 for v in result["median"].values())
    assert result["backend"] == "cpu" and result["envs"] == 2


def test_the_sb3_alignment_bench_trains_both_and_scores_them_alike(tmp_path, smb_rom):
    """bench/ppo_vs_sb3.py at a tiny budget: both trainers run and are scored by the same
    evaluation episodes (2 here, 32 in the bench)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "ppo_vs_sb3.py"
    out = tmp_path / "vs.json"
    done = subprocess.run([sys.executable, str(script), "--steps", "256", "--envs", "2", "--eval-envs", "2",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"nesle.ppo", "sb3"}
    for r in results.values():
        assert r["episodes"] == 2 and r["episode_x_pos"] > 40

#!/usr/bin/env python3
"""What nesle.ppo learns beside Stable-Baselines3's PPO with the same settings, on the same env
and budget: an alignment check of the trainer against a reference implementation.

Both train on ``nesle.make_vec("smb", ...)`` (CPU backend, RAM observations, frameskip 4, SMB's
simple actions, gym-super-mario-bros' reward, an episode a life) with nesle.ppo's defaults, which
``sb3_aligned.py`` gives SB3 (what differs is SB3's: separate policy and value networks, nesle.ppo
sharing its trunk, and its own RNG streams). Then each agent plays one episode in each of 32 envs
from the same starts (sampled actions; ``nesle.ppo.evaluate``'s protocol), scored by Mario's x
where it ends, the return and the episodes that cleared World 1-1.

    python bench/ppo_vs_sb3.py --steps 1500000 --envs 32 --out out.json [--only sb3|nesle] [--eval-envs 32]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from nesle._device import quiet_openmp

quiet_openmp()  # before torch loads OpenMP, for every row (nesle.ppo and nesle.sb3 do the same)
import torch  # noqa: E402

import sb3_aligned  # beside this script
from nesle import ppo

EVAL_SEED, EVAL_MAX_STEPS = 12345, 3000


def train_nesle(args: argparse.Namespace) -> tuple[Any, float]:
    r = ppo.train(ppo.Args(game="smb", backend="cpu", num_envs=args.envs, num_steps=64,
                           total_steps=args.steps, seed=args.seed))  # fmt: skip
    agent = r.agent

    def act(obs: np.ndarray, gen: torch.Generator) -> np.ndarray:
        return agent.act(obs, generator=gen).numpy()

    return act, r.seconds


def train_sb3(args: argparse.Namespace) -> tuple[Any, float]:
    model = sb3_aligned.make_ppo(args.envs, "cpu", args.seed)
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    seconds = time.perf_counter() - t0
    model.env.close()
    return sb3_aligned.actor(model), seconds


def evaluate(act: Any, n: int = 32) -> dict[str, float]:
    """One episode in each of ``n`` envs, as nesle.ppo.evaluate plays them."""
    import nesle

    env = nesle.make_vec("smb", n, backend="cpu", obs="ram", seed=EVAL_SEED)
    gen = torch.Generator().manual_seed(EVAL_SEED)
    obs, _ = env.reset(seed=EVAL_SEED)
    ret, length = np.zeros(n), np.zeros(n, int)
    finished = np.zeros(n, bool)
    end: dict[str, np.ndarray] = {"x_pos": np.zeros(n), "stage": np.zeros(n)}
    for _ in range(EVAL_MAX_STEPS):
        obs, reward, terminated, truncated, info = env.step(act(obs, gen))
        live = ~finished
        ret[live] += reward[live]
        length[live] += 1
        done = (terminated | truncated) & live
        if done.any():
            for key in end:
                end[key][done] = np.asarray(info["final_info"][key])[done]
        finished |= done
        if finished.all():
            break
    env.close()
    return {"episodes": int(finished.sum()), "episode_return": float(ret[finished].mean()),
            "episode_length": float(length[finished].mean()),
            "episode_x_pos": float(end["x_pos"][finished].mean()),
            "cleared_1_1": int((end["stage"][finished] > 1).sum())}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1_500_000)
    p.add_argument("--envs", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", choices=["nesle", "sb3"])
    p.add_argument("--eval-envs", type=int, default=32, help="evaluation episodes (default 32)")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    runs = {"nesle.ppo": train_nesle, "sb3": train_sb3}
    if args.only:
        runs = {k: v for k, v in runs.items() if k.startswith(args.only)}
    results: dict[str, Any] = {}
    for name, train in runs.items():
        act, seconds = train(args)
        results[name] = {"train_seconds": round(seconds, 1),
                         "env_steps_per_second": round(args.steps / seconds),
                         **evaluate(act, args.eval_envs)}  # fmt: skip
        print(name, results[name], flush=True)
    if args.out:
        args.out.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "command": "python " + " ".join(sys.argv),
            "machine": {"cpu": platform.processor() or platform.machine(),
                        "logical_cpus": os.cpu_count(), "torch": torch.__version__},
            "evaluation": f"{args.eval_envs} envs, one episode each, sampled actions, seed {EVAL_SEED}",
            "results": results,
        }, indent=1) + "\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

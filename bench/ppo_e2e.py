#!/usr/bin/env python3
"""The E2E protocol (docs/benchmarks/README.md, Protocols): PPO training (rollout and learning),
env-steps per second of wall time, on Super Mario Bros. from World 1-1 with RAM observations,
frameskip 4.

Three rows, run in turn in every round, on one backend and one env count:

- ``env``: the env alone (``nesle.make_vec``, obs="ram"), stepped with uniformly random actions
  drawn by torch on the env's device: what the trainer could reach if learning were free;
- ``nesle.ppo``: ``nesle.ppo.train`` (an MLP of two 256-wide layers, 64 steps a rollout, 8
  minibatches, 4 epochs);
- ``sb3``: Stable-Baselines3's PPO set up as nesle.ppo's defaults are (``sb3_aligned.py``: the
  same layers, rollout, minibatches, epochs, annealed rate, clipping, reward scaling and /255)
  on ``nesle.sb3.NesleVecEnv``.

On CUDA both trainers' matrix products run in TF32, nesle.ppo's default (``--no-tf32``: FP32).
The JSON records each round's figure; the table gives the median. Ratios within one run are the
figure to read on a shared machine (absolute times on 2 shared cores are noise).

    python bench/ppo_e2e.py --backend cpu --envs 32 --steps 40960 --rounds 3 --out out.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nesle._device import quiet_openmp

quiet_openmp()  # before torch loads OpenMP, for every row (nesle.ppo and nesle.sb3 do the same)
import torch  # noqa: E402

import nesle
import sb3_aligned  # beside this script
from nesle import ppo


def run_env(args: argparse.Namespace) -> float:
    env = nesle.make_vec("smb", args.envs, backend=args.backend, obs="ram", seed=0)
    device = torch.device("cuda") if env.backend == "cuda" else torch.device("cpu")
    gen = torch.Generator(device).manual_seed(0)
    env.reset(seed=0)
    steps = args.steps // args.envs
    t0 = time.perf_counter()
    for _ in range(steps):
        a = torch.randint(0, env.single_action_space.n, (args.envs,), device=device, generator=gen)
        env.step(a if env.backend == "cuda" else a.numpy())
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    env.close()
    return steps * args.envs / seconds


def run_nesle_ppo(args: argparse.Namespace) -> float:
    r = ppo.train(ppo.Args(game="smb", backend=args.backend, num_envs=args.envs,
                           total_steps=args.steps, num_steps=64, seed=0, tf32=args.tf32))  # fmt: skip
    return r.steps_per_second


def run_sb3(args: argparse.Namespace) -> float:
    model = sb3_aligned.make_ppo(args.envs, args.backend, seed=0)
    batch = args.envs * sb3_aligned.NUM_STEPS
    steps = -(-args.steps // batch) * batch  # whole rollouts, as nesle.ppo runs them
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps)
    seconds = time.perf_counter() - t0
    model.env.close()
    return steps / seconds


ROWS = {"env": run_env, "nesle.ppo": run_nesle_ppo, "sb3": run_sb3}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--envs", type=int, default=32)
    p.add_argument("--steps", type=int, default=40_960, help="env steps a row a round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", default=",".join(ROWS), help=f"rows to run (default {','.join(ROWS)})")
    p.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True,
                   help="CUDA matrix products in TF32 (nesle.ppo's default) for every row; --no-tf32: FP32")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    # SB3 runs with torch's global setting; nesle.ppo sets its own for the run (Args.tf32).
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    rows = args.rows.split(",")
    figures: dict[str, list[float]] = {r: [] for r in rows}
    for k in range(args.rounds):
        for name in rows:
            figures[name].append(ROWS[name](args))
            print(f"round {k + 1} {name:<10} {figures[name][-1]:>12,.0f} env-steps/s", flush=True)
    median = {name: statistics.median(v) for name, v in figures.items()}
    print(f"\n{'row':<10} {'median env-steps/s':>20} {'of env':>8}")
    for name, v in median.items():
        ratio = v / median["env"] if "env" in median else float("nan")
        print(f"{name:<10} {v:>20,.0f} {ratio:>8.2f}")
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent).stdout.strip()  # fmt: skip
        args.out.write_text(json.dumps({
            "date": datetime.date.today().isoformat(),
            "command": "python " + " ".join(sys.argv),
            "commit": commit,
            "machine": {"cpu": platform.processor() or platform.machine(),
                        "logical_cpus": os.cpu_count(), "python": platform.python_version(),
                        "torch": torch.__version__,
                        "gpu": torch.cuda.get_device_name() if args.backend == "cuda" else None},
            "protocol": "E2E (docs/benchmarks/README.md, Protocols): SMB World 1-1, RAM observations, "
                        "frameskip 4; see bench/ppo_e2e.py for the three rows",
            "backend": args.backend, "envs": args.envs, "steps_per_row": args.steps, "tf32": args.tf32,
            "rounds": figures, "median": median,
        }, indent=1) + "\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

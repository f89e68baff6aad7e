#!/usr/bin/env python3
"""What ``skip_cutscenes=True`` costs: Super Mario Bros. through ``nesle.make_vec`` with protocol
B's actions (each env draws one of SIMPLE_MOVEMENT's 7 every step from a seeded generator; World
1-1's start; frameskip 4; 30 warm-up steps, then timed steps, the device synchronized after
each), by default ``done="game_over"`` so that deaths play out as in protocol B, with the skip
off, then on. Prints a JSON line per run (env-steps/s, the skipped frames' launches a step),
then one object with all of them.

    python3 bench/skip_cutscenes.py [--backend cuda] [--envs 4096 16384] [--steps 200]
                                    [--done life]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

import nesle
from nesle import vector


def run(backend: str, n: int, steps: int, warmup: int, skip: bool, done: str) -> dict:
    env = nesle.make_vec("smb", n, backend=backend, obs="ram", done=done, seed=0,
                         skip_cutscenes=skip)  # fmt: skip
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    frames = 0
    real = vector._Consoles.frame

    def counted(self, mask):  # one launch (a batch call) per skipped frame
        nonlocal frames
        frames += 1
        real(self, mask)

    vector._Consoles.frame = counted
    cuda = env.backend == "cuda"
    sync = (lambda: __import__("torch").cuda.synchronize()) if cuda else (lambda: None)
    try:
        for _ in range(warmup):
            env.step(rng.integers(0, 7, n))
        sync()
        frames = 0
        t0 = time.perf_counter()
        for _ in range(steps):
            _, _, _, _, info = env.step(rng.integers(0, 7, n))
            sync()
        dt = time.perf_counter() - t0
        lives = int((np.asarray(nesle._device.to_numpy(info["life"])) < 2).sum())
    finally:
        vector._Consoles.frame = real
    env.close()
    return {"skip_cutscenes": skip, "done": done, "envs": n, "steps": steps,
            "seconds": round(dt, 3), "env_steps_per_s": round(n * steps / dt),
            "skipped_frame_launches_per_step": round(frames / steps, 2),
            "envs_with_a_life_lost_at_the_end": lives}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="auto")
    p.add_argument("--envs", type=int, nargs="+", default=[4096, 16384])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--done", default="game_over", help="the env's done option (default "
                   "game_over: deaths play out, as in protocol B; life ends episodes there)")
    a = p.parse_args()
    rows = []
    for n in a.envs:
        for skip in (False, True):
            rows.append(run(a.backend, n, a.steps, a.warmup, skip, a.done))
            print(json.dumps(rows[-1]), flush=True)
    off = {r["envs"]: r["env_steps_per_s"] for r in rows if not r["skip_cutscenes"]}
    ratio = {n: round(r["env_steps_per_s"] / off[n], 3) for r in rows if r["skip_cutscenes"]
             for n in [r["envs"]]}  # fmt: skip
    print(json.dumps({"command": "python3 bench/skip_cutscenes.py " + " ".join(
        [f"--backend {a.backend}", "--envs", *map(str, a.envs), f"--steps {a.steps}",
         f"--done {a.done}"]),
        "machine": platform.node(), "rows": rows, "on_over_off": ratio}))  # fmt: skip


if __name__ == "__main__":
    main()

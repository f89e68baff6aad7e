#!/usr/bin/env python3
"""Where ``skip_cutscenes=True``'s time goes on the CUDA backend: Super Mario Bros. through
``nesle.make_vec`` as ``bench/skip_cutscenes.py`` runs it (protocol B's actions, World 1-1,
frameskip 4, ``done="game_over"``), 30 warm-up steps, then 10 steps with each of the skip's batch
calls (a RAM view, a RAM write, a masked frame) timed alone, the device synchronized before and
after each, so their sum shows what the skip's host side adds to its frames. Then the same batch
alone: a masked step of ``k`` random envs for 1 frame and for 29 frames in one launch (what a
loop of skipped frames inside one launch could at best save), a RAM write and a RAM view with the
skip's busy test. Prints one JSON object. Syncing after every call serializes what the env
overlaps, so the sum is an upper bound on the skip's time, not its share of a step.

    python3 bench/skip_profile.py 65536
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from typing import Any

import numpy as np
import torch

import nesle
from nesle import vector
from nesle.games import smb


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("envs", type=int)
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()
    n = args.envs
    env = nesle.make_vec("smb", n, backend="cuda", obs="ram", done="game_over", seed=0,
                         skip_cutscenes=True)  # fmt: skip
    batch = env._batch

    def sync() -> None:
        batch.synchronize()
        torch.cuda.synchronize()

    seconds: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    sizes: list[int] = []

    def timed(name: str, fn: Any) -> Any:
        def call(*a: Any) -> Any:
            sync()
            t = time.perf_counter()
            out = fn(*a)
            sync()
            seconds[name] += time.perf_counter() - t
            calls[name] += 1
            return out
        return call

    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        env.step(rng.integers(0, 7, n))
    sync()
    real = {name: getattr(vector._Consoles, name) for name in ("ram", "write", "frame")}
    real_skip = vector.NesleVectorEnv._skip_cutscenes
    frame = timed("frame", real["frame"])

    def counted_frame(self: Any, mask: Any) -> None:
        sizes.append(int(np.asarray(nesle._device.to_numpy(mask)).sum()))
        frame(self, mask)

    vector._Consoles.ram = timed("ram", real["ram"])
    vector._Consoles.write = timed("write", real["write"])
    vector._Consoles.frame = counted_frame
    vector.NesleVectorEnv._skip_cutscenes = timed("skip_total", real_skip)
    try:
        t0 = time.perf_counter()
        for _ in range(args.steps):
            env.step(rng.integers(0, 7, n))
        sync()
        step_s = (time.perf_counter() - t0) / args.steps
    finally:
        for name, fn in real.items():
            setattr(vector._Consoles, name, fn)
        vector.NesleVectorEnv._skip_cutscenes = real_skip

    def mean_ms(fn: Any, reps: int = 5) -> float:
        fn()
        sync()
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        return round(1e3 * (time.perf_counter() - t) / reps, 3)

    noop = np.zeros(n, np.uint8)
    alone: dict[str, float] = {}
    for k in (32, 1024, 8192):
        mask = np.zeros(n, bool)
        mask[rng.choice(n, min(k, n), replace=False)] = True
        for frames in (1, 29):
            alone[f"step_{k}_envs_{frames}_frames_ms"] = mean_ms(
                lambda m=mask, f=frames: batch.step(noop, f, mask=m))
    first = np.zeros(n, bool)
    first[:1024] = True
    alone["write_ram_1024_envs_ms"] = mean_ms(lambda: batch.write_ram(smb.ADDR["prelevel_timer"], 0, first))

    def busy() -> None:
        ram = torch.from_dlpack(batch.ram_tensor())
        bool((smb.is_busy(ram) | smb.is_world_over(ram)).any())

    alone["ram_view_and_busy_test_ms"] = mean_ms(busy)
    env.close()
    print(json.dumps({
        "command": f"python3 bench/skip_profile.py {n} --steps {args.steps}",
        "envs": n, "steps": args.steps, "step_ms": round(1e3 * step_s, 2),
        "skip_calls_ms_per_step": {k: round(1e3 * v / args.steps, 2) for k, v in seconds.items()},
        "skip_calls_per_step": {k: c / args.steps for k, c in calls.items()},
        "envs_per_skipped_frame": {"mean": round(float(np.mean(sizes)), 1) if sizes else 0,
                                   "max": max(sizes, default=0), "min": min(sizes, default=0)},
        "alone": alone,
        "device": torch.cuda.get_device_name(),
    }))  # fmt: skip


if __name__ == "__main__":
    main()

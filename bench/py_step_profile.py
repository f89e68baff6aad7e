"""Where the Python environment's step spends its time: `make_vec` as `nesle bench --env` runs it
(SMB from World 1-1, protocol B's random SIMPLE_MOVEMENT actions, episodes that never end),
profiled with torch.profiler over a few steps after a warm-up.

Prints the wall time a step, the operators with the most CPU time of their own and, on the CUDA
backend, the most GPU time, and the calls that make the host wait for the GPU (reads of a
device value, synchronizations): each of those serializes the host's launches with the GPU's
work. docs/benchmarks/README.md (2026-12-04) found the layer at +46.6% time a step over the raw
batch at 65,536 envs with B + gray; this says where that goes.

    python bench/py_step_profile.py [--backend cuda] [--envs 65536] [--obs gray84|ram]
                                    [--warmup 3] [--steps 5] [--rows 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nesle
from nesle.bench import _never
from nesle.actions import SIMPLE_MOVEMENT

# The profiler's names for calls that wait for the device (the host reads a value or syncs).
WAITS = ("aten::item", "aten::_local_scalar_dense", "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpy")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="cuda", choices=("cpu", "cuda"))
    p.add_argument("--envs", type=int, default=65536)
    p.add_argument("--obs", default="gray84", choices=("gray84", "ram"))
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rows", type=int, default=20)
    a = p.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    venv = nesle.make_vec(
        "smb", a.envs, backend=a.backend, frameskip=4, obs=a.obs, action_space="simple",
        start_states="1-1", done=_never, seed=0,
    )  # fmt: skip
    cuda = venv.backend == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    venv.reset(seed=0)
    rng = np.random.default_rng(0)

    def step() -> None:
        venv.step(rng.integers(0, len(SIMPLE_MOVEMENT), a.envs))

    for _ in range(a.warmup):
        step()
    sync()
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync()
    wall = (time.perf_counter() - t) / a.steps
    print(f"{a.envs} envs, {a.backend}, obs={a.obs}: {wall * 1e3:.2f} ms a step ({a.envs / wall:,.0f} env-steps/s)")

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(a.steps):
            step()
        sync()
    events = prof.key_averages()
    print(events.table(sort_by="self_cpu_time_total", row_limit=a.rows))
    if cuda:
        # The GPU time's column: named for the device since torch 2.4, for CUDA before.
        for key in ("self_device_time_total", "self_cuda_time_total"):
            try:
                print(events.table(sort_by=key, row_limit=a.rows))
                break
            except (AttributeError, KeyError, ValueError):
                continue
    waits = [e for e in events if any(e.key.startswith(w) for w in WAITS)]
    print("calls that wait for the device, a step:")
    for e in sorted(waits, key=lambda e: -e.cpu_time_total):
        print(f"  {e.key:<40} {e.count / a.steps:6.1f} calls, {e.cpu_time_total / a.steps / 1e3:8.2f} ms")
    if not waits:
        print("  none")
    venv.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

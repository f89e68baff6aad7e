#!/usr/bin/env python3
"""Long steps of diverging envs on the GPU (N envs, Start for 3 steps, then random buttons,
FRAMES frames a step), printing the time each step ends at: the inputs on which #187's first
barrier hung (kernel-notes "The pair hangs"). With --check, the CPU backend steps the same envs
and each step's RAM and pictures must be its own. Run it under `timeout`; NESLE_BLOCK,
NESLE_KERNEL_SOURCE and NESLE_KERNEL_OPTIONS pick the build and the block size.
tests/python/test_cuda.py runs it with --check.

    timeout 25 python3 bench/long_steps.py ROM N FRAMES [--no-render] [--check]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import nesle
from nesle import _native


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rom")
    p.add_argument("envs", type=int)
    p.add_argument("frames", type=int)
    p.add_argument("--no-render", action="store_true", help="no pictures (no line renderer)")
    p.add_argument("--check", action="store_true", help="compare with the CPU backend every step")
    args = p.parse_args()
    rom = open(args.rom, "rb").read()
    n, render = args.envs, not args.no_render
    gpu = _native.CudaBatch(rom, n, render=render)
    cpu = nesle.CpuBatch(rom, n) if args.check else None
    rng = np.random.default_rng(9)
    t0 = time.time()
    for t in range(8):
        a = np.full(n, nesle.BUTTON_START, np.uint8) if t < 3 else rng.integers(0, 256, n, dtype=np.uint8)
        gpu.step(a, args.frames)
        ram = gpu.ram()  # waits for the step
        print(f"step {t} at {time.time() - t0:.2f}s", flush=True)
        if cpu is not None:
            cpu.step(a, args.frames)
            np.testing.assert_array_equal(ram, cpu.ram(), err_msg=f"RAM, step {t}")
            if render:
                np.testing.assert_array_equal(gpu.pixels(), cpu.pixels(), err_msg=f"pixels, step {t}")
    print(f"done in {time.time() - t0:.2f}s" + (", the CPU's results" if cpu is not None else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

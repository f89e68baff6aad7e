#!/usr/bin/env python3
"""The steps of tests/python/test_cuda.py's gray84 test alone (N envs, Start for 3 steps, then
random buttons, FRAMES frames a step), printing the time each step ends at: the inputs on which
#187's first barrier hung (kernel-notes "The pair hangs"). Run it under `timeout`; NESLE_BLOCK,
NESLE_KERNEL_SOURCE and NESLE_KERNEL_OPTIONS pick the build and the block size.

    timeout 25 python3 bench/long_steps.py ROM N FRAMES [RENDER: 1 (default) or 0]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from nesle import _native


def main() -> int:
    rom = open(sys.argv[1], "rb").read()
    n, frames = int(sys.argv[2]), int(sys.argv[3])
    render = len(sys.argv) < 5 or sys.argv[4] == "1"
    gpu = _native.CudaBatch(rom, n, render=render)
    rng = np.random.default_rng(9)
    t0 = time.time()
    for t in range(8):
        gpu.step(rng.integers(0, 256, n, dtype=np.uint8) if t > 2 else np.full(n, 8, np.uint8), frames)
        gpu.pixels() if render else gpu.ram()  # waits for the step
        print(f"step {t} at {time.time() - t0:.2f}s", flush=True)
    print(f"done in {time.time() - t0:.2f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

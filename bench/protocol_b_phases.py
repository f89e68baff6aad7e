#!/usr/bin/env python3
"""What the envs of protocol B are doing, step by step, and what a step costs then.

Protocol B (docs/benchmarks/README.md, Protocols: SMB from World 1-1, frameskip 4, a random
SIMPLE_MOVEMENT mask per env and step, no resets) on the CPU backend, the same start and action
draw as ``nesle bench``.
Every ``--every`` steps it prints the wall time of that step and, from the RAM, how many envs are
in play (GameEngineSubroutine $000E = 8), in the death sequence ($0E = $0B), their lives ($075A)
and the mean level page ($006D). A GPU warp runs 32 of these envs together: the mix of phases is
what makes protocol B slower late in a run than early (docs/benchmarks/README.md).

    python bench/protocol_b_phases.py --envs 128 --steps 230
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nesle
from nesle import roms, start_states
from nesle.actions import SIMPLE_MOVEMENT, button_masks

ENGINE = 0x000E
PLAYING, DYING = 0x08, 0x0B
LIVES = 0x075A
PAGE = 0x006D


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envs", type=int, default=128)
    ap.add_argument("--steps", type=int, default=230)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rom = roms.load("smb")
    batch = nesle.CpuBatch(rom, args.envs)
    batch.restore(start_states.smb(rom, ["1-1"])[0].state)
    batch.set_render(False)
    rng = np.random.default_rng(args.seed)
    masks = button_masks(SIMPLE_MOVEMENT)
    print(f"{'step':>5} {'ms':>7} {'playing':>8} {'dying':>6} {'lost a life':>12} {'page':>5}")
    lives0 = batch.ram()[:, LIVES].copy()
    for t in range(args.steps):
        actions = masks[rng.integers(0, len(masks), size=args.envs)]
        t0 = time.perf_counter()
        batch.step(actions, 4)
        ms = (time.perf_counter() - t0) * 1e3
        if t % args.every == 0 or t == args.steps - 1:
            ram = batch.ram()
            print(
                f"{t:>5} {ms:>7.1f} {np.mean(ram[:, ENGINE] == PLAYING):>8.2f} {np.mean(ram[:, ENGINE] == DYING):>6.2f}"
                f" {np.mean(ram[:, LIVES] < lives0):>12.2f} {np.mean(ram[:, PAGE]):>5.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

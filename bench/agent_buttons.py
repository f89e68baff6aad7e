#!/usr/bin/env python3
"""The buttons a trained agent presses, for the warp model (crates/nes-core/examples/warp_model.rs,
``WARP_START`` and ``WARP_BUTTONS``): how far real training's envs diverge, beside protocol B's
random actions.

N envs of Super Mario Bros. on the CPU backend from nesle's World 1-1 start, the agent's sampled
actions (seeded), frameskip 4, for STEPS steps. Writes the start state (nes-core's save state,
``START``) and the buttons, one byte per env and step, step-major (``BUTTONS``). An episode
ends as ``--done`` says (default ``game_over``) and the env restarts it from the start state;
``--resets`` writes where (one byte per env and step, 1 where the env restarted after that
step), for the model's ``WARP_RESETS``. Without it the replay is the agent's own trajectory only
while no episode ended: the script reports how many did.

    python bench/agent_buttons.py runs/smb/agent.pt --envs 2048 --steps 201 \\
        --start /tmp/wm-start.bin --buttons /tmp/wm-agent-buttons.bin
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import nesle
from nesle import ppo


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("agent", help="an agent.pt from nesle train")
    p.add_argument("--envs", type=int, default=2048)
    p.add_argument("--steps", type=int, default=201, help="steps 0..STEPS-1 (the model's last step + 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", required=True, help="where to write the start state")
    p.add_argument("--buttons", required=True, help="where to write the buttons")
    p.add_argument("--done", default="game_over", help="when an episode ends (SMB: life, stage, game_over)")
    p.add_argument("--resets", help="where to write the steps after which each env restarted")
    args = p.parse_args()

    env = nesle.make_vec("smb", args.envs, backend="cpu", obs="ram", done=args.done, seed=args.seed)
    obs, _ = env.reset(seed=args.seed)
    starts = {env.save_state(i).console for i in range(args.envs)}
    if len(starts) != 1:
        raise SystemExit(f"the envs start from {len(starts)} different states; the model takes one")
    with open(args.start, "wb") as f:
        f.write(starts.pop())
    agent = ppo.load(args.agent)
    generator = torch.Generator().manual_seed(args.seed)
    masks = np.asarray(env.button_masks, dtype=np.uint8)
    buttons = np.zeros((args.steps, args.envs), np.uint8)
    resets = np.zeros((args.steps, args.envs), np.uint8)
    ended = 0
    t0 = time.perf_counter()
    for step in range(args.steps):
        action = agent.act(torch.as_tensor(obs), generator=generator).numpy()
        buttons[step] = masks[action]
        obs, _, terminated, truncated, _ = env.step(action)
        resets[step] = terminated | truncated
        ended += int(resets[step].sum())
    buttons.tofile(args.buttons)
    if args.resets:
        resets.tofile(args.resets)
    print(f"{args.steps} steps x {args.envs} envs in {time.perf_counter() - t0:.0f} s; "
          f"episodes ended (and restarted by the env): {ended}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

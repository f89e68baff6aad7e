#!/usr/bin/env python3
"""How CPU throughput grows with cores: nesle's CPU backend next to nes-py and stable-retro run
one process per core, in one run on one machine.

Protocol B (docs/benchmarks/README.md, Protocols: Super Mario Bros. from World 1-1, frameskip 4,
one of the 7 SIMPLE_MOVEMENT masks per step from a seeded generator, no resets, no picture asked
for), at
``--workers`` = 1, 2, ... cores:

- ``nesle``: one ``nesle._native.CpuBatch`` of ``--envs-per-worker`` x workers consoles, its
  thread pool limited to ``workers`` threads (``RAYON_NUM_THREADS``, set in a fresh process),
  through ``nesle.bench.run`` (the backend synchronised every step);
- ``nes-py``, ``stable-retro``: ``workers`` processes, each running one emulator exactly as
  bench/cpu_peers.py does (boot untimed, then ``--steps`` timed steps); the throughput is the sum
  of the processes' own rates (their timed windows overlap: boot takes ~200 of ~1,200+ frames).

Rounds are interleaved (every emulator at every worker count once per round); the table gives
the best round. Needs the peers venv of bench/cpu_peers.py with nesle installed in it too, e.g.::

    /tmp/peers-venv/bin/pip install -e .   (or the built wheel)
    /tmp/peers-venv/bin/python bench/cpu_scaling.py --workers 1,2 --steps 300 --rounds 3
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_peers  # noqa: E402  (same folder)

REPO = Path(__file__).resolve().parent.parent
PEERS = {"nes-py": cpu_peers.NesPy, "stable-retro": cpu_peers.StableRetro}

NESLE_CHILD = """
import json, sys
from nesle import bench
row = bench.run("B", int(sys.argv[1]), warmup=int(sys.argv[2]), steps=int(sys.argv[3]),
                seed=int(sys.argv[4]), rom=open(sys.argv[5], "rb").read())
print(json.dumps({"env_steps_per_s": row.env_steps_per_s, "seconds": row.seconds}))
"""


def nesle_rate(workers: int, envs: int, steps: int, seed: int, rom: Path) -> float:
    env = {**os.environ, "RAYON_NUM_THREADS": str(workers)}
    out = subprocess.run(
        [sys.executable, "-c", NESLE_CHILD, str(envs), "5", str(steps), str(seed), str(rom)],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])["env_steps_per_s"]


def _peer_worker(name: str, rom: str, actions: np.ndarray, q: mp.Queue) -> None:
    em = PEERS[name](Path(rom))
    dt, _ = em.run(actions, "none")
    q.put(len(actions) / dt)


def peer_rate(name: str, workers: int, actions: np.ndarray, rom: Path) -> float:
    ctx = mp.get_context("fork")
    q: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_peer_worker, args=(name, str(rom), actions, q)) for _ in range(workers)]
    for p in procs:
        p.start()
    rates = [q.get() for _ in procs]
    for p in procs:
        p.join()
    return float(sum(rates))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="1,2", help="core counts, e.g. 1,2,4")
    ap.add_argument("--steps", type=int, default=300, help="timed env steps (x4 frames)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--envs-per-worker", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--emulators", default="nesle,nes-py,stable-retro")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    names = args.emulators.split(",")
    rom = cpu_peers.find_rom()
    rng = np.random.default_rng(args.seed)
    actions = np.array(cpu_peers.SIMPLE_MOVEMENT, np.uint8)[rng.integers(0, 7, args.steps)]
    for name in names:  # import errors early, with the reason
        if name in PEERS:
            PEERS[name](rom)
    runs: dict[str, dict[int, list[float]]] = {n: {w: [] for w in workers} for n in names}
    for r in range(args.rounds):
        for w in workers:
            for name in names:
                if name == "nesle":
                    rate = nesle_rate(w, args.envs_per_worker * w, args.steps, args.seed, rom)
                else:
                    rate = peer_rate(name, w, actions, rom)
                runs[name][w].append(rate)
                print(f"round {r + 1} workers {w} {name}: {rate:,.0f} env-steps/s", flush=True)
    best = {n: {w: max(v) for w, v in per.items()} for n, per in runs.items()}
    print("\n| workers | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for w in workers:
        print(f"| {w} | " + " | ".join(f"{best[n][w]:,.0f}" for n in names) + " |")
    date = datetime.date.today().isoformat()
    out = args.out or REPO / "docs" / "benchmarks" / f"cpu-scaling-{date}.json"
    doc = {
        "command": "bench/cpu_scaling.py " + " ".join(sys.argv[1:]),
        "date": date,
        "machine": {"cpu": cpu_peers.lscpu_model(), "logical_cpus": os.cpu_count()},
        "protocol": "B, no pixels, SMB World 1-1, frameskip 4",
        "envs_per_worker_nesle": args.envs_per_worker,
        "steps": args.steps,
        "env_steps_per_s": {n: {str(w): v for w, v in per.items()} for n, per in runs.items()},
    }
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

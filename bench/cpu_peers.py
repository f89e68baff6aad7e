#!/usr/bin/env python3
"""Single-thread frames/s of nesle and the CPU NES emulators RL uses, side by side, in one run.

Every emulator gets the same protocol (docs/benchmarks/README.md, Protocols, one env):

1. power on; tap Start (5 frames on, 5 off) while Super Mario Bros. shows its title, until World
   1-1 is playable (OperMode $0770 = 1 and OperMode_Task $0772 = 3). Not timed.
2. timed: ``--steps`` env steps of 4 frames (frameskip 4). Protocol A holds RIGHT every step;
   protocol B draws each step one of the 7 SIMPLE_MOVEMENT masks from ``numpy`` seeded with
   ``--seed`` (the same sequence for every emulator). No resets: deaths play out.

Two observation modes: ``none`` (no picture asked for; nesle turns pixel output off, the peers
cannot and still render) and ``rgb`` (a full-size RGB frame fetched as an array every step).

Rounds are interleaved (every emulator once per round) so that load from other processes on a
shared machine hits all of them alike; the table reports the best round (least disturbed) and
the median.

Emulators (each skipped with a reason if it cannot be imported):

- ``nesle`` : nes-core through ``crates/nes-core/examples/fps.rs`` (built here with cargo);
  timing is inside the binary, so no Python in the loop;
- ``nesle-py``: ``nesle._native.CpuBatch`` with one console (Python calls per step, like the peers);
- ``nes-py`` 8.2.1 (C++ core of gym-super-mario-bros; needs numpy<2);
- ``cynes`` 0.1.2;
- ``stable-retro`` (FCEUmm libretro core). Its SuperMarioBros-Nes integration expects another
  dump (rom.sha); the gym-super-mario-bros ROM is copied in as rom.nes and runs regardless.

Setup and run (from the repository root)::

    python3 -m venv /tmp/peers-venv
    /tmp/peers-venv/bin/pip install "numpy<2" nes-py==8.2.1 cynes==0.1.2 stable-retro
    python3 -m nesle roms fetch smb
    /tmp/peers-venv/bin/python bench/cpu_peers.py --steps 500 --rounds 3

Writes docs/benchmarks/cpu-peers-<date>.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OPER_MODE, OPER_TASK = 0x0770, 0x0772
X_PAGE, X_ON_PAGE, LIVES, WORLD, LEVEL = 0x006D, 0x0086, 0x075A, 0x075F, 0x075C
START, RIGHT = 0x08, 0x80
# NOOP, R, R+A, R+B, R+A+B, A, L in nesle's bit order (bit 0 A, 1 B, ..., 6 Left, 7 Right).
SIMPLE_MOVEMENT = [0x00, 0x80, 0x81, 0x82, 0x83, 0x01, 0x40]
FRAMESKIP = 4
BOOT_LIMIT = 600


def find_rom() -> Path:
    for d in [os.environ.get("NESLE_ROM_DIR"), os.environ.get("XDG_CACHE_HOME") and
              os.path.join(os.environ["XDG_CACHE_HOME"], "nesle/roms"),
              os.path.expanduser("~/.cache/nesle/roms")]:
        if d and os.path.isfile(os.path.join(d, "super-mario-bros.nes")):
            return Path(d) / "super-mario-bros.nes"
    sys.exit("super-mario-bros.nes not found: run `python3 -m nesle roms fetch smb`")


def boot(read, press, step1) -> int:
    """The shared boot loop: returns the number of frames it took to reach World 1-1."""
    for f in range(BOOT_LIMIT):
        if read(OPER_MODE) == 1 and read(OPER_TASK) == 3:
            return f
        title = read(OPER_MODE) == 0 and read(OPER_TASK) == 3
        press(START if title and f % 10 < 5 else 0)
        step1()
    raise RuntimeError("did not reach World 1-1")


def summary(read) -> dict:
    return {"x": int(read(X_PAGE)) * 256 + int(read(X_ON_PAGE)), "lives": int(read(LIVES)),
            "oper_mode": int(read(OPER_MODE)), "world": int(read(WORLD)) + 1, "level": int(read(LEVEL)) + 1}


class Nesle:
    """nes-core via the fps example: Rust loop, timing inside the binary."""

    name = "nesle"

    def __init__(self, rom: Path):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "nes-core", "--example", "fps"],
                       cwd=REPO, check=True)
        self.exe = REPO / "target/release/examples/fps"
        self.rom = rom
        self.version = "nes-core " + subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()

    def run(self, actions: np.ndarray, mode: str) -> tuple[float, dict]:
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(actions.astype(np.uint8).tobytes())
            f.flush()
            out = subprocess.run([str(self.exe), str(self.rom), "--steps", str(len(actions)),
                                  "--mode", "none" if mode == "none" else "rgb", "--actions", f.name],
                                 capture_output=True, text=True, check=True).stdout
        r = json.loads(out)
        return r["seconds"], {"x": r["x"], "lives": r["lives"], "oper_mode": r["oper_mode"],
                              "boot_frames": r["boot_frames"]}


class NeslePy:
    """nesle._native.CpuBatch with one console, stepped from Python."""

    name = "nesle-py"

    def __init__(self, rom: Path):
        try:
            import nesle._native as native
        except ImportError:
            sys.path.insert(0, str(REPO / "python"))
            import nesle._native as native
        self.native, self.rom = native, rom.read_bytes()
        self.version = "nesle._native " + native.__version__

    def run(self, actions: np.ndarray, mode: str) -> tuple[float, dict]:
        b = self.native.CpuBatch(self.rom, 1)
        ram = [b.ram()[0]]
        a = np.zeros(1, np.uint8)

        def press(m):
            a[0] = m

        def step1():
            b.step(a, 1)
            ram[0] = b.ram()[0]

        boot_frames = boot(lambda i: ram[0][i], press, step1)
        b.set_render(mode != "none")
        arrs = [np.array([m], np.uint8) for m in range(256)]
        t = time.perf_counter()
        for m in actions:
            b.step(arrs[m], FRAMESKIP)
            if mode == "rgb":
                b.rgb()
        dt = time.perf_counter() - t
        r = b.ram()[0]
        return dt, {**summary(lambda i: r[i]), "boot_frames": boot_frames}


class NesPy:
    """nes-py's NESEnv, driven a frame at a time through its own `_frame_advance` (no gym step)."""

    name = "nes-py"

    def __init__(self, rom: Path):
        import warnings
        warnings.filterwarnings("ignore")
        from importlib.metadata import version
        from nes_py.nes_env import NESEnv
        self.cls, self.rom, self.version = NESEnv, str(rom), "nes-py " + version("nes-py")

    def run(self, actions: np.ndarray, mode: str) -> tuple[float, dict]:
        env = self.cls(self.rom)
        env.reset()
        a = [0]
        boot_frames = boot(lambda i: env.ram[i], lambda m: a.__setitem__(0, m),
                           lambda: env._frame_advance(a[0]))
        t = time.perf_counter()
        for m in actions:
            m = int(m)  # nes-py's controller byte has nesle's bit order
            for _ in range(FRAMESKIP):
                env._frame_advance(m)
            if mode == "rgb":
                env.screen.copy()
        dt = time.perf_counter() - t
        out = {**summary(lambda i: env.ram[i]), "boot_frames": boot_frames}
        env.close()
        return dt, out


def cynes_mask(m: int) -> int:
    """cynes orders the pad bits the other way round: bit 0 Right ... bit 7 A."""
    return int(f"{m:08b}"[::-1], 2)


class Cynes:
    name = "cynes"

    def __init__(self, rom: Path):
        import cynes
        from importlib.metadata import version
        self.mod, self.rom, self.version = cynes, str(rom), "cynes " + version("cynes")

    def run(self, actions: np.ndarray, mode: str) -> tuple[float, dict]:
        nes = self.mod.NES(self.rom)

        def press(m):
            nes.controller = cynes_mask(m)

        boot_frames = boot(lambda i: nes[i], press, lambda: nes.step(1))
        masks = [cynes_mask(m) for m in range(256)]
        t = time.perf_counter()
        for m in actions:
            nes.controller = masks[m]
            fb = nes.step(FRAMESKIP)
            if mode == "rgb":
                np.array(fb)  # step returns a read-only view of the emulator's buffer
        dt = time.perf_counter() - t
        return dt, {**summary(lambda i: nes[i]), "boot_frames": boot_frames}


class StableRetro:
    """stable-retro's RetroEmulator (FCEUmm), with the SuperMarioBros-Nes-v0 integration."""

    name = "stable-retro"
    GAME = "SuperMarioBros-Nes-v0"

    def __init__(self, rom: Path):
        import warnings
        warnings.filterwarnings("ignore")
        import stable_retro as retro
        from importlib.metadata import version
        game_dir = Path(retro.data.get_file_path(self.GAME, "rom.sha")).parent
        if not (game_dir / "rom.nes").exists():
            shutil.copy(rom, game_dir / "rom.nes")
        self.rom_sha_ok = not retro.data.verify_hash(self.GAME)
        self.retro, self.version = retro, "stable-retro " + version("stable-retro")
        # Button order of its NES core: B, -, Select, Start, Up, Down, Left, Right, A.
        bits = [0x02, None, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x01]
        self.masks = [np.array([1 if b is not None and m & b else 0 for b in bits], np.uint8)
                      for m in range(256)]

    def run(self, actions: np.ndarray, mode: str) -> tuple[float, dict]:
        retro = self.retro
        env = retro.make(self.GAME, state=retro.State.NONE, use_restricted_actions=retro.Actions.ALL,
                         render_mode=None)
        env.reset()
        em, mem = env.em, env.data.memory

        def ram():
            b = mem.blocks
            return np.frombuffer(b[0] + b[1024], dtype=np.uint8)

        cur = [ram()]

        def step1():
            em.step()
            cur[0] = ram()

        boot_frames = boot(lambda i: cur[0][i], lambda m: em.set_button_mask(self.masks[m], 0), step1)
        t = time.perf_counter()
        for m in actions:
            em.set_button_mask(self.masks[m], 0)
            for _ in range(FRAMESKIP):
                em.step()
            if mode == "rgb":
                em.get_screen()
        dt = time.perf_counter() - t
        r = ram()
        out = {**summary(lambda i: r[i]), "boot_frames": boot_frames}
        env.close()
        return dt, out


EMULATORS = {c.name: c for c in [Nesle, NeslePy, NesPy, Cynes, StableRetro]}


def lscpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=500, help="timed env steps (x4 frames) per run")
    p.add_argument("--rounds", type=int, default=3, help="interleaved repetitions")
    p.add_argument("--seed", type=int, default=0, help="protocol B action seed")
    p.add_argument("--protocols", default="A,B")
    p.add_argument("--modes", default="none,rgb")
    p.add_argument("--emulators", default=",".join(EMULATORS))
    p.add_argument("--out", type=Path, default=None, help="JSON path (default docs/benchmarks/cpu-peers-DATE.json)")
    args = p.parse_args()

    rom = find_rom()
    emus, skipped = {}, {}
    for name in args.emulators.split(","):
        try:
            emus[name] = EMULATORS[name](rom)
        except Exception as e:  # an unavailable peer is reported, not fatal
            skipped[name] = f"{type(e).__name__}: {e}"
            print(f"skipping {name}: {skipped[name]}", file=sys.stderr)

    rng = np.random.default_rng(args.seed)
    actions = {"A": np.full(args.steps, RIGHT, np.uint8),
               "B": np.array(SIMPLE_MOVEMENT, np.uint8)[rng.integers(0, 7, args.steps)]}
    configs = [(e, pr, mo) for pr in args.protocols.split(",") for mo in args.modes.split(",") for e in emus]
    runs: dict[tuple, list] = {c: [] for c in configs}
    finals: dict[tuple, dict] = {}
    load_before = os.getloadavg()
    for rnd in range(args.rounds):
        for c in configs:
            e, pr, mo = c
            dt, fin = emus[e].run(actions[pr], mo)
            fps = args.steps * FRAMESKIP / dt
            runs[c].append(fps)
            finals[c] = fin
            print(f"round {rnd} {e:13s} {pr} {mo:4s} {fps:9.1f} frames/s  {fin}", file=sys.stderr)
    load_after = os.getloadavg()

    results = []
    for c in configs:
        e, pr, mo = c
        results.append({"emulator": e, "protocol": pr, "mode": mo, "fps_runs": [round(x, 1) for x in runs[c]],
                        "fps_best": round(max(runs[c]), 1), "fps_median": round(statistics.median(runs[c]), 1),
                        "final": finals[c]})
    best = {(r["emulator"], r["protocol"], r["mode"]): r["fps_best"] for r in results}
    ratios = {}
    for pr in args.protocols.split(","):
        for mo in args.modes.split(","):
            for peer in ("stable-retro", "nes-py", "cynes"):
                if ("nesle", pr, mo) in best and (peer, pr, mo) in best:
                    ratios[f"nesle/{peer} {pr} {mo}"] = round(best[("nesle", pr, mo)] / best[(peer, pr, mo)], 2)
    today = datetime.date.today().isoformat()
    report = {
        "date": today,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"cpu": lscpu_model(), "logical_cpus": os.cpu_count(), "python": platform.python_version(),
                    "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in load_after]},
        "protocol": {"game": "Super Mario Bros. (gym-super-mario-bros 7.4.0, md5 673913a23cd612daf5ad32d4085e0760)",
                     "start": "first playable frame of World 1-1, reached by tapping Start",
                     "frameskip": FRAMESKIP, "steps": args.steps, "rounds": args.rounds, "seed": args.seed,
                     "A": "RIGHT every step", "B": "uniform over the 7 SIMPLE_MOVEMENT masks, seeded",
                     "none": "no picture requested (only nesle can switch rendering off)",
                     "rgb": "an RGB frame fetched as a numpy array / buffer every step"},
        "versions": {e: getattr(emus[e], "version", "?") for e in emus},
        "skipped": skipped,
        "stable_retro_rom_sha_matches": getattr(emus.get("stable-retro"), "rom_sha_ok", None),
        "results": results,
        "ratios_best": ratios,
    }
    out = args.out or REPO / "docs/benchmarks" / f"cpu-peers-{today}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)

    print("| emulator | protocol | obs | frames/s (best) | frames/s (median) | end state (x, lives) |")
    print("|---|---|---|---:|---:|---|")
    for r in results:
        f = r["final"]
        print(f"| {r['emulator']} | {r['protocol']} | {r['mode']} | {r['fps_best']:,.0f} | "
              f"{r['fps_median']:,.0f} | x={f['x']}, lives={f['lives']} |")
    for k, v in ratios.items():
        print(f"- {k}: {v}x")


if __name__ == "__main__":
    main()

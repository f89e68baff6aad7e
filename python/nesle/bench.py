"""``nesle bench``: the benchmark protocols of the project (see docs/benchmarks/README.md), on
the best backend here unless ``--backend`` names one (CUDA when it can run, else the CPU).

Workload: Super Mario Bros. from the first frame of World 1-1 gameplay, frameskip 4 (one
env-step = 4 NES frames), ``warmup`` untimed steps then ``steps`` timed steps; throughput =
envs x timed steps / wall seconds, with the backend synchronised at the end of every step.

- A (lockstep): every env presses RIGHT every step.
- B (decorrelated): every env draws one of the 7 SIMPLE_MOVEMENT masks per step from a
  seeded RNG; no resets, deaths play out.
- B+pixels: B with pixel output on (``--pixels``) and the 84x84 grayscale observation made
  every step (on the device for CUDA); with ``--rgb`` the full 240x256 RGB observation instead
  (rows named e.g. ``B+rgb``).

``--env`` runs the same protocol through the Python environment (``nesle.make_vec``: action
lookup and checks, per-frame reward and done on the RAM trace, observations; RAM, or gray84
with ``--pixels``, or RGB with ``--rgb``; episodes never end, as in the protocol) instead of
the raw batch, to measure what the Python layer costs (rows named e.g. ``B/env``).

The largest env count is built once before any row runs, so a count this machine's memory
cannot hold is a ``MemoryError`` at once rather than after the smaller counts' rows.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import nesle
from nesle import roms, start_states
from nesle.actions import SIMPLE_MOVEMENT, button_masks
from nesle.vector import _check_int

RIGHT = 0x80
PROTOCOLS = ("A", "B")
BACKENDS = ("cpu", "cuda")

# The env counts a run takes unless given: the protocols' table on CUDA (docs/benchmarks/README.md,
# 65,536 the headline), a few on the CPU, where each env is a core's share of work.
DEFAULT_ENVS = {"cpu": [1, 16], "cuda": [1, 4096, 16384, 65536, 131072]}


@dataclass
class Row:
    protocol: str
    backend: str
    envs: int
    steps: int
    seconds: float
    env_steps_per_s: float
    frames_per_s: float
    # A CUDA row's `CudaBatch.device_report()` after its timed steps: the GPU, the kernel image,
    # the step kernel's registers and occupancy at the launch the protocol took, memory an env.
    device: dict | None = None


class _Synced:
    """A CudaBatch whose ``step`` waits for the GPU: a timed step is a finished step."""

    def __init__(self, batch) -> None:
        self._batch = batch

    def __getattr__(self, name: str):
        return getattr(self._batch, name)

    def step(self, actions, frames: int = 1) -> None:
        self._batch.step(actions, frames)
        self._batch.synchronize()


def _batch(backend: str, rom: bytes, n: int):
    if backend == "cpu":
        return nesle.CpuBatch(rom, n)
    nesle.vector.require_cuda()
    # No picture buffer until a protocol turns pixels on (60 KiB per env, and a second copy of
    # the state for drawing after the frame).
    return _Synced(nesle._native.CudaBatch(rom, n, render=False))


def run(
    protocol: str,
    n: int,
    *,
    backend: str = "cpu",
    frameskip: int = 4,
    warmup: int = 30,
    steps: int = 200,
    seed: int = 0,
    pixels: bool = False,
    rom: bytes | None = None,
    env: bool = False,
    rgb: bool = False,
) -> Row:
    """One protocol at one env count; returns its throughput. ``rgb``: the pixel observation is
    full-size RGB instead of 84x84 gray (pixels on)."""
    # Checked first: a wrong name or count would otherwise run as B, or time nothing.
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    _check_int("envs", n, 1)
    _check_int("frameskip", frameskip, 1, 1024)  # as make_vec's
    _check_int("warmup", warmup, 0)
    _check_int("steps", steps, 1)
    rom = rom if rom is not None else roms.load("smb")
    pixels = pixels or rgb
    if env:
        return _run_env(protocol, n, backend, frameskip, warmup, steps, seed, pixels, rom, rgb)
    batch, sink = _raw(backend, rom, n, pixels, rgb)
    rng = np.random.default_rng(seed)
    masks = button_masks(SIMPLE_MOVEMENT)
    lockstep = np.full(n, RIGHT, np.uint8)

    def actions() -> np.ndarray:
        if protocol == "A":
            return lockstep
        return masks[rng.integers(0, len(masks), size=n)]

    def step() -> None:
        batch.step(actions(), frameskip)
        if sink is not None:
            sink(batch)

    name = protocol + ("+rgb" if rgb else "+pixels" if pixels else "")
    row = _timed(step, name, backend, n, warmup, steps, frameskip)
    if backend == "cuda":
        try:
            row.device = batch.device_report()
        except RuntimeError as e:  # a driver query failed: the measured row stands, and says so
            print(f"nesle bench: no device report for {name} at {n:,} envs: {e}", file=sys.stderr)
    return row


def _raw(backend: str, rom: bytes, n: int, pixels: bool, rgb: bool):
    """A raw protocol row's batch, at World 1-1, and its observation sink (None without
    pixels): everything the row holds in memory."""
    start = start_states.smb(rom, ["1-1"])[0]
    batch = _batch(backend, rom, n)
    batch.restore(start.state)
    batch.set_render(pixels)
    sink = (_rgb_sink if rgb else _gray84_sink)(backend, n) if pixels else None
    return batch, sink


def check_fits(backend: str, n: int, *, pixels: bool = False, rgb: bool = False,
               env: bool = False, rom: bytes | None = None) -> None:  # fmt: skip
    """Build what a row of ``n`` envs holds (the batch and its sink, or with ``env`` the vector
    env) and drop it: a ``MemoryError`` now, before any row runs, for a count the host's or the
    GPU's memory cannot hold. Nothing is stepped."""
    rom = rom if rom is not None else roms.load("smb")
    pixels = pixels or rgb
    if env:
        _make_env(rom, n, backend, 4, 0, pixels, rgb).close()
    else:
        _raw(backend, rom, n, pixels, rgb)  # dropped at once
    if backend == "cuda" and (pixels or env):
        import torch  # the sinks' and the env's tensors are torch's

        torch.cuda.empty_cache()  # their buffers, back for the rows


def _timed(step, name: str, backend: str, n: int, warmup: int, steps: int, frameskip: int) -> Row:
    """``warmup`` untimed then ``steps`` timed calls of ``step``: the protocol's row."""
    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dt = time.perf_counter() - t0
    rate = n * steps / dt
    return Row(name, backend, n, steps, dt, rate, rate * frameskip)


def _gray84_sink(backend: str, n: int):
    """B+pixels: the 84x84 grayscale observation of every env, made where the env lives (a
    kernel on the GPU, into a device tensor; the same code on the CPU, into a NumPy array)."""
    if backend == "cuda":
        import torch

        out = torch.empty((n, 84, 84), dtype=torch.uint8, device="cuda")

        def cuda(batch) -> None:
            batch.gray84(out)
            batch.synchronize()

        return cuda
    px = np.empty((n, 240, 256), np.uint8)
    out = np.empty((n, 84, 84), np.uint8)
    return lambda batch: nesle._native.gray84(batch.pixels(out=px), out=out)


def _rgb_sink(backend: str, n: int):
    """B+pixels with RGB: the full-size RGB observation of every env, made where the env lives
    (a kernel on the GPU, into a device tensor; nes-core's palette on the CPU)."""
    if backend == "cuda":
        import torch

        out = torch.empty((n, 240, 256, 3), dtype=torch.uint8, device="cuda")

        def cuda(batch) -> None:
            batch.rgb(out=out)
            batch.synchronize()

        return cuda
    out = np.empty((n, 240, 256, 3), np.uint8)
    return lambda batch: batch.rgb(out=out)


def _never(ram):
    """A done function that never ends an episode (on NumPy and torch RAM alike)."""
    return ram[..., 0] != ram[..., 0]


def _make_env(rom, n, backend, frameskip, seed, pixels, rgb):
    return nesle.make_vec(
        rom, n, backend=backend, frameskip=frameskip, obs="rgb" if rgb else "gray84" if pixels else "ram",
        action_space="simple", start_states="1-1", done=_never, seed=seed,
    )  # fmt: skip


def _run_env(protocol, n, backend, frameskip, warmup, steps, seed, pixels, rom, rgb=False) -> Row:
    venv = _make_env(rom, n, backend, frameskip, seed, pixels, rgb)
    sync = _cuda_sync if venv.backend == "cuda" else (lambda: None)
    venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    right = np.full(n, SIMPLE_MOVEMENT.index(["right"]), np.int64)

    def step() -> None:
        venv.step(right if protocol == "A" else rng.integers(0, len(SIMPLE_MOVEMENT), n))
        sync()

    name = protocol + ("+rgb" if rgb else "+pixels" if pixels else "") + "/env"
    row = _timed(step, name, backend, n, warmup, steps, frameskip)
    venv.close()
    return row


def _cuda_sync() -> None:
    import torch

    torch.cuda.synchronize()


def machine() -> dict[str, str | int]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count() or 1, "python": platform.python_version()}


def describe_gpu(report: dict) -> str:
    """The GPU and kernel image of a CUDA row's report, in one line."""
    r = report
    return (
        f"GPU: {r['device']} (compute {r['compute_capability']}, {r['sms']} SMs, driver CUDA "
        f"{r['driver']}); kernels: {r['image']}"
    )


def describe_step(report: dict) -> str:
    """A CUDA row's step launch and device memory, in one line under the row."""
    r = report
    return (
        f"  nesle_step: {r['step_registers']} registers, {r['step_local_bytes']:,} B of stack a "
        f"thread, blocks of {r['step_block']}, {r['step_blocks_per_sm']} an SM = "
        f"{r['step_warps_per_sm']} of {r['max_warps_per_sm']} warps ({r['occupancy']:.0%} "
        f"occupancy); device memory {r['bytes_per_env']:,} B an env"
    )


def pick_backend(backend: str) -> str:
    """``auto``: CUDA when it can run here (``nesle.vector.cuda_available``), else the CPU. A
    named backend that cannot run here is a :class:`BackendUnavailableError` now, before the
    table's header is printed."""
    if backend == "auto":
        return "cuda" if nesle.vector.cuda_available()[0] else "cpu"
    if backend == "cuda":
        nesle.vector.require_cuda()
    return backend


def main(args) -> int:
    args.backend = pick_backend(args.backend)
    if not args.envs:
        args.envs = DEFAULT_ENVS[args.backend]
    print(f"backend: {args.backend}")
    # The largest count first, built and dropped: one too large for this machine's memory is
    # an error now, not after the smaller counts' rows have run.
    compare = getattr(args, "compare_env", False)
    for env in (False, True) if compare else (getattr(args, "env", False),):
        check_fits(args.backend, max(args.envs), pixels=args.pixels, rgb=getattr(args, "rgb", False), env=env)
    rows = []
    gpus: list[str] = []  # each GPU line printed once
    layer = []  # --compare-env: the Python layer's cost per protocol and env count
    print(f"{'protocol':<10} {'backend':<7} {'envs':>8} {'env-steps/s':>14} {'frames/s':>12}")

    def one(protocol: str, n: int, env: bool) -> Row:
        row = run(protocol, n, backend=args.backend, warmup=args.warmup, steps=args.steps,
                  pixels=args.pixels, env=env, rgb=getattr(args, "rgb", False))  # fmt: skip
        rows.append(row)
        if row.device is not None and describe_gpu(row.device) not in gpus:
            gpus.append(describe_gpu(row.device))
            print(gpus[-1])
        print(
            f"{row.protocol:<10} {row.backend:<7} {row.envs:>8,} "
            f"{row.env_steps_per_s:>14,.0f} {row.frames_per_s:>12,.0f}"
        )
        if row.device is not None:
            print(describe_step(row.device))
        return row

    try:
        _rows(args, one, layer, compare)
    except (Exception, KeyboardInterrupt) as e:  # the rows that ran are kept, then the error
        if args.json and rows:
            _write(args, rows, layer, f"{type(e).__name__}: {e}")
        raise
    if args.json:
        _write(args, rows, layer)
    return 0


def _rows(args, one: Callable[[str, int, bool], Row], layer: list, compare: bool) -> None:
    """Every protocol at every env count, or with ``--compare-env`` both ways in rounds."""
    for protocol in args.protocols:
        for n in args.envs:
            if not compare:
                one(protocol, n, getattr(args, "env", False))
                continue
            # Alternating rounds, so drift hits both alike; the best of each side counts.
            best = {False: 0.0, True: 0.0}
            for _ in range(max(1, getattr(args, "rounds", 1))):
                for env in (False, True):
                    best[env] = max(best[env], one(protocol, n, env).env_steps_per_s)
            cost = best[False] / best[True] - 1
            layer.append({"protocol": protocol, "envs": n, "raw": best[False], "env": best[True],
                          "cost": cost})  # fmt: skip
            print(f"  Python layer ({protocol}, {n:,} envs): {cost:+.1%} time per step over the raw batch")


def _write(args, rows: list[Row], layer: list, error: str | None = None) -> None:
    """The ``--json`` record; a run that stopped early keeps its rows and says why."""
    info = machine()
    names = sorted({r.device["device"] for r in rows if r.device is not None})
    if names:
        info["gpu"] = ", ".join(names)
    doc: dict[str, Any] = {
        "command": "nesle bench " + " ".join(args.argv),
        "date": time.strftime("%Y-%m-%d"),
        "machine": info,
        "nesle": nesle.__version__,
        "rows": [asdict(r) for r in rows],
    }
    if layer:
        doc["python_layer"] = layer
    if error is not None:
        doc["stopped"] = error
    Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.json}" + (" (the rows before the error)" if error else ""))

#!/usr/bin/env python3
"""Where a `nesle_step` launch spends its instructions, per device function.

ncu's source counters give counts per SASS instruction but name no functions; nvdisasm's
listing of the same cubin names them (the labels of the functions the kernel calls). Both list
the kernel's instructions in the same order, so row k of one is instruction k of the other.

    bench/sass_profile.py SOURCE_CSV SASS_LISTING [--top N] [--calls] [--cold]

SOURCE_CSV: `ncu -i REPORT --page source --csv --print-source sass` of a report taken with
`--section SourceCounters` (bench/gpu_checks.sh PARTS=source writes them). SASS_LISTING:
`nvdisasm -c` of the sm_90 cubin of the same build (`cuobjdump -xelf sm_90 nesle.fatbin`, the
fatbin in nes-cuda's OUT_DIR; or `nvcc -cubin -O3 -std=c++17 -arch=sm_90 -I kernels
kernels/nesle.cu`, which gives the same code with the same nvcc). Prints, per function, its
share of the warp instructions issued and of the stall samples, and the threads active per
instruction (32 in lockstep; less where the warp's threads run it apart). `--calls` also lists
the call sites of each function with their threads per call. `--cold` lists the source lines
that never ran inside the functions that issue at least 1% of the instructions (code that only
takes room in their instruction-cache lines, kernel-notes #92); it needs a listing with line
numbers: `nvdisasm -c -g` of a cubin built with `-lineinfo` (which gives the same code).
"""
import argparse
import csv
import re
import sys


def listing(path, kernel="nesle_step"):
    """(function of each instruction, target of each CALL or None, source line of each
    instruction as (file, line) or None) of `kernel`'s section."""
    fns, calls, locs, starts = [], [], [], {}
    inside, fn, loc = False, kernel, None
    for line in open(path):
        if ".section" in line:
            inside = f".text.{kernel}," in line
            continue
        if not inside:
            continue
        # nvdisasm -g: the innermost source line of the instructions that follow.
        m = re.match(r'\s*//## File "([^"]+)", line (\d+)', line)
        if m:
            loc = (m.group(1).rsplit("/", 1)[-1], int(m.group(2)))
            continue
        m = re.match(r"^(\$?[A-Za-z_.$][^ :]*):\s*$", line)
        if m and not m.group(1).startswith(".L"):
            fn = m.group(1)
            continue
        m = re.match(r"\s+/\*([0-9a-f]+)\*/\s+(.*?)\s*;", line)
        if m:
            starts.setdefault(fn, int(m.group(1), 16))
            fns.append(fn)
            c = re.search(r"CALL\.\S+\s+`\(([^)]+)\)", m.group(2))
            calls.append(c.group(1) if c else None)
            locs.append(loc)
    return fns, calls, locs


def short(name):
    """A label's function name: the Itanium-mangled `_Z<length><name>...` read by its length."""
    m = re.search(r"_Z(\d+)", name or "")
    if m:
        return name[m.end():m.end() + int(m.group(1))]
    return (name or "?").strip("$.:").replace("text.", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("sass")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--calls", action="store_true")
    ap.add_argument("--cold", action="store_true")
    a = ap.parse_args()
    rows = list(csv.reader(open(a.csv)))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    cols = {name: k for k, name in enumerate(rows[head])}
    rows = rows[head + 1:]
    fns, calls, locs = listing(a.sass)
    if len(rows) != len(fns):
        sys.exit(f"{len(rows)} counted instructions but {len(fns)} in the listing: not the same build")
    ex, thr, smp = (cols["Instructions Executed"], cols["Thread Instructions Executed"],
                    cols["Warp Stall Sampling (All Samples)"])
    num = lambda r, k: int(r[k] or 0)
    per = {}
    for f, r in zip(fns, rows):
        t = per.setdefault(short(f), [0, 0, 0])
        t[0] += num(r, ex)
        t[1] += num(r, thr)
        t[2] += num(r, smp)
    total_i = sum(t[0] for t in per.values()) or 1
    total_s = sum(t[2] for t in per.values()) or 1
    print(f"warp instructions {total_i:,}, stall samples {total_s:,}")
    print(f"{'function':32} {'instr %':>8} {'samples %':>10} {'threads/instr':>14}")
    for f, t in sorted(per.items(), key=lambda kv: -kv[1][0])[: a.top]:
        print(f"{f:32} {100 * t[0] / total_i:8.1f} {100 * t[2] / total_s:10.1f} {t[1] / max(t[0], 1):14.1f}")
    if a.calls:
        print("\ncall sites: caller -> callee, calls issued, threads per call")
        sites = [(num(r, ex), short(f), short(c), num(r, thr) / max(num(r, ex), 1))
                 for f, c, r in zip(fns, calls, rows) if c and num(r, ex)]
        for e, caller, callee, tpc in sorted(sites, reverse=True)[: a.top]:
            print(f"  {caller:28} -> {callee:28} {e:12,} {tpc:6.1f}")
    if a.cold:
        if not any(locs):
            sys.exit("--cold needs line numbers: nvdisasm -c -g of a cubin built with -lineinfo")
        hot = {f for f, t in per.items() if t[0] >= total_i / 100}
        lines = {}
        for f, loc, r in zip(fns, locs, rows):
            if loc and short(f) in hot:
                t = lines.setdefault(loc, [0, 0, set()])
                t[0] += 1
                t[1] += num(r, ex)
                t[2].add(short(f))
        cold = sorted(((t[0], loc, t[2]) for loc, t in lines.items() if t[1] == 0), key=lambda c: (-c[0], c[1]))
        print(f"\nsource lines never run inside the {len(hot)} functions with 1% of the instructions or more: "
              f"{sum(c[0] for c in cold):,} instructions")
        for n, (file, line), where in cold[: a.top]:
            print(f"  {file}:{line:<6} {n:6} {', '.join(sorted(where))}")


if __name__ == "__main__":
    main()

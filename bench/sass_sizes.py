#!/usr/bin/env python3
"""The step kernel's code size per device function, and how a change moves it.

Protocol B's time follows the size of its hot code more than its instruction count
(docs/kernel-notes.md #91), so a kernel change's row there gives its SASS sizes before any GPU
run. Listings: `nvdisasm -c` of the sm_90 cubin (`nvcc -cubin -O3 -std=c++17 -arch=sm_90
-I kernels -o K.cubin kernels/nesle.cu`).

    bench/sass_sizes.py LISTING [CHANGED_LISTING] [--kernel nesle_step] [--top N]

One listing: the kernel's instructions and its largest functions. Two: the functions whose size
changed, largest change first.
"""
import argparse
import collections
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from sass_profile import listing, short  # noqa: E402


def sizes(path, kernel):
    fns, _, _ = listing(path, kernel)
    if not fns:
        sys.exit(f"{path}: no .text.{kernel} section")
    return collections.Counter(short(f) for f in fns)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("listing")
    ap.add_argument("changed", nargs="?")
    ap.add_argument("--kernel", default="nesle_step")
    ap.add_argument("--top", type=int, default=20)
    a = ap.parse_args()
    before = sizes(a.listing, a.kernel)
    if not a.changed:
        print(f"{a.kernel}: {sum(before.values()):,} instructions")
        for f, n in before.most_common(a.top):
            print(f"  {f:32} {n:7,}")
        return
    after = sizes(a.changed, a.kernel)
    print(f"{a.kernel}: {sum(before.values()):,} -> {sum(after.values()):,} instructions")
    moved = [(after[f] - before[f], f) for f in set(before) | set(after) if after[f] != before[f]]
    for d, f in sorted(moved, key=lambda m: (-abs(m[0]), m[1]))[: a.top]:
        print(f"  {f:32} {before[f]:7,} -> {after[f]:7,} ({d:+,})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A simulation of the parts' barriers with a slack of k parts (kernels/console.cuh,
`nes_part_barrier`; docs/kernel-notes.md #187, #189), to check their phase arithmetic where no
GPU can.

A ring of k + 1 mbarriers: part `part` (1-based) of a frame of P parts is number
h = part + k - 1, its barrier h % (k + 1) in its phase h // (k + 1), and the launch's start
counts as numbers 0 .. k - 1. At the end of a part a warp arrives for h, then waits
(`try_wait.parity`, the parity of number h - k's phase) until every warp has finished the part
k before. As in the kernel, a warp computes these from the part's number within its frame, not
from a count over the launch, which is right only when P is a multiple of 2(k + 1). W warps run
F frames of P parts of random lengths in random orders; the simulation fails on a deadlock, on a
wait that passes before every warp has finished the part waited for, on an arrival in a phase
other than its part's (a phase overtaken), or on a warp more than k parts ahead of the slowest.

    bench/part_slack_protocol.py [RUNS]
"""
import random
import sys


def simulate(warps, parts, frames, slack, seed):
    rnd = random.Random(seed)
    bars_n = slack + 1
    bars = [{"phase": 0, "pending": warps} for _ in range(bars_n)]
    finished = [slack - 1] * warps  # the last number each warp arrived for (the start's: k - 1)
    total = parts * frames

    def number(g):
        # The kernel's number for the launch's part g (1-based): from the part within its frame.
        return (g - 1) % parts + 1 + slack - 1

    def count(b):
        # mbarrier.arrive: the phase completes with the last of its warps.
        b["pending"] -= 1
        if b["pending"] == 0:
            b["phase"] += 1
            b["pending"] = warps

    def arrive(w, g, h):
        b = bars[h % bars_n]
        true_h = g + slack - 1  # the number a count over the launch would give
        assert b["phase"] == true_h // bars_n, f"warp {w} arrives for part {g} in phase {b['phase']}"
        count(b)
        finished[w] = true_h

    def passes(g):
        # mbarrier.try_wait.parity: true once the phase of that parity has completed.
        at = number(g) - slack
        ok = (bars[at % bars_n]["phase"] & 1) != ((at // bars_n) & 1)
        assert not ok or all(f >= g - 1 for f in finished), f"part {g}'s wait passed early"
        return ok

    def length():
        return rnd.randint(1, 20) * (5 if rnd.random() < 0.05 else 1)

    for w in range(warps):
        for h in range(slack):
            count(bars[h % bars_n])
    state = [("run", 1, length()) for _ in range(warps)]
    for _ in range(10**6):
        if all(s[0] == "end" for s in state):
            return
        for w in rnd.sample(range(warps), warps):
            s = state[w]
            if s[0] == "run":
                if s[2] > 1:
                    state[w] = ("run", s[1], s[2] - 1)
                else:
                    arrive(w, s[1], number(s[1]))
                    state[w] = ("wait", s[1])
            if state[w][0] == "wait" and passes(state[w][1]):
                g = state[w][1]
                state[w] = ("end",) if g == total else ("run", g + 1, length())
        slowest = min(finished) - (slack - 1)  # the slowest warp's last part done
        assert all(s[0] != "run" or s[1] <= slowest + slack + 1 for s in state), "more than k parts of slack"
    raise AssertionError("deadlock")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    cases = [(1, 12), (2, 12), (5, 12), (1, 8), (3, 16), (1, 16)]
    for slack, parts in cases:
        for warps in (1, 2, 4, 16):
            for seed in range(runs):
                simulate(warps, parts, 4, slack, seed)
    print(f"{4 * runs} runs each of 4 frames, for slack k and parts P in {cases} (1, 2, 4 and 16 "
          "warps): no deadlock, no early pass, no phase overtaken, at most k parts of slack")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A simulation of the parts' barrier with one part of slack (bench/variants/187-part-slack.patch,
docs/kernel-notes.md #187), to check its phase arithmetic where no GPU can.

Two mbarriers take turns: part h's is barrier h & 1 in its phase h // 2, and the launch's start
counts as part 0. At the end of part h a warp arrives there, then waits (`try_wait.parity`, the
parity of part h - 1's phase) until every warp has finished part h - 1. W warps run H parts of
random lengths in random orders; the simulation fails on a deadlock, on a wait that passes before
every warp has finished the part, on an arrival in a phase other than its part's (a phase
overtaken), or on a warp more than one part ahead of the slowest.

    bench/part_slack_protocol.py [RUNS]
"""
import random
import sys


def simulate(warps, parts, seed):
    rnd = random.Random(seed)
    bars = [{"phase": 0, "pending": warps} for _ in range(2)]
    finished = [0] * warps  # the last part each warp arrived for

    def arrive(w, h):
        b = bars[h & 1]
        assert b["phase"] == h >> 1, f"warp {w} arrives for part {h} in phase {b['phase']}"
        b["pending"] -= 1
        if b["pending"] == 0:
            b["phase"] += 1
            b["pending"] = warps
        finished[w] = h

    def passes(h):
        # mbarrier.try_wait.parity: true once the phase of that parity has completed.
        g = h - 1
        ok = (bars[g & 1]["phase"] & 1) != ((g >> 1) & 1)
        assert not ok or all(f >= g for f in finished), f"part {h}'s wait passed early"
        return ok

    def length():
        return rnd.randint(1, 20) * (5 if rnd.random() < 0.05 else 1)

    for w in range(warps):
        arrive(w, 0)
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
                    arrive(w, s[1])
                    state[w] = ("wait", s[1])
            if state[w][0] == "wait" and passes(state[w][1]):
                h = state[w][1]
                state[w] = ("end",) if h == parts else ("run", h + 1, length())
        slowest = min(finished)
        assert all(s[0] != "run" or s[1] <= slowest + 2 for s in state), "more than one part of slack"
    raise AssertionError("deadlock")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for warps in (1, 2, 4, 16):
        for seed in range(runs):
            simulate(warps, 48, seed)
    print(f"{4 * runs} runs of 48 parts (1, 2, 4 and 16 warps): no deadlock, no early pass, "
          "no phase overtaken, at most one part of slack")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where the traced steps' time goes, per event name: reads a trace that `meshlm train
--config.log.profile_steps=[a,b]` wrote (RUN_DIR/trace.json, or one rank's trace/rank_R.json) and
prints a markdown table of each name's self time (its time less its children's on the same
thread) per traced step, its share of the step, and its calls per step. Numbered events
("forward block 3") count under one name. In a CUDA build every GPU op is an event that waits
for its kernels while tracing (kernels/ops/dispatch.h), so on the GPU this is the per-op profile.

    python3 bench/trace_ops.py RUN_DIR/trace.json [--rank 0] [--top 25]
"""
import argparse
import json
import re
import sys
from collections import defaultdict


def load_events(path, rank):
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("ph") == "X" and e.get("pid", 0) == rank]


def self_times(events):
    """(name, self microseconds) of each event: nested events on a thread are its children."""
    out = []
    by_thread = defaultdict(list)
    for e in events:
        by_thread[e.get("tid", 0)].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [event, children's time]
        for e in evs:
            while stack and e["ts"] >= stack[-1][0]["ts"] + stack[-1][0]["dur"]:
                done, kids = stack.pop()
                out.append((done["name"], done["dur"] - kids))
            if stack:
                stack[-1][1] += e["dur"]
            stack.append([e, 0.0])
        for done, kids in stack:
            out.append((done["name"], done["dur"] - kids))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    events = load_events(a.trace, a.rank)
    steps = [e for e in events if re.fullmatch(r"step \d+", e["name"])]
    if not steps:
        sys.exit(f"trace_ops: no 'step N' events for rank {a.rank} in {a.trace}")
    step_us = sum(e["dur"] for e in steps) / len(steps)
    total, calls = defaultdict(float), defaultdict(int)
    for name, us in self_times(events):
        key = re.sub(r" \d+$", "", name)
        total[key] += us
        calls[key] += 1
    print(f"{len(steps)} traced steps, {step_us / 1e3:.2f} ms each (self time: less nested events)")
    print()
    print("| event | ms per step | share of the step | calls per step |")
    print("|---|---|---|---|")
    for key in sorted(total, key=lambda k: -total[k])[: a.top]:
        ms = total[key] / len(steps) / 1e3
        print(f"| {key} | {ms:.2f} | {100 * ms * 1e3 / step_us:.1f} % | "
              f"{calls[key] / len(steps):g} |")


if __name__ == "__main__":
    main()

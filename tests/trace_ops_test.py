#!/usr/bin/env python3
"""bench/trace_ops.py on a hand-made trace: self times of nested events, numbered names under
one name, per-step averages, another rank's events left out."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def ev(name, ts, dur, pid=0, tid=0):
    return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": pid, "tid": tid}


events = [
    # step 1: 100 us; forward 50 holds gemm 10 + gemm 15 (self 25); backward 35; gaps 15.
    ev("step 1", 0, 100), ev("forward", 10, 50), ev("gemm", 20, 10), ev("gemm", 30, 15),
    ev("backward block 0", 60, 35),
    # step 2: 200 us; forward 100 holds one gemm 40; backward block 1 60 holds gemm 20.
    ev("step 2", 1000, 200), ev("forward", 1010, 100), ev("gemm", 1020, 40),
    ev("backward block 1", 1110, 60), ev("gemm", 1120, 20),
    # a second thread's event nests in nothing of thread 0's
    ev("data", 1005, 4, tid=1),
    # rank 1 is not rank 0's business
    ev("step 1", 0, 999, pid=1), ev("gemm", 5, 900, pid=1),
    {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "rank 0"}},
]
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "trace.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench/trace_ops.py"), path],
                         capture_output=True, text=True, check=True).stdout
rows = {}
for line in out.splitlines():
    cells = [c.strip() for c in line.strip("|").split("|")]
    if len(cells) == 4 and cells[0] not in ("event", "---"):
        rows[cells[0]] = cells[1:]
print(out)
assert "2 traced steps, 0.15 ms each" in out, out  # (100 + 200) / 2 us
# ms per step, share of the 150 us step, calls per step
expected = {
    # gemm: (10 + 15 + 40 + 20) / 2 = 42.5 us
    "gemm": ["0.04", "28.3 %", "2"],
    # backward block: (35 + 40) / 2 = 37.5 us, numbered names under one
    "backward block": ["0.04", "25.0 %", "1"],
    # forward: (25 + 60) / 2 = 42.5 us
    "forward": ["0.04", "28.3 %", "1"],
    # step: (15 + 0) self in step 1 (100 - 50 - 35), step 2: 200 - 100 - 60 = 40 -> 27.5 us
    "step": ["0.03", "18.3 %", "1"],
    "data": ["0.00", "1.3 %", "0.5"],
}
assert rows == expected, (rows, expected)
print("trace_ops: ok")

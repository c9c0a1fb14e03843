"""Reads a run's TensorBoard event files with the tensorboard package's own readers and prints
what they hold as JSON, for tests/tensorboard_test.cpp:
  {"scalars": {tag: [[step, value], ...]}, "texts": {tag: [[step, text], ...]},
   "files": [[file name, [step of each event], file_version], ...]}
EventAccumulator keeps every event (purge_orphaned_data=False: it would hide a step written
twice), EventFileLoader reads each file on its own (CRCs checked by both).
Usage: read_events.py RUN_DIR/tb"""
import json
import os
import sys

from tensorboard.backend.event_processing import event_accumulator, event_file_loader

tb_dir = sys.argv[1]
acc = event_accumulator.EventAccumulator(
    tb_dir,
    size_guidance={event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0},
    purge_orphaned_data=False,
)
acc.Reload()
tags = acc.Tags()
out = {"scalars": {}, "texts": {}, "files": []}
for tag in tags["scalars"]:
    out["scalars"][tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
for tag in tags["tensors"]:
    if acc.SummaryMetadata(tag).plugin_data.plugin_name != "text":
        continue
    out["texts"][tag] = [
        [e.step, e.tensor_proto.string_val[0].decode("utf-8")] for e in acc.Tensors(tag)
    ]
for name in sorted(os.listdir(tb_dir)):
    events = list(event_file_loader.EventFileLoader(os.path.join(tb_dir, name)).Load())
    version = events[0].file_version if events else ""
    out["files"].append([name, [e.step for e in events], version])
print(json.dumps(out))

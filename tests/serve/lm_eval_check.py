"""lm-evaluation-harness against `meshlm eval --tasks`: runs lm-eval's `local-completions` model
on a running `meshlm serve` over the same JSONL task files, and checks that every example gets
the same prediction (and log-likelihoods to 1e-6) and every task the same accuracy.

Usage: lm_eval_check.py COMPLETIONS_URL MESHLM_RESULTS.json MAX_LENGTH TASK.jsonl...
(COMPLETIONS_URL like http://127.0.0.1:8080/v1/completions; MESHLM_RESULTS.json written by
`meshlm eval --tasks ... --output`; MAX_LENGTH the same as meshlm eval's, the context - 1.)
The tokenizer is the server's (lm-eval's `remote` backend: /tokenizer_info, /tokenize)."""
import json
import logging
import math
import os
import sys
import tempfile

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENAI_API_KEY", "")

url, ours_path, max_length, task_files = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]

import lm_eval  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

logging.getLogger("lm-eval").setLevel(logging.WARNING)

LAST_WORD = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: loglikelihood
doc_to_text: "{{{{text.split(' ')[:-1]|join(' ')}}}}"
doc_to_target: "{{{{' '+text.split(' ')[-1]}}}}"
metric_list:
  - metric: perplexity
    aggregation: perplexity
    higher_is_better: false
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""
MULTIPLE_CHOICE = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: multiple_choice
doc_to_text: context
doc_to_choice: choices
doc_to_target: gold
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
"""

with open(ours_path) as f:
    ours = json.load(f)

inc = tempfile.mkdtemp(prefix="meshlm-lmeval-")
names = []
for path in task_files:
    name = os.path.basename(path).split(".")[0]
    with open(path) as f:
        first = json.loads(f.readline())
    tmpl = MULTIPLE_CHOICE if "choices" in first else LAST_WORD
    with open(os.path.join(inc, name + ".yaml"), "w") as f:
        f.write(tmpl.format(name=name, path=os.path.abspath(path)))
    names.append(name)

out = lm_eval.simple_evaluate(
    model="local-completions",
    model_args={"model": "meshlm", "base_url": url, "tokenizer_backend": "remote",
                "tokenized_requests": True, "max_length": max_length, "num_concurrent": 4,
                "max_retries": 1, "timeout": 120},
    tasks=names, task_manager=TaskManager(include_path=inc), log_samples=True, batch_size=8)

failed = passed = 0
for name in names:
    res, samples = out["results"][name], sorted(out["samples"][name], key=lambda s: s["doc_id"])
    mine = ours["results"][name]
    mine_samples = ours["samples"][name]
    kind = mine["kind"]
    same = 0
    max_diff = 0.0
    for s, m in zip(samples, mine_samples, strict=True):
        lls = [r[0][0] if isinstance(r[0], (list, tuple)) else r[0] for r in s["filtered_resps"]]
        if kind == "last_word":
            greedy = s["filtered_resps"][0][1]
            pred = 1 if greedy else 0
        else:
            pred = max(range(len(lls)), key=lambda i: (lls[i], -i))
        same += pred == m["pred"]
        max_diff = max(max_diff, max(abs(a - b) for a, b in zip(lls, m["loglikelihoods"])))
    acc = res["acc,none"]
    ok = same == len(samples) and math.isclose(acc, mine["acc"], abs_tol=1e-12) and max_diff < 1e-6
    if kind == "multiple_choice":
        ok = ok and math.isclose(res["acc_norm,none"], mine["acc_norm"], abs_tol=1e-12)
    print(f"{name}: {len(samples)} examples, same prediction on {same}; acc lm-eval {acc:.4f} "
          f"meshlm {mine['acc']:.4f}"
          + (f"; acc_norm lm-eval {res['acc_norm,none']:.4f} meshlm {mine['acc_norm']:.4f}"
             if kind == "multiple_choice" else
             f"; perplexity lm-eval {res['perplexity,none']:.4f} meshlm {mine['perplexity']:.4f}")
          + f"; max |loglikelihood difference| {max_diff:.2e}: {'ok' if ok else 'MISMATCH'}")
    passed += ok
    failed += not ok
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

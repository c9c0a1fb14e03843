"""Throughput and latency of `meshlm serve` under concurrent clients (Python standard library
only). For each concurrency c, c client threads send requests back to back over keep-alive
connections until `--requests-per-client` each are done; every request is greedy with its own
prompt and asks for exactly --max-tokens new tokens (ignore_eos). Prints generated tokens per
second, requests per second and p50 / p99 request latency per concurrency, then the batched
throughput at the highest concurrency over the one-at-a-time throughput.

Usage: serve_bench.py URL [--concurrency 1,8,32] [--requests-per-client N] [--max-tokens N]
       [--prompt-tokens N]     (URL like http://127.0.0.1:8080)"""
import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("url")
ap.add_argument("--concurrency", default="1,8,32")
ap.add_argument("--requests-per-client", type=int, default=0,
                help="0: 4 at concurrency 1, else 2 per client")
ap.add_argument("--max-tokens", type=int, default=64)
ap.add_argument("--prompt-tokens", type=int, default=32)
args = ap.parse_args()
u = urllib.parse.urlparse(args.url)


def prompt(i):
    words = "the quick brown fox jumps over a lazy dog while seven wizards quietly box".split()
    s = f"Request {i}:"
    k = 0
    while len(s) < args.prompt_tokens:  # byte tokenizer: one token per byte
        s += " " + words[(i * 7 + k) % len(words)]
        k += 1
    return s[:args.prompt_tokens]


def run(concurrency, per_client):
    latencies, tokens, errors = [], [0], [0]
    lock = threading.Lock()

    def client(c):
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
        for r in range(per_client):
            body = json.dumps({"prompt": prompt(c * 1000 + r), "max_tokens": args.max_tokens,
                               "temperature": 0, "ignore_eos": True})
            t0 = time.perf_counter()
            conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            dt = time.perf_counter() - t0
            with lock:
                if resp.status != 200:
                    errors[0] += 1
                    continue
                latencies.append(dt)
                tokens[0] += json.loads(data)["usage"]["completion_tokens"]
        conn.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat = sorted(latencies)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
    return {"concurrency": concurrency, "requests": len(lat), "errors": errors[0],
            "tokens": tokens[0], "seconds": wall, "tokens_per_s": tokens[0] / wall,
            "requests_per_s": len(lat) / wall, "p50": statistics.median(lat) if lat else 0,
            "p99": p(0.99)}


# Warm up (first-touch of the weights and the KV pool).
run(1, 1)
rows = []
print(f"{'concurrency':>11} {'requests':>8} {'tokens':>7} {'seconds':>8} {'tokens/s':>9} "
      f"{'requests/s':>10} {'p50 s':>7} {'p99 s':>7} {'errors':>6}")
for c in [int(x) for x in args.concurrency.split(",")]:
    per = args.requests_per_client or (4 if c == 1 else 2)
    r = run(c, per)
    rows.append(r)
    print(f"{c:>11} {r['requests']:>8} {r['tokens']:>7} {r['seconds']:>8.2f} "
          f"{r['tokens_per_s']:>9.1f} {r['requests_per_s']:>10.2f} {r['p50']:>7.2f} "
          f"{r['p99']:>7.2f} {r['errors']:>6}", flush=True)
one, top = rows[0], rows[-1]
print(f"throughput at concurrency {top['concurrency']} / concurrency {one['concurrency']}: "
      f"{top['tokens_per_s'] / one['tokens_per_s']:.2f}x")

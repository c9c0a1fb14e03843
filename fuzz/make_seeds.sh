#!/usr/bin/env bash
# Rebuilds fuzz/corpus/<target>/ (the seed corpora) from files already in the repo, and from what
# the built meshlm binary makes of them: small SentencePiece models, a prepared directory's
# meta.json and shards, and the checkpoints of fuzz/checkpoint_fixture.h (trainer.json,
# layout.json, written by the fuzz_replay driver). Regression inputs (fuzz/regressions/) are
# never touched. Usage: fuzz/make_seeds.sh [BUILD_DIR] (default build/, which must hold meshlm and
# fuzz/fuzz_replay).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=fuzz/corpus
fx=tests/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out"/{config_yaml,safetensors,safetensors_index,tokenizer_json,tiktoken,spm_model}
mkdir -p "$out"/{token_shard,prepared_meta,trainer_json,layout_json,corpus_jsonl}
mkdir -p "$out"/{serve_http,serve_body}

# config_yaml: every recipe, the tiny run's saved config, and recipes followed by overrides.
cp configs/*.yaml "$out/config_yaml/"
cp $fx/meshlm_tiny_run/config.yaml "$out/config_yaml/tiny_run_config.yaml"
{ cat configs/tiny-gpt2.yaml; printf -- '--config.train.steps=3\n--config.model.n_layer=2\n'; } \
  >"$out/config_yaml/tiny-gpt2-overrides.yaml"
printf -- '--config.optim.lr=1e-3\n--config.data.tokenizer=byte\n' >"$out/config_yaml/overrides-only"

# safetensors: the smallest fixtures (f32, f16, several tensors).
for f in hf_llama_tiny_f16_ref hf_gptj_tiny_ref vq/shga_long_window; do
  cp "$fx/$f.safetensors" "$out/safetensors/$(basename "$f").safetensors"
done
# safetensors_index: the sharded fixture's index (its shards sit next to the fuzzed index).
cp $fx/hf_llama_tiny_sharded/model.safetensors.index.json "$out/safetensors_index/"

# tokenizer_json: every tokenizer.json fixture.
cp $fx/tokenizers/*.json "$out/tokenizer_json/"
for f in $fx/tokenizers/hf/*.json; do  # every family: BPE, WordPiece, Unigram, normalizers
  [ "$(basename "$f")" = expected.json ] || cp "$f" "$out/tokenizer_json/hf_$(basename "$f")"
done
# tiktoken: the first ranks of GPT-2's (the whole file is 836 KB).
head -n 400 $fx/tokenizers/gpt2.tiktoken >"$out/tiktoken/gpt2_head.tiktoken"
head -n 40 $fx/tokenizers/gpt2.tiktoken >"$out/tiktoken/gpt2_head40.tiktoken"

# corpus_jsonl: the text fixtures as JSONL records, plain, gzip and zstd, and one bad line.
python3 - "$fx/tokenizers" "$out/corpus_jsonl" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
lines = open(f"{src}/corpus.txt", encoding="utf-8", errors="replace").read().splitlines()
with open(f"{dst}/lines.jsonl", "w") as f:
    for l in lines:
        f.write(json.dumps({"text": l, "id": len(l)}, ensure_ascii=False) + "\n")
docs = open(f"{src}/bpe_train_corpus.txt").read().split("\n%\n")
with open(f"{dst}/docs.jsonl", "w") as f:
    for i, d in enumerate(docs[:4]):
        f.write(json.dumps({"meta": {"n": i}, "text": d[:400]}) + "\n")
    f.write('{"text": "unterminated\n{"other": 1}\n[1, 2]\n\n')
PY
gzip -9 -n -c "$out/corpus_jsonl/lines.jsonl" >"$out/corpus_jsonl/lines.jsonl.gz"
zstd -q -19 -c "$out/corpus_jsonl/docs.jsonl" >"$out/corpus_jsonl/docs.jsonl.zst"

# serve_body / serve_http: the requests of docs/serving.md and tests/serve_test.cpp.
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
bodies = [  # (endpoint index: 0 completions, 1 chat, 2 tokenize, 3 detokenize, body)
    (0, {"prompt": "Q: What is the meaning of life?", "max_tokens": 4, "temperature": 0.7}),
    (0, {"prompt": "Once upon a time", "max_tokens": 4, "stream": True,
         "stream_options": {"include_usage": True}}),
    (0, {"prompt": [[72, 105], [33]], "max_tokens": 2, "n": 2, "logprobs": 3, "echo": True,
         "seed": 7, "stop": ["\n", "x"], "top_k": 5, "top_p": 0.9}),
    (0, {"prompt": ["a", "b"], "max_tokens": 0, "echo": True, "logprobs": 0,
         "truncate_prompt_tokens": 4, "repetition_penalty": 1.1, "typical_p": 0.5}),
    (1, {"messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 3}),
    (1, {"messages": [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
                      {"role": "assistant", "content": "Hello"},
                      {"role": "user", "content": "Bye"}],
         "max_completion_tokens": 2, "logprobs": True, "top_logprobs": 2, "stream": True}),
    (2, {"prompt": "hello world", "add_special_tokens": False}),
    (3, {"tokens": [104, 105, 256]}),
]
for i, (ep, b) in enumerate(bodies):
    open(f"{out}/serve_body/body{i}", "wb").write(bytes([ep]) + json.dumps(b).encode())
paths = ["/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"]
reqs = []
for ep, b in bodies[:6:2]:
    body = json.dumps(b)
    reqs.append(f"POST {paths[ep]} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                f"Authorization: Bearer fuzz-key\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}")
for path in ["/health", "/v1/models", "/metrics", "/tokenizer_info", "/nowhere"]:
    reqs.append(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer fuzz-key\r\n"
                "Connection: keep-alive\r\n\r\n")
reqs.append("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n"
            '{"prompt": "no key"}')
reqs.append("POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer fuzz-key\r\n"
            "Transfer-Encoding: chunked\r\n\r\n10\r\n{\"prompt\": \"ab\"}\r\n0\r\n\r\n")
reqs.append("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{}")
for i, r in enumerate(reqs):
    open(f"{out}/serve_http/req{i}", "w").write(r)
PY

# From the binaries: SentencePiece models, a prepared directory, the checkpoint fixtures.
"$build/meshlm" train-tokenizer --input $fx/tokenizers/corpus.txt $fx/tokenizers/bpe_train_corpus.txt \
  --type spm-unigram --vocab-size 300 --out "$tmp/uni" >/dev/null 2>&1
"$build/meshlm" train-tokenizer --input $fx/tokenizers/bpe_train_corpus.txt \
  --type spm-bpe --vocab-size 280 --out "$tmp/bpe" >/dev/null 2>&1
# Without the NFKC tables (230 KB each): 3 KB models that tokenize the same.
python3 fuzz/spm_strip.py "$tmp/uni.model" "$out/spm_model/unigram.model"
python3 fuzz/spm_strip.py "$tmp/bpe.model" "$out/spm_model/bpe.model"
# The options of fuzz/prepared_meta.cpp's fixture: its seed must open the fixture's shards.
"$build/meshlm" prepare --input $fx/tokenizers/bpe_train_corpus.txt --separator % \
  --val-fraction 0.25 --threads 1 --out "$tmp/prep" >/dev/null 2>&1
cp "$tmp/prep/meta.json" "$out/prepared_meta/meta.json"
cp "$tmp/prep/train_000000.bin" "$out/token_shard/byte_train.bin"
cp "$tmp/prep/val_000000.bin" "$out/token_shard/byte_val.bin"
"$build/meshlm" prepare --input $fx/tokenizers/corpus.txt --tokenizer $fx/tokenizers/bpe_trained.json \
  --val-fraction 0 --threads 1 --out "$tmp/prep2" >/dev/null 2>&1
cp "$tmp/prep2/train_000000.bin" "$out/token_shard/bpe_train.bin"
# The checkpoint fixtures' files. Each target overwrites the file it fuzzes, so each file is
# taken from a run of a target that leaves it alone.
echo '{"layout": 0}' >"$tmp/layout_input"
fixture() {  # TARGET INPUT DIR: the fixtures as a run of TARGET on INPUT leaves them in DIR
  MESHLM_FUZZ_KEEP="$3" "$build/fuzz/fuzz_replay" "$1" --seconds 0 "$2" >/dev/null
}
fixture trainer_json "$tmp/layout_input" "$tmp/a"  # rewrites the sharded trainer.json only
cp "$tmp/a/single/checkpoints/step_3/trainer.json" "$out/trainer_json/single.json"
cp "$tmp/a/sharded/checkpoints/step_3/layout.json" "$out/layout_json/layout.json"
fixture layout_json "$tmp/layout_input" "$tmp/b"  # rewrites layout.json only
cp "$tmp/b/sharded/checkpoints/step_3/trainer.json" "$out/trainer_json/sharded.json"
du -sh "$out"

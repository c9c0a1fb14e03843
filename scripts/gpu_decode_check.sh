#!/usr/bin/env bash
# Sections 2 and 5 of scripts/gpu_check.sh, as markdown on stdout (the runs' output goes to LOG):
#
#   scripts/gpu_decode_check.sh BUNDLE WORKDIR LOG
#
# 2. The PyTorch GPT-2 reference fixture on the GPU (cuda_reference_test).
# 5. Decoding on the GPU: cuda_decode_test (the KV-cache and paged decoders of each family
#    against the CPU), then `sample` and a `serve` request with --device cuda on the runs that
#    scripts/gpu_model_check.sh left in WORKDIR: greedy text against --device cpu, and the
#    time of 256 new tokens from GPT-2 124M on each device.
#
# GPU_CHECK_DEVICE=cpu runs the "GPU" side on the CPU: a dry run of this script on any machine.
set -uo pipefail
bundle=$1 work=$2 log=$3
dev=${GPU_CHECK_DEVICE:-cuda}
m="$bundle/bin/meshlm"
export MESHLM_SOURCE_DIR="$PWD"  # the test binaries' fixtures: this checkout's tests/fixtures

# gtest BINARY TAG: runs a test binary, prints its TAG lines and its verdict in a code block.
gtest() {
  local out rc
  out=$(timeout 300 "$bundle/bin/$1" 2>&1)
  rc=$?
  echo "$out" >>"$log"
  echo '```'
  echo "$out" | grep -E "^\[ $2|^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]"
  echo '```'
  echo "($1: exit $rc)"
  echo
}

echo "## 2. The PyTorch GPT-2 reference fixture on the GPU"
echo
gtest cuda_reference_test "reference"

echo "## 5. Decoding on the GPU"
echo
echo "The KV-cache decoder (\`sample\`) and the paged decoder (\`serve\`, \`eval --tasks\`) of each"
echo "family against the CPU, fp32 and bf16 weights (cuda_decode_test):"
echo
gtest cuda_decode_test "decoded"

# sample RUN DEVICE ARGS...: greedy text from a run; its seconds go to $work/sample_s.
sample() {
  local run=$1 device=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  timeout 300 "$m" sample --checkpoint "$work/$run" --device "$device" --temperature 0 "$@" \
    2>>"$log"
  echo "exit $?" >>"$log"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' >"$work/sample_s"
}
prompt="Q: What is the meaning of life?"
if [ -s "$work/whole/model.safetensors" ]; then
  g=$(sample whole "$dev" --prompt "$prompt" --max-new-tokens 60)
  c=$(sample whole cpu --prompt "$prompt" --max-new-tokens 60)
  same=no
  [ -n "$g" ] && [ "$g" = "$c" ] && same=yes
  echo "\`meshlm sample --device $dev --temperature 0\` on the 40-step GPU run (section 4), 60"
  echo "tokens; identical to --device cpu: $same"
  echo
  echo '```'
  echo "$g"
  echo '```'
  echo
else
  echo "sample: no run from section 4 (see gpu_check.log)"
  echo
fi

# A completion from `serve --device cuda` on the same run, against the greedy sample's text.
if [ -s "$work/whole/model.safetensors" ]; then
  "$m" serve --checkpoint "$work/whole" --device "$dev" --port 0 >>"$log" 2>"$work/serve.err" &
  srv=$!
  port=""
  for _ in $(seq 1 100); do
    port=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\).*|\1|p' "$work/serve.err")
    [ -n "$port" ] && break
    sleep 0.2
  done
  cat "$work/serve.err" >>"$log"
  answer=$(PORT="$port" PROMPT="$prompt" timeout 120 python3 - <<'EOF' 2>>"$log"
import json, os, urllib.request
body = {"prompt": os.environ["PROMPT"], "max_tokens": 60, "temperature": 0}
req = urllib.request.Request(f"http://127.0.0.1:{os.environ['PORT']}/v1/completions",
                             json.dumps(body).encode(), {"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=100))["choices"][0]["text"], end="")
EOF
  )
  kill "$srv" 2>/dev/null
  wait "$srv" 2>/dev/null
  served=no
  [ -n "$answer" ] && [ "$prompt$answer" = "$g" ] && served=yes
  echo "\`meshlm serve --device $dev\` ($(grep -o 'model .* on [a-z]*' "$work/serve.err" | head -1)):"
  echo "a greedy /v1/completions request of 60 tokens equals the sample's text: $served"
  echo
fi

# Decoding speed: GPT-2 124M (the bf16 run of section 6), up to 256 new tokens (greedy; an
# end-of-text stops it sooner), one sequence, the process's whole time (load and prefill too).
if [ -s "$work/gpt2_bf16/model.safetensors" ]; then
  echo "| GPT-2 124M, 256 new tokens after a 9-token prompt | device | precision | seconds |"
  echo "|---|---|---|---|"
  for d in "$dev" cpu; do
    for p in fp32 bf16; do
      sample gpt2_bf16 "$d" --prompt "$prompt" --max-new-tokens 256 --precision "$p" >/dev/null
      echo "| meshlm sample | $d | $p | $(cat "$work/sample_s") |"
    done
  done
  echo
fi

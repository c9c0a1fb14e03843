#!/usr/bin/env bash
# Records tests/fixtures/golden_training.txt: the exact results of a handful of short
# `meshlm train` runs (per step: loss, learning rate, gradient norm, validation loss and VQ
# statistics as metrics.jsonl writes them with %.9g; the SHA-256 of the final
# model.safetensors), which golden_training_test compares bit for bit.
#
#   tools/reference/record_golden.sh [BINARY [OUT]]
#
# BINARY defaults to build/meshlm (its build directory's compile_commands.json gives the
# kernels' compiler flags), OUT to tests/fixtures/golden_training.txt. Record from the commit
# whose training the fixture should pin. The runs take under half a minute on 2 cores.
#
# The bits depend on the machine in two ways (tools/reference/README.md, "Golden training"):
# - oneDNN picks its sgemm kernels by ISA at run time: ONEDNN_MAX_CPU_ISA=AVX2 holds every run to
#   the AVX2 kernels all CI machines have. train.precision auto would mean bf16 on AVX512-BF16
#   CPUs, so each case names its precision, and the bf16 case sets MESHLM_NO_NATIVE_BF16=1.
# - -march=native sets the vector width of the kernels' `omp simd` reductions, hence their
#   summation order (tests/simd_lanes.h). Results are recorded per width: this script adds or
#   replaces the section of BINARY's width and keeps the others, and the test checks the section
#   of its own build's width (skipping loudly where there is none). For another width, build
#   with that -march (e.g. -DMESHLM_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=znver1
#   -fno-tree-slp-vectorize" gives Zen 1's 4 lanes on any later AMD CPU) and run this on it.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-build/meshlm}")
out=${2:-tests/fixtures/golden_training.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The width key: tests/simd_lanes.h's probe, compiled as the kernels are.
flags=$(grep -m1 '"command": .*kernels/cpu/layernorm\.cpp"' "$(dirname "$bin")/compile_commands.json" |
  sed -E 's/^ *"command": "//; s/ -o .*//')
printf '#include "simd_lanes.h"\nint main() { std::puts(meshlm::test::simd_reduction_key().c_str()); }\n' |
  $flags -I tests -x c++ - -o "$work/probe"
key=$("$work/probe")
echo "recording the section for $key" >&2

# Every run: oneDNN held to AVX2, idle OpenMP threads asleep (busy CI cores), and the
# multi-rank settings of tests/mpi (collective timeouts, no CMA between ranks in containers).
env_line="ONEDNN_MAX_CPU_ISA=AVX2 OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 MESHLM_COMM_TIMEOUT=60"
env_line+=" OMPI_MCA_btl_vader_single_copy_mechanism=none"
common="--config.train.seed=1337 --config.log.interval=1 --config.log.sample_tokens=0"
common+=" --config.train.peak_gflops=100 --config.checkpoint.interval=0"
common+=" --config.train.final_eval_batches=2"
one="--config.train.threads=2 $common"   # one process, two threads
ranks="--config.train.threads=1 $common" # a thread per rank
small="--config.train.steps=4 --config.train.batch_size=4 --config.train.seq_len=64"
# name | ranks | extra environment (- for none) | meshlm train arguments
cases=(
  "default|1|-|--config configs/tiny-gpt2.yaml --config.train.steps=4 --config.train.precision=fp32 $one"
  "default_bf16|1|MESHLM_NO_NATIVE_BF16=1|--config configs/tiny-gpt2.yaml $small --config.train.precision=bf16 $one"
  # GPT-2 small's width, heads, vocabulary and context; 2 of its 12 layers keep it at seconds.
  "gpt2_small|1|-|--config configs/gpt2-small.yaml --config.model.n_layer=2 --config.data.synthetic=true --config.train.steps=2 --config.train.batch_size=1 --config.train.seq_len=64 --config.train.precision=fp32 $one"
  "llama|1|-|--config configs/tiny-llama.yaml $small --config.train.precision=fp32 $one"
  "gptj|1|-|--config configs/tiny-gptj.yaml $small --config.train.precision=fp32 $one"
  "vq|1|-|--config configs/tiny-vq.yaml --config.train.steps=4 --config.train.batch_size=2 --config.train.precision=fp32 $one"
  "dp2_zero3|2|-|--config configs/tiny-gpt2.yaml $small --config.train.precision=fp32 --config.parallel.data=2 --config.parallel.zero_stage=3 $ranks"
  # The vocabulary split over 2 ranks needs an even size: 258 (one unused byte-level id).
  "tp2|2|-|--config configs/tiny-llama.yaml $small --config.model.vocab_size=258 --config.train.precision=fp32 --config.parallel.model=2 $ranks"
)

{
  echo "key $key"
  cpu=$(lscpu | sed -n 's/^Model name: *//p; s/^CPU family: */family /p; s/^Model: */model /p' |
    paste -sd' ')
  march=$(grep -oE -- '-march=[^ ]+' <<< "$flags" | paste -sd' ')
  echo "# recorded from $(git rev-parse --short HEAD) on $cpu, built with $march"
} > "$work/section"
for c in "${cases[@]}"; do
  IFS='|' read -r name np extra args <<< "$c"
  dir="$work/$name"
  launch="$bin"
  [ "$np" = 1 ] || launch="mpirun --oversubscribe --allow-run-as-root -np $np $bin"
  [ "$extra" = - ] && extra=""
  start=$(date +%s%N)
  # shellcheck disable=SC2086 # the arguments are words
  env $env_line $extra XDG_CACHE_HOME="$work/cache" $launch train $args \
    --config.log.dir="$dir" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  echo "$name: $((($(date +%s%N) - start) / 1000000)) ms" >&2
  {
    echo "case $name $np ${extra:+$extra }$args"
    # Throughput and the time vary from run to run, and comm_bytes is no training result.
    sed -E 's/, "(tokens_per_s|mfu|comm_bytes|time)": [^,}]*//g' "$dir/metrics.jsonl"
    echo "sha256 $(sha256sum "$dir/model.safetensors" | cut -d' ' -f1)"
  } >> "$work/section"
done

{
  echo "# Golden training results: tools/reference/record_golden.sh writes them, golden_training_test"
  echo "# checks them (tools/reference/README.md, \"Golden training\"). One section per vector width"
  echo "# of the kernels' reductions (\"key\"), each case: its command, metrics.jsonl, final weights."
  echo "env $env_line"
  # The other widths' sections, as they were.
  [ -f "$out" ] && awk -v key="key $key" '/^key /{keep = ($0 != key)} keep' "$out"
  cat "$work/section"
} > "$work/fixture"
cp "$work/fixture" "$out"
echo "wrote $out" >&2

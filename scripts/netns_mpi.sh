#!/usr/bin/env bash
# Two-"host" data-parallel run on one machine: two network namespaces (meshlm-h1, meshlm-h2)
# joined by a veth pair, one rank in each, Open MPI over TCP only. Checks that the ranks sat
# in different namespaces, that the losses equal one process with the same global batch, and
# that the veth carried at least the all-reduce bytes; then that a rank killed in one namespace
# is reported at once by the rank in the other (parallel/peer_watch.h), both ways. Tears
# everything down on exit.
# Usage (root): scripts/netns_mpi.sh [path/to/meshlm]    Exit 77: cannot run here (skip).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
meshlm=$(realpath "${1:-$root/build/meshlm}")
steps=${MESHLM_NETNS_STEPS:-20}
ns1=meshlm-h1 ns2=meshlm-h2
if1=meshlm-v1 if2=meshlm-v2
ip1=10.77.0.1 ip2=10.77.0.2

skip() { echo "netns_mpi: SKIP: $*" >&2; exit 77; }
die() { echo "netns_mpi: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (ip netns, veth)"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
command -v mpirun >/dev/null || skip "mpirun (openmpi-bin) is not installed"
[ -x "$meshlm" ] || die "$meshlm not built"

work=""
cleanup() {
  local ns
  for ns in "$ns1" "$ns2"; do
    # Anything of ours still in a namespace (a hung orted) would keep it alive.
    if ip netns pids "$ns" >/dev/null 2>&1; then
      ip netns pids "$ns" | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true   # also removes its end of the veth
    fi
    rm -rf "/etc/netns/$ns"
  done
  rmdir /etc/netns 2>/dev/null || true  # only if we were its last user
  [ -z "$work" ] || rm -rf "$work"
}
cleanup  # a previous run killed with SIGKILL may have left the namespaces behind
work=$(mktemp -d /tmp/meshlm-netns.XXXXXX)
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$ns1" 2>/dev/null || skip "'ip netns add' is not permitted (unprivileged container?)"
ip netns add "$ns2"
ip link add "$if1" netns "$ns1" type veth peer name "$if2" netns "$ns2"
ip -n "$ns1" addr add "$ip1/24" dev "$if1"
ip -n "$ns2" addr add "$ip2/24" dev "$if2"
for ns in "$ns1" "$ns2"; do
  ip -n "$ns" link set lo up
  # `ip netns exec` bind-mounts /etc/netns/NS/hosts over /etc/hosts: per-"host" name resolution
  # without editing the machine's /etc/hosts.
  mkdir -p "/etc/netns/$ns"
  printf '127.0.0.1 localhost\n%s %s\n%s %s\n' "$ip1" "$ns1" "$ip2" "$ns2" >"/etc/netns/$ns/hosts"
done
ip -n "$ns1" link set "$if1" up
ip -n "$ns2" link set "$if2" up

# Open MPI starts the remote daemon with `AGENT HOST COMMAND...` (normally ssh). Here HOST is
# a namespace; its own UTS namespace and hostname make it look like a separate machine to ORTE.
cat >"$work/agent.sh" <<'EOF'
#!/bin/sh
host=$1; shift
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
EOF
chmod +x "$work/agent.sh"
printf '%s slots=1\n%s slots=1\n' "$ns1" "$ns2" >"$work/hosts"

# Each rank reports where it runs, then becomes meshlm.
cat >"$work/rank.sh" <<'EOF'
#!/bin/sh
echo "rank $OMPI_COMM_WORLD_RANK: host $(hostname) netns $(ip netns identify $$) $(readlink /proc/self/ns/net) addr $(ip -o -4 addr show scope global | awk '{print $2, $4}') pid $$"
exec "$@"
EOF
chmod +x "$work/rank.sh"

# The tiny model of tests/mpi/dp_train_test.cpp, a little wider so each step moves ~1 MB.
flags=(--config.data.synthetic=true --config.model.n_layer=2 --config.model.d_model=64
  --config.model.n_head=2 --config.model.vocab_size=300 --config.model.max_seq_len=16
  --config.train.seq_len=16 "--config.train.steps=$steps" --config.log.interval=1
  --config.log.sample_tokens=0 --config.train.threads=1 --config.optim.warmup_steps=2
  --config.optim.grad_clip=1.0 --config.checkpoint.interval=0 --config.train.precision=fp32)

counters() {  # "rx tx" bytes of a veth end, as `ip -s link` reports them
  ip -n "$1" -s link show "$2" | awk '/RX:/ {getline; rx=$1} /TX:/ {getline; tx=$1} END {print rx, tx}'
}
read -r rx0 tx0 < <(counters "$ns1" "$if1")

# mpirun itself runs in meshlm-h1 (as a login node would); only TCP between the namespaces:
# no shared memory (vader), and both the MPI traffic (btl) and the launch channel (oob) on the
# veth subnet.
# shellcheck disable=SC2016  # expanded by the inner sh
launch() {  # launch LOG ENV... -- FLAGS...: 2 ranks, one per namespace
  local log=$1; shift
  local env=()
  while [ "$1" != -- ]; do env+=(-x "$1"); shift; done
  shift
  ip netns exec "$ns1" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$ns1" \
    env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -s KILL 120 mpirun --hostfile "$work/hosts" -np 2 --map-by node \
    --mca plm_rsh_agent "$work/agent.sh" \
    --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
    -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=PASSIVE -x MESHLM_COMM_TIMEOUT=60 "${env[@]}" \
    "$work/rank.sh" "$meshlm" train "${flags[@]}" --config.train.batch_size=2 \
    --config.parallel.data=2 "$@" </dev/null >"$log" 2>&1
}
start=$(date +%s%N)
launch "$work/dp2.log" -- "--config.log.dir=$work/dp2" ||
  { cat "$work/dp2.log"; die "the two-namespace mpirun failed"; }
ms=$((($(date +%s%N) - start) / 1000000))
read -r rx1 tx1 < <(counters "$ns1" "$if1")

grep '^rank ' "$work/dp2.log" | sort
where0=$(grep -c "^rank 0: host $ns1 netns $ns1 " "$work/dp2.log" || true)
where1=$(grep -c "^rank 1: host $ns2 netns $ns2 " "$work/dp2.log" || true)
if [ "$where0" != 1 ] || [ "$where1" != 1 ]; then
  cat "$work/dp2.log"
  die "ranks were not one per namespace"
fi
inodes=$(grep '^rank ' "$work/dp2.log" | grep -o 'net:\[[0-9]*\]' | sort -u | wc -l)
[ "$inodes" = 2 ] || die "both ranks report the same network namespace inode"

# The same global batch (2 x 2 rows) in one process, outside the namespaces.
OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE "$meshlm" train "${flags[@]}" \
  --config.train.batch_size=4 "--config.log.dir=$work/ref" >"$work/ref.log" 2>&1 ||
  { cat "$work/ref.log"; die "the single-process run failed"; }

field() { grep -o "\"$1\": [^,}]*" "$2" | awk '{print $2}'; }
field loss "$work/ref/metrics.jsonl" >"$work/ref.loss"
field loss "$work/dp2/metrics.jsonl" >"$work/dp2.loss"
[ "$(wc -l <"$work/dp2.loss")" -eq "$steps" ] || die "the 2-rank run logged $(wc -l <"$work/dp2.loss") of $steps steps"
# Same tolerance as dp_train_test: 1e-5 relative per step (summation order differs).
paste "$work/ref.loss" "$work/dp2.loss" | awk '
  { d = $1 - $2; if (d < 0) d = -d; r = d / ($1 < 0 ? -$1 : $1); if (r > worst) worst = r
    if (r > 1e-5) { printf "step %d: loss %s (1 process) vs %s (2 namespaces)\n", NR, $1, $2; bad = 1 } }
  END { printf "losses: %d steps, worst relative difference %.2g\n", NR, worst; exit bad }' ||
  die "losses differ from the single-process run"

# Rank 0 sends comm_bytes per step (ring convention) and, with 2 ranks, receives as much: all
# of it must have crossed the veth in each direction.
need=$(field comm_bytes "$work/dp2/metrics.jsonl" | awk '{s += $1} END {print s + 0}')
drx=$((rx1 - rx0)) dtx=$((tx1 - tx0))
[ "$need" -gt 0 ] || die "no comm_bytes in metrics.jsonl"
if [ "$dtx" -lt "$need" ] || [ "$drx" -lt "$need" ]; then
  die "veth $if1 moved tx $dtx / rx $drx bytes, less than the $need bytes of the all-reduces"
fi

echo "netns_mpi: OK: 2 ranks in $ns1 ($ip1) and $ns2 ($ip2), TCP over veth, $steps steps in $((ms / 1000)).$((ms % 1000 / 100)) s (launch included)"
echo "netns_mpi: $if1 tx $dtx B, rx $drx B; the all-reduces need $need B each way ($((need / steps)) B/step)"

# A lost rank across "hosts" (parallel/peer_watch.h): rank VICTIM is held at step 5 and killed;
# the other, in the other namespace, must end at once naming it, its pid and its host.
lose() {
  local victim=$1 other=$((1 - $1)) log="$work/lost$1.log"
  launch "$log" MESHLM_FAULT_RANK="$victim" MESHLM_FAULT_AT=train_step:5 MESHLM_FAULT_KIND=hang -- \
    --config.train.steps=1000 "--config.log.dir=$work/lost$victim" &
  local job=$! i pid
  for i in $(seq 600); do grep -q "hangs at train_step:5" "$log" 2>/dev/null && break; sleep 0.1; done
  pid=$(sed -n "s/^rank $victim: .* pid \([0-9]*\)$/\1/p" "$log")
  [ -n "$pid" ] || { cat "$log"; die "rank $victim did not start"; }
  sleep 0.5
  local t0; t0=$(date +%s%N)
  kill -9 "$pid"
  wait "$job" || true
  local took=$((($(date +%s%N) - t0) / 1000000))
  local host; host=$([ "$victim" = 0 ] && echo "$ns1" || echo "$ns2")
  grep -q "error: rank $other/2: lost rank $victim (pid $pid on $host): its process ended.* while this rank was in .*training step 5" "$log" ||
    { cat "$log"; die "rank $other did not report the loss of rank $victim"; }
  [ "$took" -lt 30000 ] || die "the job took $took ms to end after the loss of rank $victim"
  echo "netns_mpi: OK: rank $victim ($host) killed; rank $other reported it, the job ended in $took ms"
}
lose 1
lose 0

#!/bin/bash
# The DLRM trainer's samples/s with and without its embedding prefetch
# (ps_worker --prefetch), side by side in one run: for each policy and worker
# count, runs with --prefetch=true and --prefetch=false alternate, each on
# two fresh ps_server shards on 127.0.0.1, and the median of the rounds is
# printed (samples/s per worker, averaged over the workers of a run), with
# the CPU per trained sample of all processes of the run (workers and
# shards, user + system, from the shell's `times`), which a loaded machine
# moves less than samples/s.
#
#   bench/ctr_prefetch.sh [BIN_DIR] [ROUNDS] [STEPS]
#   (defaults: build/bin, 3 rounds, 300 steps of 256 examples)
set -euo pipefail
BIN=${1:-build/bin}
ROUNDS=${2:-3}
STEPS=${3:-300}
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

# "user+system seconds" of the finished children of this (sub)shell (`times`
# runs in the calling shell: in a $(...) it would count the subshell's).
children_cpu() {
  times >"$WORK/times"
  sed -n 2p "$WORK/times" | awk '{
    s = 0
    for (i = 1; i <= 2; ++i) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] }
    printf "%.3f", s }'
}

# One run: policy, workers, prefetch -> "samples_per_sec auc cpu_us_per_sample"
# (worker means; CPU of every process of the run). Runs in a subshell of its
# own (process substitution), so `times` counts this run's processes only.
run_once() {
  local policy=$1 workers=$2 prefetch=$3
  rm -f "$WORK"/*.port "$WORK"/*.json
  local pids=()
  for s in 0 1; do
    "$BIN/ps_server" --host=127.0.0.1 --port=0 --port_file="$WORK/s$s.port" \
      --shard_index=$s --num_shards=2 --stats_interval_s=0 >"$WORK/s$s.log" 2>&1 &
    pids+=($!)
  done
  while [ ! -s "$WORK/s0.port" ] || [ ! -s "$WORK/s1.port" ]; do sleep 0.05; done
  local servers="127.0.0.1:$(cat "$WORK/s0.port"),127.0.0.1:$(cat "$WORK/s1.port")"
  local wpids=()
  for ((w = 0; w < workers; ++w)); do
    "$BIN/ps_worker" --servers="$servers" --worker_id=$w --num_workers="$workers" \
      --model=ctr --steps="$STEPS" --eval_examples=2000 --log_every=0 --seed=1 \
      --device=cpu --consistency="$policy" --prefetch="$prefetch" \
      >"$WORK/w$w.json" 2>"$WORK/w$w.log" &
    wpids+=($!)
  done
  wait "${wpids[@]}"
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
  local cpu; children_cpu >"$WORK/cpu"; cpu=$(cat "$WORK/cpu")
  python3 - "$WORK" "$workers" "$cpu" "$STEPS" <<'EOF'
import json, sys
work, n, cpu, steps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
runs = [json.loads(open(f"{work}/w{w}.json").read().strip().splitlines()[-1]) for w in range(n)]
samples = n * steps * 256
print(f'{sum(r["samples_per_sec"] for r in runs) / n:.0f} {sum(r["auc"] for r in runs) / n:.4f} '
      f'{cpu / samples * 1e6:.1f}')
EOF
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "ctr_prefetch: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-7s %-9s %12s %8s %10s  %s\n' policy workers prefetch samples/s auc cpu_us/smp \
  "rounds (samples/s; cpu us per sample)"
for config in "async 1" "async 2" "sync 2"; do
  read -r policy workers <<<"$config"
  declare -A rates=() aucs=() cpus=()
  for ((r = 0; r < ROUNDS; ++r)); do
    for prefetch in true false; do
      read -r rate auc cpu < <(run_once "$policy" "$workers" "$prefetch")
      rates[$prefetch]+="$rate "
      aucs[$prefetch]+="$auc "
      cpus[$prefetch]+="$cpu "
    done
  done
  for prefetch in true false; do
    med=$(tr ' ' '\n' <<<"${rates[$prefetch]}" | grep . | median)
    auc=$(tr ' ' '\n' <<<"${aucs[$prefetch]}" | grep . | median)
    cpu=$(tr ' ' '\n' <<<"${cpus[$prefetch]}" | grep . | median)
    printf '%-6s %-7s %-9s %12.0f %8.4f %10.1f  %s; %s\n' "$policy" "$workers" "$prefetch" \
      "$med" "$auc" "$cpu" "${rates[$prefetch]% }" "${cpus[$prefetch]% }"
  done
done
echo "ctr_prefetch: done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"

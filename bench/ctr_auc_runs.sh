#!/bin/bash
# One asynchronous DLRM run (ps_worker --model=ctr) on two fresh ps_server
# shards on 127.0.0.1, printing the final AUC of each worker on one line, in
# worker order (nan for a worker without a summary line). Used to count how
# often a setting falls into the DLRM's early stall (AUC ~0.655 against
# ~0.745; docs/BENCHMARKS.md, "The 16-worker DLRM's AUC of 0.655").
#
#   bench/ctr_auc_runs.sh BIN_DIR WORKERS STEPS SEED [ps_worker flags...]
#   e.g. for i in 1 2 3; do bench/ctr_auc_runs.sh build/bin 16 200 1; done
set -euo pipefail
BIN=$1 WORKERS=$2 STEPS=$3 SEED=$4
shift 4
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

shards=()
for s in 0 1; do
  "$BIN/ps_server" --host=127.0.0.1 --port=0 --port_file="$WORK/s$s.port" \
    --shard_index=$s --num_shards=2 --stats_interval_s=0 >"$WORK/s$s.log" 2>&1 &
  shards+=($!)
done
while [ ! -s "$WORK/s0.port" ] || [ ! -s "$WORK/s1.port" ]; do sleep 0.05; done
servers="127.0.0.1:$(cat "$WORK/s0.port"),127.0.0.1:$(cat "$WORK/s1.port")"
workers=()
for ((w = 0; w < WORKERS; ++w)); do
  "$BIN/ps_worker" --servers="$servers" --worker_id=$w --num_workers="$WORKERS" \
    --model=ctr --steps="$STEPS" --eval_examples=2000 --log_every=0 \
    --seed="$SEED" --device=cpu --consistency=async "$@" \
    >"$WORK/w$w.json" 2>"$WORK/w$w.log" &
  workers+=($!)
done
wait "${workers[@]}" || true
kill "${shards[@]}"
wait "${shards[@]}" 2>/dev/null || true
python3 - "$WORK" "$WORKERS" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
aucs = []
for w in range(n):
    try:
        last = open(f"{work}/w{w}.json").read().strip().splitlines()[-1]
        aucs.append(f'{json.loads(last)["auc"]:.4f}')
    except (OSError, IndexError, KeyError, ValueError):
        aucs.append("nan")
print(" ".join(aucs))
PY

#!/usr/bin/env bash
# Convergence through a crash (issue 11 part 7): the Fashion-MNIST MLP
# trained by two ps_worker processes against two ps_server shards, under
# sync and under async, once undisturbed and once with shard 1 killed with
# -9 and restarted from its checkpoint twice during the run. Writes one CSV
# row per run (final test accuracy, restarts the workers rode through,
# wall time) and a bar plot of the accuracies.
#
#   bench/crash_convergence.sh [BUILD_DIR] [OUT_DIR] [PLOTS_DIR]
#       defaults: build, crash_results, docs/plots
#   env: STEPS (per worker, default 1500), SEEDS (default "1"),
#        MODES (default "sync async"), PLOT_NAME (default crash_convergence:
#        PLOTS_DIR/PLOT_NAME.png), DATA_DIR (default
#        /usr/share/datasets/fashion-mnist), PLOT_ONLY=1 (plot OUT_DIR's CSV
#        again, run nothing)
#
# Exits 77 (skipped) when the dataset (Debian package dataset-fashion-mnist)
# is missing. The plot needs python3-matplotlib; without it the CSV is kept
# and the plot is skipped with a message.
set -euo pipefail

BUILD="${1:-build}"
OUT="${2:-crash_results}"
PLOTS="${3:-docs/plots}"
STEPS="${STEPS:-1500}"
SEEDS="${SEEDS:-1}"
MODES="${MODES:-sync async}"
PLOT_NAME="${PLOT_NAME:-crash_convergence}"
DATA_DIR="${DATA_DIR:-/usr/share/datasets/fashion-mnist}"
BIN="$BUILD/bin"

if [[ ! -f "$DATA_DIR/train-images-idx3-ubyte.gz" ]]; then
  echo "crash_convergence: no Fashion-MNIST in $DATA_DIR (apt install dataset-fashion-mnist); skipped" >&2
  exit 77
fi
for b in ps_server ps_worker; do
  [[ -x "$BIN/$b" ]] || { echo "crash_convergence: $BIN/$b not built" >&2; exit 2; }
done
mkdir -p "$OUT" "$PLOTS"
CSV="$OUT/crash_convergence.csv"

# Waits until file $1 holds a port (the shard serves), at most 60 s.
await_port() {
  for _ in $(seq 600); do
    [[ -s "$1" ]] && return 0
    sleep 0.1
  done
  echo "crash_convergence: no port in $1" >&2
  return 1
}

# Starts shard $1 of run dir $2 on port $3 (0: any); first start when $4 = 1.
start_shard() {
  local s="$1" dir="$2" port="$3" first="$4" n
  n=$(find "$dir" -maxdepth 1 -name "shard$s.*.log" | wc -l)
  rm -f "$dir/port$s"
  local args=(--shard_index="$s" --num_shards=2 --host=127.0.0.1 --port="$port"
              --port_file="$dir/port$s" --checkpoint_dir="$dir/ckpt$s"
              --checkpoint_every_versions=20 --stats_interval_s=0)
  [[ "$first" == 1 ]] && args+=(--start_empty)
  "$BIN/ps_server" "${args[@]}" >"$dir/shard$s.$n.log" 2>&1 &
  echo $! >"$dir/pid$s"
  await_port "$dir/port$s"
}

# The number in the JSON summary's field $2 of file $1.
json_field() {
  /usr/bin/python3 -c '
import json, sys
lines = open(sys.argv[1]).read().strip().splitlines()
print(json.loads(lines[-1]).get(sys.argv[2], "") if lines else "")' "$1" "$2"
}

run() {
  local mode="$1" faulted="$2" seed="$3"
  local dir="$OUT/$mode-$faulted-$seed"
  rm -rf "$dir" && mkdir -p "$dir"
  start_shard 0 "$dir" 0 1
  start_shard 1 "$dir" 0 1
  local servers="127.0.0.1:$(cat "$dir/port0"),127.0.0.1:$(cat "$dir/port1")"
  local port1; port1=$(cat "$dir/port1")
  local begin; begin=$(date +%s.%N)
  local workers=()
  for w in 0 1; do
    "$BIN/ps_worker" --servers="$servers" --worker_id="$w" --num_workers=2 --model=mlp \
      --steps="$STEPS" --consistency="$mode" --seed="$seed" --data_dir="$DATA_DIR" \
      --log_every=0 >"$dir/worker$w.json" 2>"$dir/worker$w.log" &
    workers+=($!)
  done
  if [[ "$faulted" == 1 ]]; then
    # Two kills of shard 1, at a third and two thirds of the undisturbed
    # run's wall time (it ran just before).
    local third; third=$(echo "${CLEAN_WALL[$mode]} / 3" | bc -l)
    for _ in 1 2; do
      sleep "$third"
      # Not before its first checkpoint (it refuses to start without one).
      until compgen -G "$dir/ckpt1/ckpt-*" >/dev/null; do sleep 0.1; done
      kill -9 "$(cat "$dir/pid1")"
      wait "$(cat "$dir/pid1")" 2>/dev/null || true
      sleep 0.5  # as systemd's RestartSec would
      start_shard 1 "$dir" "$port1" 0
    done
  fi
  for pid in "${workers[@]}"; do wait "$pid" || echo "crash_convergence: a worker of $dir failed (see its log)" >&2; done
  local end; end=$(date +%s.%N)
  kill "$(cat "$dir/pid0")" "$(cat "$dir/pid1")" 2>/dev/null || true
  wait 2>/dev/null || true
  local a0 a1 r0 r1 d0 d1
  a0=$(json_field "$dir/worker0.json" test_accuracy)
  a1=$(json_field "$dir/worker1.json" test_accuracy)
  r0=$(json_field "$dir/worker0.json" shard_restarts)
  r1=$(json_field "$dir/worker1.json" shard_restarts)
  d0=$(json_field "$dir/worker0.json" push_redos)
  d1=$(json_field "$dir/worker1.json" push_redos)
  local wall; wall=$(echo "$end - $begin" | bc)
  [[ "$faulted" == 0 ]] && CLEAN_WALL[$mode]="$wall"
  printf '%s,%s,%s,%s,%s,%s,%s,%s,%.1f,%s,%s\n' "$mode" "$faulted" "$seed" "$STEPS" "$a0" "$a1" "$r0" "$r1" \
    "$wall" "$d0" "$d1" | tee -a "$CSV"
}

declare -A CLEAN_WALL

if [[ "${PLOT_ONLY:-0}" != 1 ]]; then
  echo "consistency,faulted,seed,steps,accuracy_w0,accuracy_w1,shard_restarts_w0,shard_restarts_w1,wall_s,push_redos_w0,push_redos_w1" > "$CSV"
  for seed in $SEEDS; do
    for mode in $MODES; do
      run "$mode" 0 "$seed"
      run "$mode" 1 "$seed"
    done
  done
fi

if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 - "$CSV" "$PLOTS/$PLOT_NAME.png" <<'EOF'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
labels, values, colors = [], [], []
for mode in ("sync", "async"):
    for faulted in ("0", "1"):
        runs = [r for r in rows if r["consistency"] == mode and r["faulted"] == faulted]
        if not runs:
            continue
        accs = [100 * float(r[k]) for r in runs for k in ("accuracy_w0", "accuracy_w1") if r[k]]
        labels.append(f"{mode}\n{'2 shard kills' if faulted == '1' else 'no fault'}")
        values.append(sum(accs) / len(accs) if accs else None)  # None: the workers failed
        colors.append("#dd8452" if faulted == "1" else "#4c72b0")
known = [v for v in values if v is not None]
bottom = min(known) - 5
fig, ax = plt.subplots(figsize=(6.5, 3.5))
bars = ax.bar(labels, [v if v is not None else bottom for v in values], color=colors)
for b, v in zip(bars, values):
    text = f"{v:.2f}" if v is not None else "workers exited"
    ax.text(b.get_x() + b.get_width() / 2, (v if v is not None else bottom) + 0.2, text, ha="center")
ax.set_ylim(bottom, max(known) + 2)
ax.set_ylabel("test accuracy (%)")
ax.set_title("Fashion-MNIST MLP, 2 workers x 2 shards, shard 1 killed -9 twice", fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print("crash_convergence: wrote", sys.argv[2])
EOF
else
  echo "crash_convergence: python3-matplotlib missing; no plot (the CSV is $CSV)" >&2
fi

#!/usr/bin/env bash
# The recommender policy experiment: the same DLRM run (ps_worker
# --model=ctr, same seed, data and steps) under each consistency policy, on
# S ps_server shards and W ps_worker processes on 127.0.0.1; then a table of
# wall time, the final model's excess log-loss and AUC, and the staleness
# seen by head ids against tail ids (ps_worker --row_tau).
#
#   bench/recsys_policies.sh [--workers N] [--shards N] [--steps N]
#       [--batch_size N] [--policies LIST] [--eval_examples N]
#       [--worker_eval_examples N] [--ctr_examples N] [--lr X] [--seed N]
#       [--log_every N] [--bin_dir DIR] [--out_dir DIR] [-- ps_worker flags...]
#
#   nice bench/recsys_policies.sh                    # 16 workers, ~12 min on 2 cores
#   bench/recsys_policies.sh --steps 2000 --policies async,sync
#
# Policies: a comma-separated list of async, sync, sspN (SSP with bound N,
# e.g. ssp2); default async,sync,ssp2,ssp8.
#
# Each policy gets fresh shards. Every worker trains --steps steps of
# --batch_size examples; by default the training set is exactly one pass
# (ctr_examples = workers x steps x batch_size), so no example is seen twice
# and every policy sees the same examples. Each worker evaluates itself at its
# end on --worker_eval_examples examples (cheap; in its JSON, not in the
# table). Once every worker has finished, one more ps_worker (--steps=0)
# evaluates the final server model on --eval_examples examples: that is the
# table's log-loss, excess log-loss and AUC. "train wall s" runs from the
# first worker's first step to the last worker's own evaluation (from the
# workers' log stamps: process start-up, which takes a while with many
# workers on few cores, is left out); samples/s is all workers' training
# examples over that time; pull wait is the workers' mean time per pull.
#
# Row staleness (ps_worker --row_tau; head ids are those in at least 1/256
# of examples, see worker/trainer/head_tail_row_tau.h): means and "τ=0" (the
# share of rows nobody else updated between the pull and the push) are over
# every (push, distinct row) of every worker; p99 is the workers' p99
# averaged, max the largest. Table τ is the embedding table's τ per (push,
# touched shard) of the same pushes. "head share of rows" is the head's part
# of the (push, distinct row) pairs. Everything lands in --out_dir (default a
# new temporary directory):
# per policy the shard and worker logs, every worker's JSON, ps_admin stats
# of both tables, and results.csv / results.md with the table.
#
# Every process it starts is stopped when it exits, however it exits.
# Exit status: 0 when every run of every policy finished.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT

WORKERS=16
SHARDS=2
STEPS=400
BATCH=256
POLICIES="async,sync,ssp2,ssp8"
EVAL_EXAMPLES=50000
WORKER_EVAL_EXAMPLES=2000
CTR_EXAMPLES=""
LR=""
SEED=1
LOG_EVERY=100
BUILD_DIR="${TAUPS_BUILD_DIR:-build}"
[[ "$BUILD_DIR" == /* ]] || BUILD_DIR="$REPO_ROOT/$BUILD_DIR"
BIN_DIR="$BUILD_DIR/bin"
OUT_DIR=""
EXTRA_FLAGS=()
readonly PORT_WAIT_S=30
readonly GRACE_S=10

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}
die() {
  printf 'recsys_policies: error: %s\n' "$*" >&2
  exit 1
}
say() { printf '==> %s\n' "$*"; }
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --workers) need_value "$@"; WORKERS="$2"; shift 2 ;;
    --shards) need_value "$@"; SHARDS="$2"; shift 2 ;;
    --steps) need_value "$@"; STEPS="$2"; shift 2 ;;
    --batch_size) need_value "$@"; BATCH="$2"; shift 2 ;;
    --policies) need_value "$@"; POLICIES="$2"; shift 2 ;;
    --eval_examples) need_value "$@"; EVAL_EXAMPLES="$2"; shift 2 ;;
    --worker_eval_examples) need_value "$@"; WORKER_EVAL_EXAMPLES="$2"; shift 2 ;;
    --ctr_examples) need_value "$@"; CTR_EXAMPLES="$2"; shift 2 ;;
    --lr) need_value "$@"; LR="$2"; shift 2 ;;
    --seed) need_value "$@"; SEED="$2"; shift 2 ;;
    --log_every) need_value "$@"; LOG_EVERY="$2"; shift 2 ;;
    --bin_dir) need_value "$@"; BIN_DIR="$2"; shift 2 ;;
    --out_dir) need_value "$@"; OUT_DIR="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; EXTRA_FLAGS=("$@"); break ;;
    *) die "unknown option '$1' (ps_worker flags go after --; see --help)" ;;
  esac
done

for v in WORKERS SHARDS STEPS BATCH EVAL_EXAMPLES WORKER_EVAL_EXAMPLES SEED; do
  [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -gt 0 ]] ||
    die "--$(tr '[:upper:]' '[:lower:]' <<<"$v") must be a positive integer"
done
[[ -z "$CTR_EXAMPLES" ]] && CTR_EXAMPLES=$((WORKERS * STEPS * BATCH))
for bin in ps_server ps_worker ps_admin; do
  [[ -x "$BIN_DIR/$bin" ]] || die "$BIN_DIR/$bin not found; build first or pass --bin_dir"
done
command -v python3 >/dev/null || die "python3 is needed for the results table"

# policy name -> ps_worker flags
policy_flags() {
  case "$1" in
    async) echo "--consistency=async" ;;
    sync) echo "--consistency=sync" ;;
    ssp[0-9]*) echo "--consistency=ssp --ssp_bound=${1#ssp}" ;;
    *) return 1 ;;
  esac
}
IFS=',' read -r -a POLICY_LIST <<<"$POLICIES"
for p in "${POLICY_LIST[@]}"; do
  policy_flags "$p" >/dev/null || die "unknown policy '$p' (async, sync, sspN)"
done

if [[ -n "$OUT_DIR" ]]; then
  mkdir -p "$OUT_DIR"
  OUT_DIR="$(cd "$OUT_DIR" && pwd)"
else
  OUT_DIR="$(mktemp -d "${TMPDIR:-/tmp}/taups-recsys.XXXXXX")"
fi
readonly OUT_DIR

# --- process bookkeeping: everything started is stopped on exit -------------
PIDS=()
alive() { kill -0 "$1" 2>/dev/null; }
stop_all() {
  local pid live=()
  for pid in "${PIDS[@]}"; do alive "$pid" && live+=("$pid"); done
  if [[ ${#live[@]} -gt 0 ]]; then
    kill -TERM "${live[@]}" 2>/dev/null || true
    local deadline=$((SECONDS + GRACE_S))
    for pid in "${live[@]}"; do
      while alive "$pid" && [[ $SECONDS -lt $deadline ]]; do sleep 0.1; done
      alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    done
    wait "${live[@]}" 2>/dev/null || true
  fi
  PIDS=()
}
on_exit() { stop_all; }
trap on_exit EXIT
trap 'printf "\nrecsys_policies: interrupted\n" >&2; exit 130' INT
trap 'printf "\nrecsys_policies: terminated\n" >&2; exit 143' TERM

# start OUTFILE ERRFILE COMMAND...: runs COMMAND in the background.
start() {
  local out="$1" err="$2"
  shift 2
  if [[ "$out" == "$err" ]]; then "$@" >"$out" 2>&1 & else "$@" >"$out" 2>"$err" & fi
  PIDS+=("$!")
}

common_flags() {
  local flags=(--model=ctr --seed="$SEED" --batch_size="$BATCH"
               --ctr_examples="$CTR_EXAMPLES" --num_workers="$WORKERS" --device=cpu)
  [[ -n "$LR" ]] && flags+=(--lr="$LR")
  printf '%s\n' "${flags[@]}"
}

# run_policy NAME: one whole run; writes $OUT_DIR/NAME/.
run_policy() {
  local name="$1" dir="$OUT_DIR/$1" s w
  rm -rf "$dir"
  mkdir -p "$dir"
  local -a pflags common
  read -r -a pflags <<<"$(policy_flags "$name")"
  mapfile -t common < <(common_flags)

  local shard_pids=()
  for ((s = 0; s < SHARDS; s++)); do
    start "$dir/shard$s.log" "$dir/shard$s.log" "$BIN_DIR/ps_server" \
      --shard_index="$s" --num_shards="$SHARDS" --host=127.0.0.1 --port=0 \
      --port_file="$dir/shard$s.port"
    shard_pids+=("${PIDS[-1]}")
  done
  local servers="" port deadline
  for ((s = 0; s < SHARDS; s++)); do
    deadline=$((SECONDS + PORT_WAIT_S))
    until [[ -s "$dir/shard$s.port" ]]; do
      alive "${shard_pids[$s]}" || die "shard $s exited; see $dir/shard$s.log"
      [[ $SECONDS -lt $deadline ]] || die "shard $s wrote no port file"
      sleep 0.1
    done
    port="$(tr -dc '0-9' <"$dir/shard$s.port")"
    servers+="${servers:+,}127.0.0.1:$port"
  done

  say "$name: $WORKERS workers x $STEPS steps x $BATCH examples (${pflags[*]})"
  local worker_pids=() t0 t1
  t0=$(date +%s.%N)
  for ((w = 0; w < WORKERS; w++)); do
    start "$dir/worker$w.out" "$dir/worker$w.log" "$BIN_DIR/ps_worker" \
      --servers="$servers" --worker_id="$w" "${common[@]}" "${pflags[@]}" \
      --steps="$STEPS" --eval_examples="$WORKER_EVAL_EXAMPLES" --row_tau \
      --log_every="$LOG_EVERY" "${EXTRA_FLAGS[@]}"
    worker_pids+=("${PIDS[-1]}")
  done
  local failed=0 rc
  for ((w = 0; w < WORKERS; w++)); do
    rc=0
    wait "${worker_pids[$w]}" || rc=$?
    if [[ $rc -ne 0 ]]; then
      printf '%s: worker%d failed (exit %d); see %s\n' "$name" "$w" "$rc" \
        "$dir/worker$w.log" >&2
      failed=$((failed + 1))
    fi
  done
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.1f}')" >"$dir/wall_s"

  for table in ctr_embeddings ctr_mlp; do
    "$BIN_DIR/ps_admin" --servers="$servers" --table="$table" stats \
      >"$dir/stats_$table.txt" 2>&1 || true
  done
  # The final model, evaluated once after every worker finished.
  local eval_rc=0
  "$BIN_DIR/ps_worker" --servers="$servers" --worker_id=0 "${common[@]}" \
    "${pflags[@]}" --steps=0 --eval_examples="$EVAL_EXAMPLES" \
    "${EXTRA_FLAGS[@]}" >"$dir/final_eval.out" 2>"$dir/final_eval.log" ||
    eval_rc=$?
  [[ $eval_rc -eq 0 ]] || { printf '%s: final evaluation failed; see %s\n' \
    "$name" "$dir/final_eval.log" >&2; failed=$((failed + 1)); }
  stop_all
  say "$name: done in $(cat "$dir/wall_s") s ($failed failure(s))"
  return "$failed"
}

say "output: $OUT_DIR"
say "flags: workers $WORKERS, shards $SHARDS, steps $STEPS, batch $BATCH," \
    "ctr_examples $CTR_EXAMPLES, seed $SEED, eval $EVAL_EXAMPLES," \
    "extra: ${EXTRA_FLAGS[*]:-none}"
total_failed=0
for p in "${POLICY_LIST[@]}"; do
  run_policy "$p" || total_failed=$((total_failed + 1))
done

# --- results ------------------------------------------------------------------
BATCH="$BATCH" python3 - "$OUT_DIR" "${POLICY_LIST[@]}" <<'PY'
import datetime, glob, json, os, re, sys

out_dir, policies = sys.argv[1], sys.argv[2:]
NAN = float("nan")

def last_json(path):
    try:
        lines = [l for l in open(path) if l.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\]")
def stamps(path, marker):
    """Times of the log lines of `path` that contain `marker`."""
    times = []
    try:
        for line in open(path, errors="replace"):
            m = STAMP.match(line)
            if m and marker in line:
                times.append(datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f"))
    except OSError:
        pass
    return times

def weighted(groups, key):
    n = sum(g["count"] for g in groups)
    return sum(g["count"] * g[key] for g in groups) / n if n else NAN

def mean(values):
    return sum(values) / len(values) if values else NAN

def triple(groups, digits):
    if not groups:
        return "–"
    return (f"{weighted(groups, 'mean'):.{digits}f} / "
            f"{mean([g['p99'] for g in groups]):.1f} / "
            f"{max(g['max'] for g in groups):.0f}")

header = ["policy", "train wall s", "samples/s", "pull wait ms",
          "excess logloss", "AUC", "head τ mean/p99/max", "head τ=0",
          "tail τ mean/p99/max", "tail τ=0", "table τ mean/p99/max",
          "head share of rows"]
rows = []
for p in policies:
    d = os.path.join(out_dir, p)
    logs = sorted(glob.glob(os.path.join(d, "worker*.log")))
    workers = [last_json(f) for f in sorted(glob.glob(os.path.join(d, "worker*.out")))]
    if None in workers:
        print(f"warning: {p}: some workers printed no JSON summary")
    workers = [w for w in workers if w]
    final = last_json(os.path.join(d, "final_eval.out")) or {}
    # From the first worker's first step to the last worker's last evaluation.
    begins = [t for f in logs for t in stamps(f, ": DLRM,")]
    ends = [t for f in logs for t in stamps(f, " eval step ")]
    wall = (max(ends) - min(begins)).total_seconds() if begins and ends else NAN
    examples = sum(w.get("steps", 0) for w in workers) * int(os.environ["BATCH"])
    taus = [w["row_tau"] for w in workers if "row_tau" in w]
    head = [t["head"] for t in taus]
    tail = [t["tail"] for t in taus]
    table = [t["table"] for t in taus]
    heads = sum(g["count"] for g in head)
    tails = sum(g["count"] for g in tail)
    rows.append([
        p, f"{wall:.0f}", f"{examples / wall:.0f}" if wall > 0 else "nan",
        f"{mean([w.get('pull_wait_ms', 0) for w in workers]):.1f}",
        f"{final.get('excess_logloss', NAN):.4f}", f"{final.get('auc', NAN):.4f}",
        triple(head, 2), f"{weighted(head, 'zero'):.2f}",
        triple(tail, 2), f"{weighted(tail, 'zero'):.2f}",
        triple(table, 2),
        f"{heads / (heads + tails):.3f}" if heads + tails else "nan",
    ])

lines = ["| " + " | ".join(header) + " |",
         "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
lines += ["| " + " | ".join(r) + " |" for r in rows]
table_md = "\n".join(lines)
with open(os.path.join(out_dir, "results.md"), "w") as f:
    f.write(table_md + "\n")
with open(os.path.join(out_dir, "results.csv"), "w") as f:
    f.write(",".join(header) + "\n")
    f.writelines(",".join(r) + "\n" for r in rows)
print()
print(table_md)
finals = [last_json(os.path.join(out_dir, p, "final_eval.out")) for p in policies]
final_any = next((f for f in finals if f), None)
if final_any:
    print(f"\neval set: planted (Bayes) logloss "
          f"{final_any.get('planted_logloss', NAN):.4f}, planted AUC "
          f"{final_any.get('planted_auc', NAN):.4f}, best constant logloss "
          f"{final_any.get('constant_logloss', NAN):.4f}")
any_tau = next((t for w in [last_json(f) for f in glob.glob(os.path.join(out_dir, policies[0], "worker*.out"))]
                if w and "row_tau" in w for t in [w["row_tau"]]), None)
if any_tau:
    print(f"head ids: {any_tau['head_ids']} (probability per example >= "
          f"{any_tau['head_min_prob']:.4g}); the rest are tail ids")
PY

say "results: $OUT_DIR/results.md"
[[ $total_failed -eq 0 ]] || die "$total_failed policy run(s) had failures"

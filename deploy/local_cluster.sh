#!/usr/bin/env bash
# Runs a whole tauPS cluster on 127.0.0.1: S ps_server shards on free ports,
# then W ps_worker processes training against them. Prints every process's
# output prefixed with its name, then each worker's final JSON and a summary.
#
#   deploy/local_cluster.sh [--shards N] [--workers N] [--bin_dir DIR]
#                           [--server_flag FLAG]... [--log_dir DIR]
#                           [--straggler K] [-- ps_worker flags...]
#
#   deploy/local_cluster.sh                                # 2 shards, 4 workers, mlp
#   deploy/local_cluster.sh --workers 8 -- --model=ctr --steps=2000
#
# Stragglers: --straggler K makes the last worker K times slower
# (ps_worker --slowdown=K). Watch the shards' stats lines name it and the
# other workers' pull_wait grow under sync, then vanish under semi_sync:
#   deploy/local_cluster.sh --straggler 4 --server_flag --stats_interval_s=2 \
#     -- --steps=300 --consistency=sync
#   deploy/local_cluster.sh --straggler 4 --server_flag --stats_interval_s=2 \
#     -- --steps=300 --consistency=semi_sync --quorum=0.75
#
# Every process it starts is stopped when it exits, however it exits (SIGTERM,
# then SIGKILL after a grace period). Logs stay in the directory it names
# (a new temporary one, or --log_dir): shardN.log, workerN.log (stderr) and
# workerN.out (stdout, ending with the JSON summary).
# Exit status: 0 when every worker finished and printed its JSON summary.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT

SHARDS=2
WORKERS=4
BUILD_DIR="${TAUPS_BUILD_DIR:-build}"
[[ "$BUILD_DIR" == /* ]] || BUILD_DIR="$REPO_ROOT/$BUILD_DIR"
BIN_DIR="$BUILD_DIR/bin"
LOG_DIR=""
STRAGGLER=""
SERVER_FLAGS=()
WORKER_FLAGS=()
readonly PORT_WAIT_S=30   # how long a shard may take to write its port file
readonly GRACE_S=10       # SIGTERM -> SIGKILL

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

die() {
  printf 'local_cluster: error: %s\n' "$*" >&2
  exit 1
}

need_value() {
  [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --shards) need_value "$@"; SHARDS="$2"; shift 2 ;;
    --shards=*) SHARDS="${1#*=}"; shift ;;
    --workers) need_value "$@"; WORKERS="$2"; shift 2 ;;
    --workers=*) WORKERS="${1#*=}"; shift ;;
    --bin_dir) need_value "$@"; BIN_DIR="$2"; shift 2 ;;
    --bin_dir=*) BIN_DIR="${1#*=}"; shift ;;
    --log_dir) need_value "$@"; LOG_DIR="$2"; shift 2 ;;
    --log_dir=*) LOG_DIR="${1#*=}"; shift ;;
    --straggler) need_value "$@"; STRAGGLER="$2"; shift 2 ;;
    --straggler=*) STRAGGLER="${1#*=}"; shift ;;
    --server_flag) need_value "$@"; SERVER_FLAGS+=("$2"); shift 2 ;;
    --server_flag=*) SERVER_FLAGS+=("${1#*=}"); shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; WORKER_FLAGS=("$@"); break ;;
    *) die "unknown option '$1' (ps_worker flags go after --; see --help)" ;;
  esac
done

[[ "$SHARDS" =~ ^[1-9][0-9]*$ ]] || die "--shards must be a positive integer"
[[ "$WORKERS" =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive integer"
[[ -z "$STRAGGLER" || "$STRAGGLER" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  die "--straggler must be a number (the slowdown factor, e.g. 4)"
for bin in ps_server ps_worker; do
  [[ -x "$BIN_DIR/$bin" ]] ||
    die "$BIN_DIR/$bin not found; build first (./deploy/quickstart.sh demo," \
        "or ninja -C build) or pass --bin_dir"
done

if [[ -n "$LOG_DIR" ]]; then
  mkdir -p "$LOG_DIR"
  RUN_DIR="$(cd "$LOG_DIR" && pwd)"
else
  RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/taups-cluster.XXXXXX")"
fi
readonly RUN_DIR
# A reused --log_dir must not hand out the ports of an earlier run.
rm -f "$RUN_DIR"/shard*.port "$RUN_DIR/processes.txt"

say() { printf '==> %s\n' "$*"; }

# --- process bookkeeping ----------------------------------------------------
# Each process writes into FIFOs read by a filter that copies the raw text to
# a log file and prints it prefixed with the process's name. PIDS holds the
# processes themselves (what gets signalled); FILTER_PIDS the filters, which
# end on their own once their writer has exited.
PIDS=()
FILTER_PIDS=()

# start_filter NAME FIFO LOGFILE: prints FIFO's lines as "[NAME] line".
start_filter() {
  local name="$1" fifo="$2" log="$3"
  (
    trap '' INT TERM  # drain until the writer closes, even on Ctrl-C
    tee "$log" <"$fifo" | sed -u "s/^/[$name] /"
  ) &
  FILTER_PIDS+=("$!")
}

# launch NAME STREAMS COMMAND...: starts COMMAND in the background; its output
# goes to the terminal, prefixed, and to files in RUN_DIR. STREAMS=merged:
# stdout and stderr both to NAME.log. STREAMS=split: stdout to NAME.out (where
# ps_worker prints its JSON summary), stderr to NAME.log.
launch() {
  local name="$1" streams="$2"
  shift 2
  # A signal arriving between the fork and the bookkeeping below would leave
  # a process nobody stops: hold signals until its PID is recorded.
  hold_signals
  rm -f "$RUN_DIR/$name".*
  mkfifo "$RUN_DIR/$name.stderr.fifo"
  start_filter "$name" "$RUN_DIR/$name.stderr.fifo" "$RUN_DIR/$name.log"
  if [[ "$streams" == split ]]; then
    mkfifo "$RUN_DIR/$name.stdout.fifo"
    start_filter "$name" "$RUN_DIR/$name.stdout.fifo" "$RUN_DIR/$name.out"
    "$@" >"$RUN_DIR/$name.stdout.fifo" 2>"$RUN_DIR/$name.stderr.fifo" &
  else
    "$@" >"$RUN_DIR/$name.stderr.fifo" 2>&1 &
  fi
  PIDS+=("$!")
  printf '%s %s\n' "$!" "$*" >>"$RUN_DIR/processes.txt"
  release_signals
}

alive() { kill -0 "$1" 2>/dev/null; }

# Waits (up to 5 s) for the filters to print their last lines and exit. A
# filter whose writer never started (the script was interrupted mid-launch)
# is blocked opening its FIFO; opening the FIFO read-write here releases it.
drain_filters() {
  local pid fifo live tries=0
  while :; do
    live=()
    for pid in "${FILTER_PIDS[@]}"; do
      if alive "$pid"; then live+=("$pid"); fi
    done
    [[ ${#live[@]} -eq 0 ]] && break
    if [[ $tries -ge 50 ]]; then
      # Still stuck: end the filter subshells and their tee/sed children.
      for pid in "${live[@]}"; do
        pkill -KILL -P "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
      done
      break
    fi
    for fifo in "$RUN_DIR"/*.fifo; do
      if [[ -p "$fifo" ]]; then : 1<>"$fifo"; fi
    done
    tries=$((tries + 1))
    sleep 0.1
  done
  if [[ ${#FILTER_PIDS[@]} -gt 0 ]]; then
    wait "${FILTER_PIDS[@]}" 2>/dev/null || true
  fi
}

CLEANED_UP=0
cleanup() {
  [[ $CLEANED_UP -eq 1 ]] && return
  CLEANED_UP=1
  local pid to_stop=()
  for pid in "${PIDS[@]}"; do
    if alive "$pid"; then to_stop+=("$pid"); fi
  done
  if [[ ${#to_stop[@]} -gt 0 ]]; then
    say "stopping ${#to_stop[@]} process(es) (SIGTERM, SIGKILL after ${GRACE_S}s)"
    kill -TERM "${to_stop[@]}" 2>/dev/null || true
    local deadline=$((SECONDS + GRACE_S))
    for pid in "${to_stop[@]}"; do
      while alive "$pid" && [[ $SECONDS -lt $deadline ]]; do sleep 0.1; done
      if alive "$pid"; then
        printf 'local_cluster: pid %s ignored SIGTERM; sending SIGKILL\n' \
          "$pid" >&2
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done
  fi
  if [[ ${#PIDS[@]} -gt 0 ]]; then wait "${PIDS[@]}" 2>/dev/null || true; fi
  drain_filters
  rm -f "$RUN_DIR"/*.fifo
  say "logs: $RUN_DIR"
}

on_signal() {
  printf '\nlocal_cluster: interrupted (%s), shutting down\n' "$1" >&2
  cleanup
  if [[ "$1" == INT ]]; then exit 130; else exit 143; fi
}

HELD_SIGNAL=""
hold_signals() {
  trap 'HELD_SIGNAL=${HELD_SIGNAL:-INT}' INT
  trap 'HELD_SIGNAL=${HELD_SIGNAL:-TERM}' TERM
}
release_signals() {
  trap 'on_signal INT' INT
  trap 'on_signal TERM' TERM
  if [[ -n "$HELD_SIGNAL" ]]; then on_signal "$HELD_SIGNAL"; fi
}

trap cleanup EXIT
release_signals

# --- shards -----------------------------------------------------------------
say "run directory: $RUN_DIR"
say "starting $SHARDS ps_server shard(s) on 127.0.0.1"
SHARD_PIDS=()
for ((s = 0; s < SHARDS; s++)); do
  launch "shard$s" merged "$BIN_DIR/ps_server" --shard_index="$s" \
    --num_shards="$SHARDS" --host=127.0.0.1 --port=0 \
    --port_file="$RUN_DIR/shard$s.port" "${SERVER_FLAGS[@]}"
  SHARD_PIDS+=("${PIDS[-1]}")
done

SERVERS=""
for ((s = 0; s < SHARDS; s++)); do
  port_file="$RUN_DIR/shard$s.port"
  deadline=$((SECONDS + PORT_WAIT_S))
  until [[ -s "$port_file" ]]; do
    alive "${SHARD_PIDS[$s]}" ||
      die "shard $s exited before listening; see $RUN_DIR/shard$s.log"
    [[ $SECONDS -lt $deadline ]] ||
      die "shard $s wrote no port file within ${PORT_WAIT_S}s"
    sleep 0.1
  done
  port="$(tr -dc '0-9' <"$port_file")"
  [[ -n "$port" ]] || die "shard $s wrote an empty port file"
  SERVERS+="${SERVERS:+,}127.0.0.1:$port"
done
printf '%s\n' "${SERVERS//,/$'\n'}" >"$RUN_DIR/cluster.txt"
say "shards up: --servers=$SERVERS"

# --- workers ----------------------------------------------------------------
say "starting $WORKERS ps_worker(s): ${WORKER_FLAGS[*]:-(default flags)}"
WORKER_PIDS=()
for ((w = 0; w < WORKERS; w++)); do
  extra=()
  if [[ -n "$STRAGGLER" && $w -eq $((WORKERS - 1)) ]]; then
    extra=(--slowdown="$STRAGGLER")
    say "worker$w is the straggler: --slowdown=$STRAGGLER"
  fi
  launch "worker$w" split "$BIN_DIR/ps_worker" --servers="$SERVERS" \
    --worker_id="$w" --num_workers="$WORKERS" "${WORKER_FLAGS[@]}" "${extra[@]}"
  WORKER_PIDS+=("${PIDS[-1]}")
done

# Wait for the workers, but give up at once if a shard dies under them.
while :; do
  running=0
  for pid in "${WORKER_PIDS[@]}"; do alive "$pid" && running=$((running + 1)); done
  [[ $running -eq 0 ]] && break
  for ((s = 0; s < SHARDS; s++)); do
    alive "${SHARD_PIDS[$s]}" ||
      die "shard $s exited while workers were running; see $RUN_DIR/shard$s.log"
  done
  sleep 0.2
done

failed=0
WORKER_STATUS=()
for ((w = 0; w < WORKERS; w++)); do
  rc=0
  wait "${WORKER_PIDS[$w]}" || rc=$?
  WORKER_STATUS+=("$rc")
done

# Stop the shards now so their shutdown lines print before the results.
cleanup

# --- results ----------------------------------------------------------------
printf '\n==================== results ====================\n'
summaries=()
for ((w = 0; w < WORKERS; w++)); do
  json="$(grep '^{' "$RUN_DIR/worker$w.out" 2>/dev/null | tail -n 1 || true)"
  if [[ "${WORKER_STATUS[$w]}" -ne 0 ]]; then
    printf 'worker%d: FAILED (exit %s); see %s\n' "$w" "${WORKER_STATUS[$w]}" \
      "$RUN_DIR/worker$w.log"
    failed=$((failed + 1))
  elif [[ -z "$json" ]]; then
    printf 'worker%d: FAILED (no JSON summary on stdout)\n' "$w"
    failed=$((failed + 1))
  else
    printf 'worker%d: %s\n' "$w" "$json"
    summaries+=("$json")
  fi
done

if [[ ${#summaries[@]} -gt 0 ]] && command -v python3 >/dev/null 2>&1; then
  printf '%s\n' "${summaries[@]}" | python3 -c '
import json, statistics, sys

rows = [json.loads(line) for line in sys.stdin if line.strip()]

def mean(key):
    values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return statistics.fmean(values) if values else None

parts = []
for key, label, fmt in [("test_accuracy", "test accuracy", ".4f"),
                        ("auc", "AUC", ".4f"),
                        ("planted_auc", "planted AUC", ".4f"),
                        ("test_logloss", "test logloss", ".4f"),
                        ("excess_logloss", "excess logloss", ".4f"),
                        ("tau_mean", "tau", ".2f"),
                        ("samples_per_sec", "samples/s per worker", ".0f")]:
    value = mean(key)
    if value is not None:
        parts.append(f"{label} {value:{fmt}}")
models = "/".join(sorted({str(r.get("model", "?")) for r in rows}))
print(f"summary: {len(rows)} worker(s), model {models}; mean "
      + ", ".join(parts))
' || printf 'summary: could not parse the JSON summaries\n'
fi

if [[ $failed -gt 0 ]]; then
  printf 'FAILED: %d of %d worker(s); logs in %s\n' "$failed" "$WORKERS" \
    "$RUN_DIR"
  exit 1
fi
printf 'OK: %d worker(s) finished; logs in %s\n' "$WORKERS" "$RUN_DIR"

#!/usr/bin/env bash
# Runs a command against a fresh ps_server on a free loopback port, then stops
# the server, on every exit path (success, failure, SIGINT/SIGTERM).
#   with_ps_server.sh <ps_server binary> <command> [args...]
# The command sees TAUPS_SERVERS=127.0.0.1:<port>. The exit status is the
# command's; on failure the tail of the server's log is printed.
set -euo pipefail
server_bin=$1
shift
scratch=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$server_bin" --host=127.0.0.1 --port=0 --port_file="$scratch/port" \
  --stats_interval_s=0 >"$scratch/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 200); do
  [[ -s "$scratch/port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.05
done
if [[ ! -s "$scratch/port" ]]; then
  echo "ps_server did not start:" >&2
  cat "$scratch/server.log" >&2
  exit 1
fi
export TAUPS_SERVERS="127.0.0.1:$(cat "$scratch/port")"

status=0
"$@" || status=$?
if [[ $status -ne 0 ]]; then
  echo "--- command failed ($status); ps_server log tail ---" >&2
  tail -n 40 "$scratch/server.log" >&2
fi
exit "$status"

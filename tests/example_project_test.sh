#!/usr/bin/env bash
# Installs tauPS from a build tree into a scratch prefix, builds the example
# project in worker/examples/minimal_trainer against it with find_package, and
# trains it against a real ps_server on a free loopback port.
#   example_project_test.sh <build dir> <source dir>
set -euo pipefail
build_dir=$1
source_dir=$2
scratch=$(mktemp -d)
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT

cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source_dir/worker/examples/minimal_trainer" -B "$scratch/build" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null

"$scratch/prefix/bin/ps_server" --host=127.0.0.1 --port=0 \
  --port_file="$scratch/port" --stats_interval_s=0 >"$scratch/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 200); do
  [[ -s "$scratch/port" ]] && break
  sleep 0.05
done
[[ -s "$scratch/port" ]] || { cat "$scratch/server.log"; exit 1; }
"$scratch/build/minimal_trainer" --server="127.0.0.1:$(cat "$scratch/port")"

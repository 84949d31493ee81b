#!/bin/bash
# Alternates two load_generator builds against one ps_server, 3 times, 2
# rounds each (W = 4, 16, 64, 256 async; even rounds reversed).
#   NEW=<branch build>/bin/load_generator OLD=<reference>/bin/load_generator \
#   SRV=<either>/bin/ps_server ./alternate.sh <output dir>
set -u
out=${1:?output dir}
mkdir -p "$out"
for i in 1 2 3; do
  for b in new:$NEW old:$OLD; do
    n=${b%%:*}; bin=${b#*:}
    "$bin" --server_binary="$SRV" --modes=async --rounds=2 --format=markdown \
      > "$out/${n}_$i.md" 2> "$out/${n}_$i.err"
  done
done

#!/bin/bash
# How profile_{old,new}_*.txt were made (2026-12-07): a ps_server of BIN_DIR
# under perf while throughput_bench pushes and pulls 16 MiB from two clients,
# 40 calls per figure; then `perf report --no-children --sort symbol`.
# usage: ab.sh BIN_DIR port label
BIN=$1; PORT=$2; LABEL=$3
$BIN/ps_server --host=127.0.0.1 --shard_index=0 --num_shards=1 --stats_interval_s=0 --log_level=warn --port=$PORT > /tmp/ps_$LABEL.log 2>&1 &
SP=$!
$BIN/raw_transfer_server --port=$((PORT+1)) > /dev/null 2>&1 &
RP=$!
sleep 1
perf record -F 1999 -g -p $SP -o /tmp/perf_$LABEL.data > /dev/null 2>&1 &
PS=$!
/work/main/build/bin/throughput_bench --sections=dense --dense_sizes=16MiB --dense_clients=2 --servers=127.0.0.1:$PORT --raw_server=127.0.0.1:$((PORT+1)) --min_seconds=0.01 --min_iters=40 --trials=1 --format=markdown > /tmp/ab_$LABEL.md 2>/dev/null
kill -INT $PS; sleep 0.5
kill $SP $RP; wait $SP $RP 2>/dev/null


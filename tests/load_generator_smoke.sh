#!/usr/bin/env bash
# CI smoke test of bench/load_generator: a short run (W = 4 and 32, async
# and sync, one real ps_server) completes, and every row reports that the
# pushes the workers counted as accepted are exactly what the shard applied.
#   tests/load_generator_smoke.sh <load_generator binary>
set -euo pipefail
generator="$1"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$generator" --short >"$out"
cat "$out"
# One data row per (mode, W), each ending in "exact".
rows="$(grep -cE '^(async|sync) +[0-9]+ ' "$out" || true)"
exact="$(grep -E '^(async|sync) +[0-9]+ ' "$out" | grep -cE ' exact$' || true)"
if [[ "$rows" -ne 4 || "$exact" -ne 4 ]]; then
  echo "load_generator_smoke: expected 4 rows all 'exact', got $rows rows, $exact exact" >&2
  exit 1
fi

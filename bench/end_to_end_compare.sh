#!/usr/bin/env bash
# End-to-end training throughput of two commits, side by side (issue 14's
# "end to end" target): the quick-start demo (2 shards, 4 MLP workers) and a
# 16-worker DLRM (2 shards, 16 ps_worker --model=ctr), run by
# bench/end_to_end_run.py on both commits' ps_server and ps_worker, which
# bench/compare_commits.sh builds side by side and runs alternately.
#
#   bench/end_to_end_compare.sh [BASE [HEAD]]     (default BASE: 6655831)
#
# Environment: TAUPS_E2E_ROUNDS (default 3), TAUPS_E2E_DEMO_STEPS (1000, the
# demo's own), TAUPS_E2E_DLRM_STEPS (200), and compare_commits.sh's
# TAUPS_COMPARE_DIR / TAUPS_COMPARE_JOBS.
# Prints every run's JSON line, then per job and commit the median samples/s
# per worker and CPU us per sample (all processes, getrusage), and the HEAD ÷
# BASE ratio of each round (the two sides of a round ran back to back, so
# the round's ratio is the load-robust figure) with their median.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
base="${1:-6655831}"
head="${2:-HEAD}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

echo "end_to_end_compare: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
TAUPS_COMPARE_ROUNDS="${TAUPS_E2E_ROUNDS:-3}" TAUPS_COMPARE_TARGETS="ps_server ps_worker" \
  "$here/compare_commits.sh" "$base" "$head" -- "$here/end_to_end_run.py" demo,dlrm16 \
  --demo_steps="${TAUPS_E2E_DEMO_STEPS:-1000}" --dlrm16_steps="${TAUPS_E2E_DLRM_STEPS:-200}" |
  tee "$log"
echo "end_to_end_compare: done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$log" <<'PY'
import json, re, statistics, sys
runs = {}  # (job, side) -> [run, ...] in round order
side = None
for line in open(sys.argv[1]):
    m = re.match(r"### round (\d+), (BASE|HEAD) \((\w+)\)", line)
    if m:
        side = (m.group(2), m.group(3))
    elif line.startswith("{"):
        r = json.loads(line)
        runs.setdefault((r["job"], side), []).append(r)
sides = sorted({s for _, s in runs}, key=lambda s: s[0])  # BASE, HEAD
print("\n| job | commit | samples/s per worker (rounds) | median | CPU us/sample (rounds) | median |")
print("|:--|:--|:--|--:|:--|--:|")
for job in ("demo", "dlrm16"):
    for s in sides:
        rs = runs.get((job, s), [])
        if not rs:
            continue
        sps = [r["samples_per_sec_per_worker"] for r in rs]
        cpu = [r["cpu_us_per_sample"] for r in rs]
        print(f"| {job} | {s[1][:7]} | {', '.join(f'{x:.0f}' for x in sps)} | {statistics.median(sps):.0f} "
              f"| {', '.join(f'{x:.1f}' for x in cpu)} | {statistics.median(cpu):.1f} |")
print("\n| job | HEAD ÷ BASE samples/s per worker, per round | median | BASE ÷ HEAD CPU per sample, per round | median |")
print("|:--|:--|--:|:--|--:|")
for job in ("demo", "dlrm16"):
    b = runs.get((job, sides[0]), []) if sides else []
    h = runs.get((job, sides[-1]), []) if sides else []
    n = min(len(b), len(h))
    if n == 0:
        continue
    sp = [h[i]["samples_per_sec_per_worker"] / b[i]["samples_per_sec_per_worker"] for i in range(n)]
    cp = [b[i]["cpu_us_per_sample"] / h[i]["cpu_us_per_sample"] for i in range(n)]
    print(f"| {job} | {', '.join(f'{x:.2f}' for x in sp)} | {statistics.median(sp):.2f} "
          f"| {', '.join(f'{x:.2f}' for x in cp)} | {statistics.median(cp):.2f} |")
PY

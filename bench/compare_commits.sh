#!/usr/bin/env bash
# Builds two commits side by side and runs the same benchmark on both,
# alternating, so a speed-up is a ratio measured in one run on one machine.
#
#   bench/compare_commits.sh BASE [HEAD] [-- benchmark and its flags]
#
# The benchmark defaults to `throughput_bench --sections=dense,sparse
# --format=markdown`; name another binary of build/bin and its flags after
# `--`. A benchmark named by a path (it contains a `/`, e.g.
# bench/end_to_end_run.py or bench/ctr_prefetch.sh) is a script of the
# working tree, the same file for both commits: it is run with the commit's
# bin directory as its first argument, and only $TAUPS_COMPARE_TARGETS are
# built for it. Each commit is checked out into its own git worktree under
# $TAUPS_COMPARE_DIR (default: .cache/compare, ignored by git) and built
# there (RelWithDebInfo, no tests; ccache shares objects between them).
# Runs alternate $TAUPS_COMPARE_ROUNDS rounds (default 3), BASE then HEAD in
# odd rounds and HEAD then BASE in even ones; every run's output is kept in
# $TAUPS_COMPARE_DIR/results/ and printed in the order it ran. HEAD
# defaults to the working tree's HEAD commit.
# bench/compare_ratios.py reads the kept throughput_bench outputs, a base
# run then its head run per round, and prints each figure's ratio per round
# and their median.
# Besides the benchmark, $TAUPS_COMPARE_TARGETS (default: ps_server) are
# built, for benchmarks that start servers as processes (load_generator,
# throughput_bench --server_processes, which also needs raw_transfer_server).
# Builds run with -j$TAUPS_COMPARE_JOBS (default 2).
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { printf 'compare_commits: %s\n' "$*" >&2; exit 2; }

[[ $# -ge 1 && "$1" != "-h" && "$1" != "--help" ]] || { usage; exit 0; }
repo="$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)"
base_ref="$1"; shift
head_ref="HEAD"
if [[ $# -ge 1 && "$1" != "--" ]]; then head_ref="$1"; shift; fi
[[ $# -eq 0 || "$1" == "--" ]] || die "unexpected argument '$1' (benchmark flags go after --)"
[[ $# -ge 1 ]] && shift
bench=("$@")
[[ ${#bench[@]} -gt 0 ]] || bench=(throughput_bench --sections=dense,sparse --format=markdown)

rounds="${TAUPS_COMPARE_ROUNDS:-3}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "TAUPS_COMPARE_ROUNDS must be a positive number"
work="${TAUPS_COMPARE_DIR:-$repo/.cache/compare}"
targets="${TAUPS_COMPARE_TARGETS-ps_server}"
jobs="${TAUPS_COMPARE_JOBS:-2}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "TAUPS_COMPARE_JOBS must be a positive number"
mkdir -p "$work/results"

base_sha="$(git -C "$repo" rev-parse --verify "$base_ref^{commit}")" || die "unknown commit $base_ref"
head_sha="$(git -C "$repo" rev-parse --verify "$head_ref^{commit}")" || die "unknown commit $head_ref"

script=""
if [[ "${bench[0]}" == */* ]]; then
  script="$(cd "$(dirname "${bench[0]}")" && pwd)/$(basename "${bench[0]}")"
  [[ -x "$script" ]] || die "${bench[0]} is not an executable script"
fi

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$work}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"

build() {  # build <sha> -> prints the bin dir
  local sha="$1" tree="$work/${1:0:12}"
  if [[ ! -d "$tree" ]]; then
    git -C "$repo" worktree add --detach "$tree" "$sha" >&2
  fi
  cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTAUPS_BUILD_TESTS=OFF -DTAUPS_WITH_CUDA=OFF >"$work/results/configure-${sha:0:12}.log" 2>&1 ||
    die "configure of ${sha:0:12} failed: $work/results/configure-${sha:0:12}.log"
  local bench_target="${bench[0]}"
  [[ -z "$script" ]] || bench_target=""
  # shellcheck disable=SC2086  # the targets are a space-separated list
  cmake --build "$tree/build" -j "$jobs" --target $bench_target $targets \
    >"$work/results/build-${sha:0:12}.log" 2>&1 ||
    die "build of ${sha:0:12} failed: $work/results/build-${sha:0:12}.log"
  echo "$tree/build/bin"
}

echo "compare_commits: building BASE ${base_sha:0:12} and HEAD ${head_sha:0:12}" >&2
base_bin="$(build "$base_sha")"
head_bin="$(build "$head_sha")"

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
# The side that runs second in a round reads slower on a busy machine, even
# where a change touches nothing (2026-12-07: 0.79-1.00 for unchanged pulls
# with BASE always first), so odd rounds run BASE first and even rounds HEAD.
for ((r = 1; r <= rounds; ++r)); do
  order=(BASE HEAD)
  ((r % 2 == 1)) || order=(HEAD BASE)
  for side in "${order[@]}"; do
    if [[ $side == BASE ]]; then bin="$base_bin" sha="$base_sha"; else bin="$head_bin" sha="$head_sha"; fi
    out="$work/results/$stamp-round$r-$side-${sha:0:12}.txt"
    echo "compare_commits: round $r/$rounds $side ${sha:0:12}: ${bench[*]}" >&2
    if [[ -n "$script" ]]; then
      "$script" "$bin" "${bench[@]:1}" >"$out"
    else
      "$bin/${bench[0]}" "${bench[@]:1}" >"$out"
    fi
    printf '\n### round %d, %s (%s)\n\n' "$r" "$side" "${sha:0:12}"
    cat "$out"
  done
done
echo "compare_commits: outputs in $work/results/$stamp-*" >&2

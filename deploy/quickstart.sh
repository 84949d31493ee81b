#!/usr/bin/env bash
# The two quick-start commands of the README:
#
#   ./deploy/quickstart.sh demo [local_cluster.sh options] [-- ps_worker flags]
#       install dependencies, build, train on a local cluster (2 shards,
#       4 workers, MLP on Fashion-MNIST) and print each worker's result
#   ./deploy/quickstart.sh test
#       install dependencies, build, run every test (ctest)
#
# Environment:
#   TAUPS_BUILD_DIR    build directory (default: build)
#   TAUPS_CMAKE_ARGS   extra CMake configure arguments, split on whitespace,
#                      e.g. "-DTAUPS_WITH_CUDA=OFF"
#   TAUPS_TEST_TIMEOUT per-test timeout in seconds (default 600)
#   TAUPS_CTEST_ARGS   extra ctest arguments, e.g. "-L integration"
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
cd "$REPO_ROOT"

BUILD_DIR="${TAUPS_BUILD_DIR:-build}"
read -r -a CMAKE_ARGS <<<"${TAUPS_CMAKE_ARGS:-}"
read -r -a CTEST_ARGS <<<"${TAUPS_CTEST_ARGS:-}"
TEST_TIMEOUT_S="${TAUPS_TEST_TIMEOUT:-600}"
# The whole test run may not take longer than this, whatever hangs.
readonly SUITE_TIMEOUT_S=1200

phase() { printf '\n==> %s\n' "$*"; }
die() {
  printf 'quickstart: error: %s\n' "$*" >&2
  exit 1
}
usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

mode="${1:-}"
case "$mode" in
  demo | test) shift ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac
[[ "$mode" == demo || $# -eq 0 ]] || die "'test' takes no arguments"
[[ "$TEST_TIMEOUT_S" =~ ^[1-9][0-9]*$ ]] ||
  die "TAUPS_TEST_TIMEOUT must be a positive number of seconds"

phase "[1/3] dependencies (deploy/setup.sh)"
"$REPO_ROOT/deploy/setup.sh"

phase "[2/3] configure and build in $BUILD_DIR/ (Ninja, RelWithDebInfo)"
if command -v ccache >/dev/null 2>&1; then
  # Paths relative to the checkout and no working directory in the hash, so
  # another clone or build directory of the same sources hits the cache.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$REPO_ROOT}"
  export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
  echo "compiler cache: ccache ($(ccache --version | head -n 1))"
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${CMAKE_ARGS[@]}" || die "CMake configure failed (see above)"
cmake --build "$BUILD_DIR" || die "build failed (see above)"

case "$mode" in
  demo)
    phase "[3/3] demo: local cluster on 127.0.0.1 (deploy/local_cluster.sh)"
    if [[ $# -eq 0 ]]; then
      # The demo: 2 shards, 4 workers, 1000 MLP steps each (about 4 epochs of
      # Fashion-MNIST in all; under a minute on two CPU cores).
      set -- --shards 2 --workers 4 -- --model=mlp --steps=1000
    fi
    exec "$REPO_ROOT/deploy/local_cluster.sh" --bin_dir "$BUILD_DIR/bin" "$@"
    ;;
  test)
    phase "[3/3] tests: ctest (per test ${TEST_TIMEOUT_S}s, all ${SUITE_TIMEOUT_S}s)"
    # `timeout` runs ctest in a process group of its own and signals the
    # whole group, so servers spawned by integration tests go down with it.
    # That group is not the terminal's, so Ctrl-C is forwarded by hand.
    timeout --kill-after=30 "$SUITE_TIMEOUT_S" \
      ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 \
      --timeout "$TEST_TIMEOUT_S" --no-tests=error "${CTEST_ARGS[@]}" &
    suite_pid=$!
    interrupted=""
    trap 'interrupted=INT; kill -INT "$suite_pid" 2>/dev/null || true' INT
    trap 'interrupted=TERM; kill -TERM "$suite_pid" 2>/dev/null || true' TERM
    while :; do
      rc=0
      wait "$suite_pid" || rc=$?
      # A trapped signal interrupts `wait`; keep waiting for the real status.
      kill -0 "$suite_pid" 2>/dev/null || break
    done
    trap - INT TERM
    if [[ -n "$interrupted" ]]; then
      die "interrupted (SIG$interrupted); tests stopped"
    elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
      die "the test run passed ${SUITE_TIMEOUT_S}s and was stopped"
    elif [[ $rc -ne 0 ]]; then
      die "tests failed (exit $rc); full log: $BUILD_DIR/Testing/Temporary/LastTest.log"
    fi
    echo "quickstart: all tests passed"
    ;;
esac

#!/usr/bin/env bash
# CI's sanitizer and fuzzing stages, run by .ci/run after the README's test
# command (docs/TESTING.md explains each and what it costs).
#
#   .ci/sanitizers.sh [asan] [tsan] [fuzz]     (no argument: all three)
#
#   asan  build-asan/: gcc, -fsanitize=address,undefined, every test but the
#         ones ASAN_EXCLUDED names below (printed), leaks checked
#         (suppressions: tests/sanitizers/lsan.supp, gRPC's libcares only)
#   tsan  build-tsan/: gcc, -fsanitize=thread, the gRPC-free core tests in
#         TSAN_TESTS, with tests/sanitizers/tsan_absl_sync.cc preloaded so
#         TSan sees Abseil's (uninstrumented) mutexes
#   fuzz  build-fuzz/: clang, -DTAUPS_FUZZ=ON; each target of tests/fuzz
#         replays its seed corpus and regression inputs, then fuzzes for
#         TAUPS_FUZZ_SECONDS; a crash is copied into
#         tests/fuzz/regressions/<target>/ and printed in base64, and fails
#
# Environment: TAUPS_FUZZ_SECONDS (default 60 per target), TAUPS_ASAN_ALL=1
# (also the long training tests under ASan), TAUPS_JOBS
# (default 2, for builds and ctest), TAUPS_TEST_TIMEOUT (per test, 900 s).
# Under CI=true a stage's build directory is removed once its stage passed
# (each takes up to 3 GiB; CI's clone is thrown away); TAUPS_KEEP_BUILDS=1
# keeps them.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
cd "$REPO_ROOT"

FUZZ_SECONDS="${TAUPS_FUZZ_SECONDS:-60}"
JOBS="${TAUPS_JOBS:-2}"
TEST_TIMEOUT_S="${TAUPS_TEST_TIMEOUT:-900}"
# Whatever hangs, one stage's tests stop after this long.
readonly STAGE_TIMEOUT_S=2400

# Not run under ASan: example_project_test and systemd_package_test build a
# consumer program against the installed static libraries with plain flags,
# which cannot link instrumented archives (they check packaging, and run in
# the normal build); nor k8s_manifests_test, which runs no C++.
# Nor, unless TAUPS_ASAN_ALL=1, the four that train through ps_worker
# processes for minutes (~10 min of the stage's ~17 under ASan); the same
# client and server paths run in the other integration tests.
ASAN_EXCLUDED='^(example_project_test|systemd_package_test|k8s_manifests_test)$'
if [[ "${TAUPS_ASAN_ALL:-0}" != 1 ]]; then
  ASAN_EXCLUDED='^(example_project_test|systemd_package_test|k8s_manifests_test|cluster_training_test|cluster_training_test_dataset|policy_cluster_test|shard_restart_test)$'
fi
readonly ASAN_EXCLUDED
# The core tests that link no gRPC (Debian's gRPC is not instrumented, so
# TSan cannot judge code that calls it).
readonly TSAN_TESTS=(partition_test consistency_test parameter_store_test
  parked_pull_store_test parallel_apply_test dense_lend_test dense_pieces_test
  sparse_parallel_test
  staged_complete_test answer_buffers_test answers_in_flight_test
  sparse_memory_test row_version_test optimizer_test limits_test
  shard_checkpointer_test checkpoint_store_test checkpoint_format_test
  checkpoint_delta_test checkpoint_step_cut_test checkpoint_cut_copy_test
  checkpoint_step_queue_test checkpoint_version_trigger_test
  codec_test shard_map_test shard_router_equivalence_test)
readonly FUZZERS=(request_fuzzer codec_block_fuzzer checkpoint_fuzzer)
readonly SANITIZE_ASAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

phase() { printf '\n==> %s\n' "$*"; }
die() {
  printf 'sanitizers: error: %s\n' "$*" >&2
  exit 1
}
# Runs "$@" and prints how long it took, under `label`.
timed() {
  local label="$1" start rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  printf 'sanitizers: %s took %ds\n' "$label" "$(($(date +%s) - start))"
  return "$rc"
}

if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$REPO_ROOT}"
  export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
fi
# Shared by the sanitizer builds: no CUDA, no Python bindings, no benchmarks.
readonly COMMON_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DTAUPS_WITH_CUDA=OFF -DTAUPS_BUILD_PYTHON=OFF -DTAUPS_BUILD_BENCH=OFF)

ctest_in() {
  local dir="$1"
  shift
  timeout --kill-after=30 "$STAGE_TIMEOUT_S" \
    ctest --test-dir "$dir" --output-on-failure -j"$JOBS" \
    --timeout "$TEST_TIMEOUT_S" --no-tests=error "$@"
}

stage_asan() {
  phase "ASan + UBSan: build-asan/ (gcc)"
  cmake -S . -B build-asan "${COMMON_ARGS[@]}" \
    "-DCMAKE_CXX_FLAGS=$SANITIZE_ASAN" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" >/dev/null ||
    die "configuring build-asan failed"
  timed "asan build" cmake --build build-asan -j"$JOBS" ||
    die "build-asan failed (see above)"
  phase "ASan + UBSan: every test but those matching $ASAN_EXCLUDED"
  ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_string_checks=1" \
  LSAN_OPTIONS="suppressions=$REPO_ROOT/tests/sanitizers/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    timed "asan tests" ctest_in build-asan -E "$ASAN_EXCLUDED" ||
    die "tests failed under ASan/UBSan (log: build-asan/Testing/Temporary/LastTest.log)"
}

stage_tsan() {
  phase "TSan: build-tsan/ (gcc), the gRPC-free core tests"
  cmake -S . -B build-tsan "${COMMON_ARGS[@]}" \
    "-DCMAKE_CXX_FLAGS=-fsanitize=thread -fno-omit-frame-pointer" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" >/dev/null ||
    die "configuring build-tsan failed"
  timed "tsan build" cmake --build build-tsan -j"$JOBS" --target "${TSAN_TESTS[@]}" ||
    die "build-tsan failed (see above)"
  # Not instrumented itself: it only tells TSan what Abseil's calls order.
  g++ -std=c++20 -O1 -g -shared -fPIC -o build-tsan/libtsan_absl_sync.so \
    tests/sanitizers/tsan_absl_sync.cc -ldl || die "building the TSan shim failed"
  local pattern
  pattern="^($(IFS='|'; echo "${TSAN_TESTS[*]}"))$"
  phase "TSan: ${TSAN_TESTS[*]}"
  LD_PRELOAD="$REPO_ROOT/build-tsan/libtsan_absl_sync.so" \
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    timed "tsan tests" ctest_in build-tsan -R "$pattern" ||
    die "tests failed under TSan (log: build-tsan/Testing/Temporary/LastTest.log)"
}

# Copies libFuzzer's crash files of `target` into the regression inputs and
# prints them, since CI's clone is thrown away.
keep_crashes() {
  local target="$1" corpus="$2" crash
  for crash in build-fuzz/crashes/"$target"/*; do
    [[ -f "$crash" ]] || continue
    cp "$crash" "tests/fuzz/regressions/$corpus/"
    printf 'sanitizers: %s found %s (%d bytes), kept as tests/fuzz/regressions/%s/%s; base64:\n' \
      "$target" "$(basename "$crash")" "$(stat -c %s "$crash")" "$corpus" "$(basename "$crash")"
    base64 -w 76 "$crash" | head -n 200
  done
}

stage_fuzz() {
  phase "libFuzzer: build-fuzz/ (clang, -DTAUPS_FUZZ=ON)"
  command -v clang++ >/dev/null || die "clang++ not found (deploy/setup.sh installs it)"
  cmake -S . -B build-fuzz "${COMMON_ARGS[@]}" -DCMAKE_CXX_COMPILER=clang++ \
    -DTAUPS_FUZZ=ON >/dev/null || die "configuring build-fuzz failed"
  timed "fuzz build" cmake --build build-fuzz -j"$JOBS" --target "${FUZZERS[@]}" ||
    die "build-fuzz failed (see above)"
  local target corpus failed=()
  for target in "${FUZZERS[@]}"; do
    corpus="${target%_fuzzer}"
    phase "fuzz $target: replay, then ${FUZZ_SECONDS}s"
    rm -rf "build-fuzz/crashes/$target"
    mkdir -p "build-fuzz/crashes/$target" "build-fuzz/corpus/$target"
    # The work corpus grows across runs of the same build directory.
    cp -n tests/fuzz/corpus/"$corpus"/* "build-fuzz/corpus/$target/"
    local flags=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      "-artifact_prefix=build-fuzz/crashes/$target/")
    if ! "build-fuzz/bin/$target" "${flags[@]}" -runs=0 \
        "tests/fuzz/corpus/$corpus" "tests/fuzz/regressions/$corpus" \
        >"build-fuzz/$target.replay.log" 2>&1; then
      tail -n 60 "build-fuzz/$target.replay.log"
      keep_crashes "$target" "$corpus"
      failed+=("$target (replay)")
      continue
    fi
    if ! "build-fuzz/bin/$target" "${flags[@]}" -max_total_time="$FUZZ_SECONDS" \
        "build-fuzz/corpus/$target" >"build-fuzz/$target.log" 2>&1; then
      tail -n 60 "build-fuzz/$target.log"
      keep_crashes "$target" "$corpus"
      failed+=("$target")
      continue
    fi
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
      "build-fuzz/$target.log" | sed "s/^/$target /"
  done
  [[ ${#failed[@]} -eq 0 ]] || die "fuzzing found crashes in: ${failed[*]}"
}

stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(asan tsan fuzz)
for stage in "${stages[@]}"; do
  case "$stage" in
    asan | tsan | fuzz)
      printf 'sanitizers: %s free before stage %s\n' \
        "$(df -h --output=avail . | tail -n 1 | tr -d ' ')" "$stage"
      timed "stage $stage" "stage_$stage"
      if [[ "${CI:-}" == true && "${TAUPS_KEEP_BUILDS:-0}" != 1 ]]; then
        rm -rf "build-$stage"
      fi
      ;;
    *) die "unknown stage '$stage' (asan, tsan, fuzz)" ;;
  esac
done
echo "sanitizers: all stages passed (${stages[*]})"

#!/usr/bin/env bash
# The checks that need a CUDA device, in one run: build with CUDA, run the
# gpu-labelled tests (CPU/GPU codec byte equality and friends) and the
# trainer's CPU/CUDA GEMM agreement, then the GPU codec benchmark.
#
#   bench/run_gpu_checks.sh              # from the repository root
#
# Results go to $OUT when it is set, else ./gpu_results: build.log,
# tests.log, bench.md (the benchmark's markdown table), bench.log and
# summary.txt. Exit status: 0 when every check passed; 1 when a build step
# or a test failed; 3 when the tests were skipped because no CUDA device was
# usable (nothing was checked). Needs a Debian 12 machine set up by
# deploy/setup.sh and a CUDA toolkit (nvcc in /usr/local/cuda or on PATH);
# meant to finish in a few minutes on a 16-core machine with an H100/H200.
set -uo pipefail

cd "$(dirname "$0")/.."
results="${OUT:-$PWD/gpu_results}"
build="${TAUPS_GPU_BUILD_DIR:-build-gpu}"
mkdir -p "$results"
summary="$results/summary.txt"
: >"$summary"

note() { printf '%s\n' "$*" | tee -a "$summary"; }
fail() { note "FAILED: $*"; exit 1; }

note "run_gpu_checks: $(date -u '+%Y-%m-%dT%H:%M:%SZ') on $(hostname)"
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
  git diff --quiet HEAD 2>/dev/null || commit+=" (with local changes)"
  note "commit: $commit"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 4 | tr '\n' ';')"
else
  note "gpu: nvidia-smi not found"
fi

./deploy/setup.sh >"$results/build.log" 2>&1 || fail "deploy/setup.sh (see build.log)"

start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTAUPS_WITH_CUDA=ON -DTAUPS_BUILD_TESTS=ON -DTAUPS_BUILD_BENCH=ON \
  >>"$results/build.log" 2>&1 || fail "cmake configure (see build.log)"
if ! grep -q 'tauPS: CUDA kernels ON' "$results/build.log"; then
  fail "CMake found no CUDA toolkit (see build.log)"
fi

# Build what the checks run: every gpu-labelled test, the trainer's math test
# (if present) and the benchmark.
mapfile -t gpu_tests < <(ctest --test-dir "$build" -N -L gpu |
  sed -n 's/^ *Test *#[0-9]*: *//p')
[[ ${#gpu_tests[@]} -gt 0 ]] || fail "no gpu-labelled tests registered"
known_targets=$(ninja -C "$build" -t targets all 2>/dev/null | sed 's/:.*//')
targets=()
for t in "${gpu_tests[@]}" trainer_math_test codec_gpu_bench; do
  if grep -qx "$t" <<<"$known_targets"; then targets+=("$t"); fi
done
note "building: ${targets[*]}"
status=0
# -k 0: a target that fails to build does not stop the others; its checks
# then fail below (ctest reports a missing test executable as Not Run).
if ! ninja -C "$build" -k 0 -j "$(nproc)" "${targets[@]}" \
  >>"$results/build.log" 2>&1; then
  note "build FAILED for some targets (see build.log); running what was built"
  status=1
fi
note "configure + build: $((SECONDS - start)) s"

start=$SECONDS
{
  ctest --test-dir "$build" -L gpu --output-on-failure --timeout 300
} >"$results/tests.log" 2>&1
ctest_rc=$?
grep -E 'tests passed|tests failed|Skipped|\(Failed\)|Not Run' "$results/tests.log" |
  tee -a "$summary"
[[ $ctest_rc -eq 0 ]] || { note "gpu-labelled tests FAILED"; status=1; }
skipped=0
grep -q 'Skipped' "$results/tests.log" && skipped=1

if [[ -x "$build/bin/trainer_math_test" ]]; then
  echo "=== trainer_math_test [cuda]" >>"$results/tests.log"
  if "$build/bin/trainer_math_test" "[cuda]" >>"$results/tests.log" 2>&1; then
    note "trainer_math_test [cuda]: passed"
  else
    note "trainer_math_test [cuda]: FAILED"
    status=1
  fi
  grep -q 'SKIPPED' "$results/tests.log" && skipped=1
fi
note "tests: $((SECONDS - start)) s"

start=$SECONDS
if [[ ! -x "$build/bin/codec_gpu_bench" ]]; then
  note "codec_gpu_bench: not built"
  status=1
elif "$build/bin/codec_gpu_bench" --format=markdown >"$results/bench.md" \
  2>"$results/bench.log"; then
  note "codec_gpu_bench: done ($((SECONDS - start)) s), table in bench.md"
else
  note "codec_gpu_bench: FAILED (see bench.log)"
  status=1
fi

if [[ $status -eq 0 && $skipped -eq 1 ]]; then
  note "no usable CUDA device: the GPU tests were skipped, nothing was checked"
  exit 3
fi
[[ $status -eq 0 ]] && note "all GPU checks passed" || note "some GPU checks FAILED"
exit $status

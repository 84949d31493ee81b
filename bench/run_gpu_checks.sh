#!/usr/bin/env bash
# The checks that need a CUDA device, in one run: the gpu-labelled tests
# (CPU/GPU codec byte equality, GPU-resident pushes), the trainer's CPU/CUDA
# agreement (GEMMs and the whole DLRM), the GPU codec benchmark, and a short
# local cluster training the DLRM with its GEMMs on the GPU and on the CPU.
#
#   bench/run_gpu_checks.sh                  # set up, build with CUDA, check
#   bench/run_gpu_checks.sh --prebuilt DIR   # check what bench/pack_gpu_bundle.sh
#                                            # packed into DIR (no build, no apt)
#
# The first form needs a Debian 12 machine set up by deploy/setup.sh and a
# CUDA toolkit. The second needs only a CUDA driver and cuBLAS 13 (found on
# the loader's path, in /usr/local/cuda or in a Python wheel's folder): use it
# on GPU machines that cannot install our Debian packages.
#
# Results go to $OUT when it is set, else ./gpu_results: summary.txt,
# tests.log, python.log (the Python GPU cases), bench.md (the benchmark's
# markdown table), bench.log, cluster.log and, when building, build.log.
# Environment:
#   TAUPS_GPU_CLUSTER_STEPS  steps per worker of each cluster run (default
#                            300; 0 skips the cluster runs)
#   TAUPS_GPU_BUILD_DIR      build folder of the first form (build-gpu)
#   TAUPS_GPU_PYTHON         interpreter for the Python GPU cases (its torch
#                            must see the device; default /usr/bin/python3)
#   TAUPS_GPU_PYTHON_BUILD   CUDA build folder for them with --prebuilt
# Exit status: 0 when every check passed; 1 when a build step, a test or a
# run failed; 3 when no CUDA device was usable (the tests skipped: nothing
# was checked).
set -uo pipefail

cd "$(dirname "$0")/.."
repo=$PWD
results="${OUT:-$PWD/gpu_results}"
cluster_steps="${TAUPS_GPU_CLUSTER_STEPS:-300}"
prebuilt=""
case "${1:-}" in
  --prebuilt) prebuilt="${2:?--prebuilt needs a folder}" ;;
  --prebuilt=*) prebuilt="${1#*=}" ;;
  "") ;;
  *) echo "usage: $0 [--prebuilt DIR]" >&2; exit 2 ;;
esac
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
note "cpus: $(nproc)"

# --- Build, or find the packed binaries -------------------------------------
if [[ -z "$prebuilt" ]]; then
  build="${TAUPS_GPU_BUILD_DIR:-build-gpu}"
  start=$SECONDS
  ./deploy/setup.sh >"$results/build.log" 2>&1 || fail "deploy/setup.sh (see build.log)"
  TAUPS_GPU_BUILD_DIR="$build" bench/pack_gpu_bundle.sh "$build/bundle" \
    >>"$results/build.log" 2>&1 || fail "build (see build.log)"
  note "configure + build: $((SECONDS - start)) s"
  prebuilt="$build/bundle"
fi
[[ "$prebuilt" == /* ]] || prebuilt="$repo/$prebuilt"
bin="$prebuilt/bin"
[[ -f "$prebuilt/gpu_tests.txt" && -d "$bin" ]] ||
  fail "$prebuilt is not a bundle made by bench/pack_gpu_bundle.sh"
mapfile -t gpu_tests <"$prebuilt/gpu_tests.txt"
[[ -f "$prebuilt/commit.txt" ]] && note "binaries built from: $(cat "$prebuilt/commit.txt")"

# cuBLAS 13 comes from this machine: the loader's cache, the toolkit, or a
# Python wheel (nvidia-cublas) when that is all there is.
libs="$prebuilt/lib"
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13'; then
  cublas=$(find /usr/local/cuda/lib64 /usr/local/cuda/targets /usr/lib /opt \
    -name 'libcublas.so.13*' 2>/dev/null | head -n 1)
  [[ -n "$cublas" ]] && libs+=":$(dirname "$cublas")"
fi
note "libraries: $libs"

# Each program runs through a wrapper that sets its library path, so the
# packed libraries never reach this machine's own tools. If this machine's C
# runtime is older than the one the binaries were built against, the
# wrappers start them with the packed loader and runtime instead.
launcher="env LD_LIBRARY_PATH='$libs'"
probe=$(env LD_LIBRARY_PATH="$libs" "$bin/${gpu_tests[0]}" --help 2>&1 >/dev/null)
if [[ $? -ne 0 ]]; then
  note "binaries do not start here: $(head -c 300 <<<"$probe")"
  launcher="'$prebuilt/glibc/ld-linux-x86-64.so.2' --library-path '$prebuilt/glibc:$libs'"
fi
wrappers=$(mktemp -d)
trap 'rm -rf "$wrappers"' EXIT
for program in "$bin"/*; do
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$launcher" "'$program'" \
    >"$wrappers/$(basename "$program")"
  chmod +x "$wrappers/$(basename "$program")"
done
"$wrappers/${gpu_tests[0]}" --help >/dev/null 2>&1 ||
  fail "the packed binaries do not start on this machine"

# --- Tests ------------------------------------------------------------------
status=0
skipped=0
tests_log="$results/tests.log"
: >"$tests_log"
start=$SECONDS
run_test() {  # name, then Catch2 arguments
  local name="$1" out rc
  shift
  out=$(timeout 300 "$wrappers/$name" "$@" 2>&1)
  rc=$?
  printf '=== %s %s (exit %d)\n%s\n' "$name" "$*" "$rc" "$out" >>"$tests_log"
  # Exit 77: every selected case skipped (tests/test_skip.h), no device.
  if [[ $rc -eq 77 ]] || grep -q 'SKIPPED' <<<"$out"; then skipped=1; fi
  if [[ $rc -eq 77 ]]; then
    note "$name $*: skipped (no usable CUDA device)"
  elif [[ $rc -eq 0 ]]; then
    note "$name $*: passed; $(grep -E '^(All tests passed|test cases:)' <<<"$out" | tail -n 1)"
  else
    note "$name $*: FAILED (exit $rc, see tests.log)"
    status=1
  fi
}
for t in "${gpu_tests[@]}"; do run_test "$t"; done
run_test trainer_math_test "[cuda]"
run_test trainer_ctr_test "[cuda]"
note "tests: $((SECONDS - start)) s"

# --- The Python GPU cases: taups.torch on CUDA tensors ------------------------
# python_torch_cuda_test (modules on CUDA tensors) and
# python_torch_device_codec_test (CUDA gradients encoded on the GPU, bytes
# and parameters equal to the CPU codec's), then dlrm_torch.py on the GPU
# and on the CPU (int8 MLP pushes; the JSON lines go to the summary). They need the extension built with
# CUDA: the first form builds it in its build folder; with --prebuilt, set
# TAUPS_GPU_PYTHON_BUILD to a configured CUDA build folder on this machine.
# And an interpreter of the extension's Python version whose torch sees the
# device (TAUPS_GPU_PYTHON, default /usr/bin/python3; Debian's python3-torch
# has no CUDA, so use a venv made with --system-site-packages holding a CUDA
# torch). Without them the summary says they were not run (the exit status
# stays that of the other checks).
py_build="${TAUPS_GPU_PYTHON_BUILD:-}"
if [[ -z "$py_build" && -n "${build:-}" ]]; then
  [[ "$build" == /* ]] && py_build="$build" || py_build="$repo/$build"
fi
py="${TAUPS_GPU_PYTHON:-/usr/bin/python3}"
py_log="$results/python.log"
: >"$py_log"
if [[ -z "$py_build" ]]; then
  note "python GPU cases: not run (--prebuilt without TAUPS_GPU_PYTHON_BUILD)"
elif ! ninja -C "$py_build" taups_python ps_server >>"$py_log" 2>&1; then
  note "python GPU cases: FAILED to build taups_python (see python.log)"
  status=1
elif ! "$py" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' \
    >>"$py_log" 2>&1; then
  note "python GPU cases: not run ($py has no torch that sees a CUDA device)"
else
  for script in test_torch_cuda.py test_torch_device_codec.py; do
    start=$SECONDS
    out=$(PYTHONPATH="$py_build/python" timeout 300 \
      worker/python/tests/with_ps_server.sh "$py_build/bin/ps_server" \
      "$py" "worker/python/tests/$script" -v 2>&1)
    rc=$?
    printf '=== %s (exit %d)\n%s\n' "$script" "$rc" "$out" >>"$py_log"
    if [[ $rc -eq 77 ]]; then
      note "python $script: skipped ($(grep -m1 SKIPPED <<<"$out" | cut -c1-120))"
    elif [[ $rc -eq 0 ]]; then
      note "python $script: passed ($((SECONDS - start)) s)"
    else
      note "python $script: FAILED (exit $rc, see python.log)"
      status=1
    fi
  done
  # The PyTorch DLRM on the GPU, its MLP table's pushes encoded there.
  for device in cuda cpu; do
    out=$(PYTHONPATH="$py_build/python" timeout 300 \
      worker/python/tests/with_ps_server.sh "$py_build/bin/ps_server" \
      "$py" worker/python/examples/dlrm_torch.py --device="$device" \
      --compression=int8 --steps=300 --examples=100000 --eval_examples=8000 \
      --progress=none 2>&1)
    rc=$?
    printf '=== dlrm_torch.py --device=%s (exit %d)\n%s\n' "$device" "$rc" \
      "$out" >>"$py_log"
    if [[ $rc -eq 0 ]]; then
      note "dlrm_torch.py on $device: $(grep -m1 '^{' <<<"$out")"
    else
      note "dlrm_torch.py on $device: FAILED (exit $rc, see python.log)"
      status=1
    fi
  done
fi

# --- Benchmark ----------------------------------------------------------------
start=$SECONDS
if timeout 300 "$wrappers/codec_gpu_bench" --format=markdown \
  >"$results/bench.md" 2>"$results/bench.log"; then
  note "codec_gpu_bench: done ($((SECONDS - start)) s), table in bench.md"
else
  note "codec_gpu_bench: FAILED (see bench.log)"
  status=1
fi

# --- A local cluster training the DLRM, GEMMs on the GPU, then on the CPU ----
if [[ "$cluster_steps" -gt 0 ]]; then
  for device in cuda cpu; do
    start=$SECONDS
    log_dir=$(mktemp -d)
    echo "=== ctr on $device, 2 shards x 4 workers, $cluster_steps steps" \
      >>"$results/cluster.log"
    if timeout 240 deploy/local_cluster.sh --bin_dir "$wrappers" --shards 2 \
      --workers 4 --log_dir "$log_dir" -- --model=ctr --device="$device" \
      --steps="$cluster_steps" >>"$results/cluster.log" 2>&1; then
      rates=$(cat "$log_dir"/worker*.out 2>/dev/null |
        grep -Eo '"samples_per_sec":[0-9.e+]+' | cut -d: -f2 | paste -sd' ')
      note "ctr cluster on $device: $((SECONDS - start)) s; samples/s per worker: $rates"
    else
      note "ctr cluster on $device: FAILED (see cluster.log)"
      status=1
    fi
    rm -rf "$log_dir"
  done
fi

if [[ $status -eq 0 && $skipped -eq 1 ]]; then
  note "no usable CUDA device: the GPU tests were skipped, nothing was checked"
  exit 3
fi
[[ $status -eq 0 ]] && note "all GPU checks passed" || note "some GPU checks FAILED"
exit $status

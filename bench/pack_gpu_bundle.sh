#!/usr/bin/env bash
# Builds the GPU checks here, with CUDA, and packs them with the shared
# libraries they need into one folder, for a GPU machine that has a CUDA
# driver and cuBLAS but none of our Debian packages (gRPC, protobuf, Abseil,
# spdlog) and no way to install them:
#
#   bench/pack_gpu_bundle.sh [DIR]        # default DIR: .gpu_bundle
#   # on the GPU machine, from a copy of this repository with DIR beside it:
#   bench/run_gpu_checks.sh --prebuilt DIR
#
# DIR/bin      the test binaries, codec_gpu_bench, ps_server and ps_worker
# DIR/lib      every shared library they load, except the C runtime, the
#              CUDA driver and cuBLAS, which the GPU machine brings
# DIR/glibc    this machine's C and C++ runtime and loader, used only when the
#              GPU machine's are too old for the binaries
# DIR/gpu_tests.txt   the gpu-labelled tests, one per line
# DIR/commit.txt      the commit the binaries were built from
#
# Needs a Debian 12 machine set up by deploy/setup.sh and the CUDA toolkit.
# The binaries are built for sm_90 (H100/H200) unless CMAKE_CUDA_ARCHITECTURES
# is set in the environment.
set -euo pipefail

cd "$(dirname "$0")/.."
bundle="${1:-.gpu_bundle}"
build="${TAUPS_GPU_BUILD_DIR:-build-gpu}"

die() { printf 'pack_gpu_bundle: %s\n' "$*" >&2; exit 1; }

mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTAUPS_WITH_CUDA=ON -DTAUPS_BUILD_TESTS=ON -DTAUPS_BUILD_BENCH=ON \
  ${CMAKE_CUDA_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES} \
  >"$build/configure.log" 2>&1 || die "cmake configure failed (see $build/configure.log)"
grep -q 'tauPS: CUDA kernels ON' "$build/configure.log" ||
  die "CMake found no CUDA toolkit (see $build/configure.log)"

mapfile -t gpu_tests < <(ctest --test-dir "$build" -N -L gpu |
  sed -n 's/^ *Test *#[0-9]*: *//p')
[[ ${#gpu_tests[@]} -gt 0 ]] || die "no gpu-labelled tests registered"
programs=("${gpu_tests[@]}" trainer_math_test trainer_ctr_test codec_gpu_bench
  ps_server ps_worker)
ninja -C "$build" "${programs[@]}"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/glibc"
printf '%s\n' "${gpu_tests[@]}" >"$bundle/gpu_tests.txt"
git describe --always --dirty >"$bundle/commit.txt" 2>/dev/null || echo unknown >"$bundle/commit.txt"
for p in "${programs[@]}"; do
  cp "$build/bin/$p" "$bundle/bin/"
  strip --strip-debug "$bundle/bin/$p"
done

# The C runtime goes to glibc/ (a fallback); the driver and cuBLAS stay
# behind (the GPU machine's own must match its driver); the rest goes to lib/.
runtime='^(ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so'
stay='^(libcuda|libcublas|libcublasLt|libcudart)\.so'
for p in "${programs[@]}"; do
  ldd "$bundle/bin/$p" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}'
done | sort -u | while read -r lib; do
  name=$(basename "$lib")
  if [[ $name =~ $runtime ]]; then
    cp -L "$lib" "$bundle/glibc/$name"
  elif [[ ! $name =~ $stay ]]; then
    cp -L "$lib" "$bundle/lib/$name"
  fi
done
echo "pack_gpu_bundle: $bundle holds $(ls "$bundle/bin" | wc -l) programs," \
  "$(ls "$bundle/lib" | wc -l) libraries, $(du -sh "$bundle" | cut -f1)"

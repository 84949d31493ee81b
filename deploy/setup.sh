#!/usr/bin/env bash
# Installs the Debian 12 packages tauPS needs to build, test and run the demo.
#
#   ./deploy/setup.sh
#
# Idempotent: when every package is already installed it returns at once
# without touching apt. Runs apt through sudo unless it is already root.
# Installs nothing but the packages listed below (the CUDA toolkit is optional
# and not installed here; CMake finds it at /usr/local/cuda when present).
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache
  # fuzzing and sanitizer builds (.ci/sanitizers.sh): clang, its libFuzzer
  # and sanitizer runtimes, llvm-symbolizer for their stack traces
  clang libclang-rt-14-dev llvm-14
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev catch2 libbenchmark-dev libcpp-httplib-dev
  libsystemd-dev zlib1g-dev
  # promtool, to check the /metrics exposition in tests
  prometheus
  # gRPC's health and reflection protos (test clients); systemd-nspawn and
  # dpkg-shlibdeps for the systemd and .deb test (tests/systemd_package_test.sh)
  grpc-proto systemd-container dpkg-dev
  # the fault harness's network cut: network namespaces, veth pairs and
  # nftables drop rules (tests/fault/net_cut.h)
  iproute2 nftables
  # the Kubernetes manifests' offline test (tests/k8s_manifests_test.py)
  yamllint python3-yaml
  # demo data, plotting
  dataset-fashion-mnist python3 python3-matplotlib
  # Python bindings and the PyTorch example (worker/python)
  pybind11-dev python3-dev python3-numpy python3-torch
  # progress bars of the PyTorch DLRM example (worker/python/examples)
  python3-tqdm
  # installing the Python package (pip, venv, wheels; worker/python/README.md)
  python3-pip python3-venv python3-setuptools python3-wheel python3-build
)

log() { printf 'setup: %s\n' "$*"; }

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  log "all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  log "apt-get not found: tauPS targets Debian 12. Install these packages" \
      "by other means: ${missing[*]}" >&2
  exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    log "not root and sudo is not installed; run as root or install:" \
        "${missing[*]}" >&2
    exit 1
  fi
  SUDO=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
log "installing ${#missing[@]} missing package(s): ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
  --no-install-recommends "${missing[@]}"
log "done"

#!/usr/bin/env bash
# Installs taups with pip into a fresh venv (--system-site-packages: Debian's
# torch and numpy) and runs dlrm_torchrun_check.py with it: the PyTorch DLRM
# under torchrun with 1 and 4 workers against ps_worker --model=ctr.
#   dlrm_torchrun_test.sh <build dir> <source dir> <python> <ps_server> <ps_worker>
# The build directory's extension is reused (TAUPS_PYTHON_BUILD_DIR), so
# nothing is compiled. Exits 77 (skipped) without torch or python3-venv.
set -euo pipefail
build_dir=$(realpath "$1")
source_dir=$(realpath "$2")
python=$3
ps_server=$4
ps_worker=$5
if ! "$python" -c "import torch, venv, ensurepip" 2>/dev/null; then
  echo "SKIPPED: $python lacks torch or venv (Debian: python3-torch python3-venv)"
  exit 77
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar -C "$source_dir/worker/python" --exclude=./build --exclude=./dist \
  --exclude='*.egg-info' --exclude=__pycache__ --exclude='_taups*.so' \
  -cf - . | (mkdir "$scratch/pkg" && tar -C "$scratch/pkg" -xf -)
unset PYTHONPATH
export TAUPS_SOURCE_DIR=$source_dir TAUPS_PYTHON_BUILD_DIR=$build_dir
"$python" -m venv --system-site-packages "$scratch/venv"
if ! "$scratch/venv/bin/python" -m pip install --no-build-isolation \
    --no-index "$scratch/pkg" >"$scratch/pip.log" 2>&1; then
  tail -n 40 "$scratch/pip.log" >&2
  exit 1
fi
cd "$scratch"  # import taups from the venv, not the source tree
exec "$scratch/venv/bin/python" "$source_dir/worker/python/tests/dlrm_torchrun_check.py" \
  "$ps_server" "$ps_worker" "$source_dir/worker/python/examples/dlrm_torch.py"

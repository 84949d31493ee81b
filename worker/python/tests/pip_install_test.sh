#!/usr/bin/env bash
# Installs the taups Python package the three ways worker/python/README.md
# documents and trains through each install against a real ps_server:
#   1. pip install --no-build-isolation --no-index into a fresh venv made with
#      --system-site-packages (so Debian's numpy and torch are used);
#   2. python -m build --no-isolation --wheel, the wheel's contents checked,
#      then the wheel installed into a second fresh venv;
#   3. cmake --install --component python into a scratch prefix.
#
#   pip_install_test.sh <build dir> <source dir> <python> <python install dir>
#
# Run through with_ps_server.sh, which sets TAUPS_SERVERS. The package is
# built from a copy of worker/python (the checkout is left untouched) with
# TAUPS_SOURCE_DIR=<source dir> and TAUPS_PYTHON_BUILD_DIR=<build dir>, so the
# extension already built there is reused, not compiled again. Exits 77
# (skipped) when venv, build or wheel is missing for <python>.
set -euo pipefail
build_dir=$(realpath "$1")
source_dir=$(realpath "$2")
python=$3
install_dir=$4

missing=()
"$python" -c "import venv, ensurepip" 2>/dev/null || missing+=(python3-venv)
"$python" -c "import build" 2>/dev/null || missing+=(python3-build)
"$python" -c "import wheel" 2>/dev/null || missing+=(python3-wheel)
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "SKIPPED: $python lacks what installing needs (Debian: ${missing[*]})"
  exit 77
fi

version=$(sed -nE 's/^project\(tauPS VERSION ([0-9.]+).*/\1/p' \
  "$source_dir/CMakeLists.txt")
[[ -n "$version" ]] || { echo "no project version in CMakeLists.txt"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/pkg" "$scratch/run"
tar -C "$source_dir/worker/python" --exclude=./build --exclude=./dist \
  --exclude='*.egg-info' --exclude=__pycache__ --exclude='_taups*.so' \
  -cf - . |
  tar -C "$scratch/pkg" -xf -
cp "$source_dir/worker/python/tests/check_installed.py" "$scratch/run/"
unset PYTHONPATH
export TAUPS_SOURCE_DIR=$source_dir TAUPS_PYTHON_BUILD_DIR=$build_dir

# Runs a command with its output in a log, shown only when it fails.
quiet() {
  local log=$scratch/step.log
  if ! "$@" >"$log" 2>&1; then
    echo "failed: $*" >&2
    tail -n 60 "$log" >&2
    exit 1
  fi
}
# check <python> <site folder> <tag> [--no-metadata], from outside the tree.
check() {
  (cd "$scratch/run" && "$1" check_installed.py "$version" "${@:2}")
}
site_of() { "$1" -c "import sysconfig; print(sysconfig.get_path('platlib'))"; }

# 1. pip into a venv.
SECONDS=0
quiet "$python" -m venv --system-site-packages "$scratch/venv"
venv_python=$scratch/venv/bin/python
quiet "$venv_python" -m pip install --no-build-isolation --no-index \
  "$scratch/pkg"
echo "pip install into a venv: ${SECONDS} s"
check "$venv_python" "$(site_of "$venv_python")" venv

# 2. A wheel: exactly the package's files, then installed and used.
SECONDS=0
quiet "$venv_python" -m build --no-isolation --wheel --outdir "$scratch/dist" \
  "$scratch/pkg"
wheels=("$scratch"/dist/*.whl)
[[ ${#wheels[@]} -eq 1 && -f ${wheels[0]} ]] ||
  { echo "wanted one wheel, found: ${wheels[*]}"; exit 1; }
echo "wheel built in ${SECONDS} s: $(basename "${wheels[0]}")"
(cd "$source_dir/worker/python" && find taups -name '*.py' | sort) \
  >"$scratch/sources.txt"
"$venv_python" - "${wheels[0]}" "$version" "$scratch/sources.txt" <<'EOF'
import sys, sysconfig, zipfile
wheel_path, version, sources = sys.argv[1:4]
dist_info = f"taups-{version}.dist-info"
tag = "cp%d%d" % sys.version_info[:2]
name = wheel_path.rsplit("/", 1)[-1]
if not (name.startswith(f"taups-{version}-{tag}-{tag}-linux_")
        and name.endswith(".whl")):
    sys.exit(f"unexpected wheel name {name}")
expected = set(open(sources).read().split())
expected.add("taups/_taups" + sysconfig.get_config_var("EXT_SUFFIX"))
expected |= {f"{dist_info}/{f}" for f in
             ("METADATA", "WHEEL", "RECORD", "top_level.txt")}
with zipfile.ZipFile(wheel_path) as wheel:
    names = set(wheel.namelist())
    if names != expected:
        sys.exit(f"wheel contents differ: missing {sorted(expected - names)}, "
                 f"unexpected {sorted(names - expected)}")
    metadata = wheel.read(f"{dist_info}/METADATA").decode()
    wheel_info = wheel.read(f"{dist_info}/WHEEL").decode()
for line in ("Name: taups", f"Version: {version}", "Requires-Dist: numpy"):
    if line not in metadata.splitlines():
        sys.exit(f"METADATA lacks {line!r}")
if "Root-Is-Purelib: false" not in wheel_info.splitlines():
    sys.exit("WHEEL does not say the wheel is platform-specific")
print(f"wheel holds the {len(expected) - 4} package files and its metadata")
EOF
quiet "$python" -m venv --system-site-packages "$scratch/wheel-venv"
wheel_python=$scratch/wheel-venv/bin/python
quiet "$wheel_python" -m pip install --no-index "${wheels[0]}"
check "$wheel_python" "$(site_of "$wheel_python")" wheel
# The installed extension must not load libraries from the build tree.
if command -v readelf >/dev/null; then
  runpath=$(readelf -d "$(site_of "$wheel_python")"/taups/_taups*.so |
    grep -E 'R(UN)?PATH' || true)
  if [[ "$runpath" == *"$build_dir"* ]]; then
    echo "the wheel's extension searches the build tree: $runpath"; exit 1
  fi
fi

# 3. cmake --install, component python, into a scratch prefix.
if [[ "$install_dir" = /* ]]; then
  echo "cmake --install not checked: TAUPS_PYTHON_INSTALL_DIR is absolute"
else
  quiet cmake --install "$build_dir" --component python \
    --prefix "$scratch/prefix"
  PYTHONPATH=$scratch/prefix/$install_dir check "$python" \
    "$scratch/prefix/$install_dir" cmake_install --no-metadata
fi
echo "OK: taups $version installed by pip, from a wheel and by cmake --install"

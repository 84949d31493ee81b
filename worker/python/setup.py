"""Builds the taups package's extension (taups._taups) with tauPS's CMake.

The pure-Python files come from taups/ (pyproject.toml finds them); the
extension is the CMake target `taups_python` of the tauPS project this
directory belongs to, built for the interpreter that runs this script and
copied into the wheel. Only that target and what it links are built.

Environment (all optional):
  TAUPS_SOURCE_DIR        the tauPS checkout (default: two directories up)
  TAUPS_PYTHON_BUILD_DIR  CMake build directory to use. An existing,
                          configured one is reused as it is (say the
                          checkout's build/, so nothing is compiled twice);
                          an empty or missing one is configured here. Default:
                          <setuptools build_temp>/cmake, kept between installs.
  TAUPS_CMAKE_ARGS        extra arguments for configuring a new build
                          directory, e.g. "-DTAUPS_WITH_CUDA=OFF"
  CMAKE_BUILD_PARALLEL_LEVEL  compile jobs (default: setuptools' --parallel,
                          else the CPU count)
The version is read from `project(tauPS VERSION x.y.z)` in the top
CMakeLists.txt, which also compiles it into the extension as __version__.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

PACKAGE_DIR = Path(__file__).resolve().parent
VERSION_LINE = re.compile(r"project\(\s*tauPS\s+VERSION\s+([0-9]+(?:\.[0-9]+)*)")


def source_root():
    """The tauPS checkout, checked to be one."""
    root = Path(os.environ.get("TAUPS_SOURCE_DIR") or PACKAGE_DIR.parent.parent)
    cmake_lists = root / "CMakeLists.txt"
    if not cmake_lists.is_file() or not VERSION_LINE.search(
            cmake_lists.read_text()):
        sys.exit(
            f"taups: {root} is not a tauPS checkout (no CMakeLists.txt with "
            "project(tauPS VERSION ...)). The package builds from a checkout: "
            "install ./worker/python from one, or set TAUPS_SOURCE_DIR to it.")
    return root.resolve()


def project_version(root):
    return VERSION_LINE.search((root / "CMakeLists.txt").read_text()).group(1)


def base_interpreter():
    """The interpreter a venv was made from (same ABI), else this one.

    A build directory configured for it stays valid when the venv goes.
    """
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


class CMakeExtension(Extension):
    """An extension whose binary comes from a CMake target."""

    def __init__(self, name, target):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    """Configures (when needed) and builds the extension's CMake target."""

    def build_extension(self, ext):
        root = source_root()
        build_dir = Path(os.environ.get("TAUPS_PYTHON_BUILD_DIR")
                         or Path(self.build_temp) / "cmake").resolve()
        if not (build_dir / "CMakeCache.txt").is_file():
            self.configure(root, build_dir)
        # build_ext --parallel gives a count, or True for "all CPUs".
        parallel = self.parallel if type(self.parallel) is int else 0
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(
            parallel if parallel > 0 else len(os.sched_getaffinity(0)))
        self.run_cmake(["--build", str(build_dir), "--target", ext.target,
                        "-j", jobs])
        built = build_dir / "python" / "taups" / (
            "_taups" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not built.is_file():
            others = sorted(p.name for p in built.parent.glob("_taups*"))
            sys.exit(
                f"taups: {built} was not built. The build directory "
                f"{build_dir} holds {others or 'no extension'}: it is "
                "configured for another interpreter, or without the Python "
                "bindings (pybind11-dev and python3-dev missing?). Use "
                "another TAUPS_PYTHON_BUILD_DIR.")
        destination = Path(self.get_ext_fullpath(ext.name))
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, destination)

    def configure(self, root, build_dir):
        build_dir.mkdir(parents=True, exist_ok=True)
        args = ["-S", str(root), "-B", str(build_dir),
                "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                f"-DPython3_EXECUTABLE={base_interpreter()}",
                "-DTAUPS_BUILD_PYTHON=ON",
                "-DTAUPS_BUILD_TESTS=OFF", "-DTAUPS_BUILD_BENCH=OFF"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("TAUPS_CMAKE_ARGS", ""))
        self.run_cmake(args)

    @staticmethod
    def run_cmake(args):
        cmake = shutil.which("cmake")
        if cmake is None:
            sys.exit("taups: cmake not found (Debian: cmake); it builds the "
                     "extension")
        print("taups: cmake " + " ".join(args), flush=True)
        subprocess.run([cmake] + args, check=True)


setup(
    version=project_version(source_root()),
    ext_modules=[CMakeExtension("taups._taups", target="taups_python")],
    cmdclass={"build_ext": CMakeBuild},
)

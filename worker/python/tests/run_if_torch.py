"""Runs a torch test or example, or reports it skipped when torch is missing.

    run_if_torch.py SCRIPT [ARGS...]

Exits 77 (CTest's SKIP_RETURN_CODE for these tests) with a SKIPPED line when
this interpreter cannot import torch, so a machine without python3-torch
shows the torch tests as skipped rather than passed or absent. Otherwise runs
SCRIPT as __main__ with ARGS and exits as it does.
"""
import importlib.util
import runpy
import sys

if len(sys.argv) < 2:
    sys.exit("usage: run_if_torch.py SCRIPT [ARGS...]")
if importlib.util.find_spec("torch") is None:
    print(f"SKIPPED: {sys.executable} has no torch (Debian: python3-torch)")
    sys.exit(77)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")

"""The DLRM example under torchrun against ps_worker --model=ctr, on the
same data: for 1 and 4 workers, a fresh ps_server first trains ps_worker's
DLRM (W C++ worker processes), then a second fresh one trains
examples/dlrm_torch.py under `python -m torch.distributed.run
--nproc_per_node=W`; every torch worker's eval AUC must be within
MAX_GAP of the lowest C++ worker's AUC, and above MIN_AUC.

    dlrm_torchrun_check.py <ps_server> <ps_worker> <dlrm_torch.py>

Run with the interpreter that has taups installed (dlrm_torchrun_test.sh
installs it into a fresh venv). CI-sized: STEPS[W] steps of 256 per worker
(about 70 s in all on two shared cores).
"""

import json
import re
import subprocess
import sys
import time

from ps_servers import ps_servers

STEPS = {1: 250, 4: 100}  # per worker, by worker count
EXAMPLES = 100000
EVAL = 8000
MAX_GAP = 0.02   # torch AUC may be this much below ps_worker's
MIN_AUC = 0.66   # an untrained model: 0.5; planted: ~0.81


# Debian 12's torch 1.13 under Python 3.11 reads torchrun's default
# --redirects=0 as no value at all (3.11's enum.Flag iteration leaves out
# Std.NONE) and fails with "'NoneType' object has no attribute 'get'";
# --redirects=1 --tee=1 works: stdout goes to a log file and to the
# console, each line prefixed "[default<rank>]:".
TORCHRUN_STREAMS = ["--redirects=1", "--tee=1"]
_JSON = re.compile(r"^(?:\[\w+\]:)?(\{.*\})\s*$")


def json_lines(text):
    """The JSON objects printed as lines of `text` (torchrun's prefix
    allowed)."""
    found = (_JSON.match(line) for line in text.splitlines())
    return [json.loads(m.group(1)) for m in found if m]


def run(command, what):
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=240)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"{what} exited {done.returncode}")
    return done.stdout, time.monotonic() - started


def cxx_aucs(ps_server, ps_worker, workers):
    with ps_servers(1, ps_server) as servers:
        procs = [subprocess.Popen(
            [ps_worker, f"--servers={servers[0]}", "--model=ctr",
             f"--worker_id={w}", f"--num_workers={workers}",
             f"--ctr_examples={EXAMPLES}", f"--steps={STEPS[workers]}",
             f"--eval_examples={EVAL}", "--log_every=0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for w in range(workers)]
        results = []
        for w, p in enumerate(procs):
            out, err = p.communicate(timeout=240)
            if p.returncode != 0:
                sys.stderr.write(err)
                raise SystemExit(f"ps_worker {w} exited {p.returncode}")
            results.append(json_lines(out)[-1]["auc"])
        return results


def torch_summaries(ps_server, example, workers):
    with ps_servers(1, ps_server) as servers:
        out, seconds = run(
            [sys.executable, "-m", "torch.distributed.run",
             *TORCHRUN_STREAMS, f"--nproc_per_node={workers}", example,
             f"--servers={servers[0]}", f"--steps={STEPS[workers]}",
             f"--examples={EXAMPLES}", f"--eval_examples={EVAL}",
             "--progress=none", f"--min_auc={MIN_AUC}"],
            f"torchrun of {workers} workers")
    summaries = json_lines(out)
    if sorted(s["worker"] for s in summaries) != list(range(workers)):
        raise SystemExit(f"wanted a JSON line from each of {workers} "
                         f"workers, got:\n{out}")
    return summaries, seconds


def main():
    ps_server, ps_worker, example = sys.argv[1:4]
    failed = False
    for workers in (1, 4):
        reference = min(cxx_aucs(ps_server, ps_worker, workers))
        summaries, seconds = torch_summaries(ps_server, example, workers)
        for s in summaries:
            ok = s["auc"] >= reference - MAX_GAP and s["auc"] >= MIN_AUC
            failed |= not ok
            print(f"{'ok' if ok else 'FAIL'}: {workers} worker(s), torch "
                  f"worker {s['worker']}: AUC {s['auc']:.4f} (ps_worker "
                  f"{reference:.4f}, planted {s['planted_auc']:.4f}), "
                  f"tau max {s['tau_max']}, {s['samples_per_s']} samples/s")
        print(f"{workers} worker(s): torchrun took {seconds:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

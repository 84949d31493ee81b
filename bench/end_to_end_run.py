#!/usr/bin/env python3
"""One end-to-end training run on 127.0.0.1, measured.

Starts S ps_server shards and W ps_worker processes of BIN_DIR, waits for the
workers, stops the shards, and prints one JSON line:

  {"job": ..., "workers": W, "shards": S, "steps": N,
   "samples_per_sec_per_worker": mean of the workers' own samples_per_sec,
   "wall_s": first start to last worker exit,
   "worker_cpu_s", "server_cpu_s": user+system seconds (getrusage of each
   process, read by wait4 when it exits),
   "cpu_us_per_sample": (worker + server CPU) / samples trained, in us,
   "samples": W x steps x batch, "loadavg": 1-minute load at start and end,
   "quality": mean test_accuracy (mlp) or auc (ctr)}

CPU per sample counts everything the processes did (start-up, data loading,
the evaluation after training), so it survives a loaded machine better than
samples/s does; samples/s is the workers' own figure (training time only).

  bench/end_to_end_run.py BIN_DIR demo,dlrm16 [--demo_steps=N] [--dlrm16_steps=N]

  demo:   2 shards, 4 mlp workers (the quick-start demo), 1000 steps of 64
  dlrm16: 2 shards, 16 ctr workers, 60 steps of 256 (one JSON line per job,
          in the order named)

Only flags that both old and new ps_worker builds know are passed, so the
same run measures any commit since 6655831. Exits 1 when a process fails.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

# job -> (shards, workers, default steps, batch, ps_worker flags)
JOBS = {
    # The quick-start demo (deploy/quickstart.sh demo): 2 shards, 4 workers,
    # MLP on Fashion-MNIST, batch 64; the demo runs 1000 steps.
    "demo": (2, 4, 1000, 64, ["--model=mlp", "--eval_examples=2000"]),
    # A 16-worker DLRM (CTR model, batch 256) on 2 shards.
    "dlrm16": (2, 16, 60, 256, ["--model=ctr", "--eval_examples=2000"]),
}


CHILDREN = []  # every process started, stopped at exit if still running


def start(argv, **kwargs):
    proc = subprocess.Popen(argv, **kwargs)
    CHILDREN.append(proc)
    return proc


def cpu_seconds(rusage):
    return rusage.ru_utime + rusage.ru_stime


def wait_for(proc):
    _, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, cpu_seconds(rusage)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("jobs", help="comma-separated: " + ", ".join(sorted(JOBS)))
    for job in JOBS:
        parser.add_argument(f"--{job}_steps", type=int, default=0)
    args = parser.parse_args()
    for job in args.jobs.split(","):
        if job not in JOBS:
            sys.exit(f"end_to_end_run: unknown job '{job}' (known: {', '.join(sorted(JOBS))})")
        run_job(args.bin_dir, job, getattr(args, f"{job}_steps"))


def run_job(bin_dir, job, steps_flag):
    shards, workers, steps, batch, flags = JOBS[job]
    steps = steps_flag or steps

    work = tempfile.mkdtemp(prefix="taups-e2e-")
    load_start = os.getloadavg()[0]
    started = time.monotonic()
    servers = []
    for s in range(shards):
        port_file = os.path.join(work, f"s{s}.port")
        log = open(os.path.join(work, f"s{s}.log"), "w")
        servers.append(start(
            [os.path.join(bin_dir, "ps_server"), "--host=127.0.0.1",
             "--port=0", f"--port_file={port_file}", f"--shard_index={s}",
             f"--num_shards={shards}", "--stats_interval_s=0"],
            stdout=log, stderr=subprocess.STDOUT))
    ports = []
    deadline = time.monotonic() + 60
    for s in range(shards):
        port_file = os.path.join(work, f"s{s}.port")
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            if time.monotonic() > deadline or servers[s].poll() is not None:
                sys.exit(f"end_to_end_run: shard {s} did not start ({work}/s{s}.log)")
            time.sleep(0.05)
        ports.append(open(port_file).read().strip())
    address = ",".join(f"127.0.0.1:{p}" for p in ports)

    procs = []
    for w in range(workers):
        out = open(os.path.join(work, f"w{w}.json"), "w")
        err = open(os.path.join(work, f"w{w}.log"), "w")
        procs.append(start(
            [os.path.join(bin_dir, "ps_worker"), f"--servers={address}",
             f"--worker_id={w}", f"--num_workers={workers}", f"--steps={steps}",
             "--log_every=0", "--seed=1", "--device=cpu", "--consistency=async"]
            + flags, stdout=out, stderr=err))
    worker_cpu = 0.0
    failed = []
    for w, proc in enumerate(procs):
        rc, cpu = wait_for(proc)
        worker_cpu += cpu
        if rc != 0:
            failed.append(f"worker {w} exited {rc} ({work}/w{w}.log)")
    wall = time.monotonic() - started
    server_cpu = 0.0
    for s, proc in enumerate(servers):
        proc.send_signal(signal.SIGTERM)
        _, cpu = wait_for(proc)
        server_cpu += cpu
    if failed:
        sys.exit("end_to_end_run: " + job + ": " + "; ".join(failed))

    summaries = []
    for w in range(workers):
        lines = open(os.path.join(work, f"w{w}.json")).read().strip().splitlines()
        summaries.append(json.loads(lines[-1]))
    quality_key = "test_accuracy" if job == "demo" else "auc"
    samples = workers * steps * batch
    print(json.dumps({
        "job": job, "workers": workers, "shards": shards, "steps": steps,
        "samples_per_sec_per_worker": round(
            sum(r["samples_per_sec"] for r in summaries) / workers, 1),
        "wall_s": round(wall, 2),
        "worker_cpu_s": round(worker_cpu, 2), "server_cpu_s": round(server_cpu, 2),
        "cpu_us_per_sample": round((worker_cpu + server_cpu) / samples * 1e6, 2),
        "samples": samples,
        "loadavg": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "quality": round(sum(r.get(quality_key, 0.0) for r in summaries) / workers, 4),
    }))
    subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    try:
        main()
    finally:
        for child in CHILDREN:
            if child.returncode is None:
                child.kill()
                child.wait()

"""Fresh ps_server processes for a test that needs more than the one
with_ps_server.sh started (e.g. two clusters whose tables share a name, so
their rows start equal: initial values depend on the table name).

    with ps_servers(1) as servers:      # ["127.0.0.1:<port>"]
        ...

    with ps_servers(1, args=["--tls_cert=...", ...]) as servers:  # flags

The binary is $TAUPS_PS_SERVER (CTest sets it). Servers listen on free
loopback ports and are stopped (SIGTERM, then SIGKILL) on exit; `args` are
passed to every server after the default flags.
"""

import contextlib
import os
import subprocess
import tempfile
import time


@contextlib.contextmanager
def ps_servers(count, binary=None, args=()):
    binary = binary or os.environ.get("TAUPS_PS_SERVER")
    if not binary:
        raise RuntimeError("$TAUPS_PS_SERVER names no ps_server binary")
    with tempfile.TemporaryDirectory() as scratch:
        procs, addresses = [], []
        try:
            for i in range(count):
                port_file = os.path.join(scratch, f"port{i}")
                log = open(os.path.join(scratch, f"server{i}.log"), "w")
                procs.append(subprocess.Popen(
                    [binary, "--host=127.0.0.1", "--port=0",
                     f"--port_file={port_file}", "--stats_interval_s=0",
                     *args],
                    stdout=log, stderr=subprocess.STDOUT))
                log.close()
                deadline = time.monotonic() + 20
                while not (os.path.exists(port_file)
                           and os.path.getsize(port_file)):
                    if procs[-1].poll() is not None or \
                            time.monotonic() > deadline:
                        with open(os.path.join(scratch,
                                               f"server{i}.log")) as f:
                            raise RuntimeError("ps_server did not start:\n"
                                               + f.read())
                    time.sleep(0.05)
                with open(port_file) as f:
                    addresses.append(f"127.0.0.1:{f.read().strip()}")
            yield addresses
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

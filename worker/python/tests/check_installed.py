"""Checks an installed taups package and trains through it.

    check_installed.py <expected version> <site folder> <tag> [--no-metadata]

Run by pip_install_test.sh from outside the source tree, with the servers in
TAUPS_SERVERS. It checks that `import taups` finds the package in the
expected folder (not a build tree), that taups.__version__ and the installed
metadata (pip's; not with --no-metadata, as after cmake --install) name the
expected version, then fits a least-squares model in a
dense table (SGD on the shard, 25 steps) and requires the parameters to
follow plain SGD computed here in numpy; with torch importable it also pulls
and pushes sparse rows through CPU tensors. Tables are named after <tag> so
several runs can share one server.
"""

import importlib.metadata
import os
import sys

import numpy as np

import taups



def require(condition, what):
    if not condition:
        sys.exit(f"check_installed.py: failed: {what}")


expected_version, expected_dir, tag = sys.argv[1:4]
servers = os.environ["TAUPS_SERVERS"].split(",")

package_dir = os.path.dirname(os.path.realpath(taups.__file__))
want_dir = os.path.join(os.path.realpath(expected_dir), "taups")
require(package_dir == want_dir,
        f"imported {package_dir}, wanted {want_dir}")
require(taups.__version__ == expected_version,
        f"taups.__version__ {taups.__version__}")
if "--no-metadata" not in sys.argv[4:]:
    metadata_version = importlib.metadata.version("taups")
    require(metadata_version == expected_version,
            f"metadata version {metadata_version}")

# Least squares: loss(w) = |Xw - y|^2 / (2n), gradient X^T (Xw - y) / n.
rng = np.random.default_rng(7)
n, dim, lr, steps = 64, 8, np.float32(0.5), 25
x = rng.standard_normal((n, dim)).astype(np.float32)
y = x @ rng.standard_normal(dim).astype(np.float32)


def gradient(w):
    return (x.T @ (x @ w - y) / n).astype(np.float32)


def loss(w):
    return float(np.sum((x @ w - y) ** 2) / (2 * n))


reference = np.zeros(dim, np.float32)  # the table starts at zeros
with taups.Client(servers, worker_id=0, call_timeout_s=10,
                  connect_timeout_s=10) as client:
    table = f"fit_{tag}"
    client.create_table(taups.dense_table(table, dim, optimizer="sgd",
                                          learning_rate=float(lr)))
    w = np.empty(dim, np.float32)
    for step in range(steps):
        client.pull_dense(table, w)
        np.testing.assert_allclose(w, reference, rtol=1e-5, atol=1e-6,
                                   err_msg=f"step {step}")
        result = client.push_dense(table, gradient(w))
        require(result.all_accepted and result.max_tau == 0,
                f"step {step}: push taus {result.taus}")
        client.clock()
        reference = reference - lr * gradient(reference)
    client.pull_dense(table, w)
    np.testing.assert_allclose(w, reference, rtol=1e-5, atol=1e-6)
    first, last = loss(np.zeros(dim, np.float32)), loss(w)
    require(last < 0.05 * first, f"loss {first} -> {last}")
    print(f"{tag}: taups {taups.__version__} from {package_dir}; "
          f"dense loss {first:.4f} -> {last:.6f} in {steps} steps")

    try:
        import torch
    except ImportError:
        print(f"{tag}: torch not importable; sparse torch step not run")
        sys.exit(0)
    sparse = f"emb_{tag}"
    client.create_table(taups.sparse_table(sparse, 4, optimizer="sgd",
                                           learning_rate=1.0))
    keys = torch.tensor([3, 17, 3], dtype=torch.int64)
    rows = torch.full((3, 4), 9.0)
    client.pull_sparse(sparse, keys, rows)
    require(torch.equal(rows, torch.zeros(3, 4)),  # zeros initializer
            f"fresh rows {rows}")
    client.push_sparse(sparse, keys, torch.ones(3, 4))
    client.pull_sparse(sparse, keys, rows)
    # Key 3 appears twice: its gradients are summed (-2), key 17 once (-1).
    expected = torch.tensor([[-2.0] * 4, [-1.0] * 4, [-2.0] * 4])
    require(torch.equal(rows, expected), f"rows after the push {rows}")
    print(f"{tag}: torch {torch.__version__} from "
          f"{os.path.dirname(torch.__file__)}; sparse rows as expected")

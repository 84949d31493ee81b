"""Prefetching through taups.torch.prefetch changes nothing under sync.

Two runs train the same model on the same batches against identically
initialised sync tables (one worker; each run on a ps_server of its own, so
both tables have the same name and hence the same initial rows): one pulls in each forward pass, the
other prefetches the next batch's rows. Under sync a prefetch pulls only
after the step is clocked, so both runs must end with the same rows, bit
for bit. Under async the prefetched run must still train (pushes accepted,
staleness reported).

Run by CTest (python_torch_prefetch_test) through with_ps_server.sh and
run_if_torch.py.
"""

import os
import unittest

import numpy as np
import torch

import taups
import taups.torch as tt
from ps_servers import ps_servers

SERVERS = os.environ["TAUPS_SERVERS"].split(",")
DIM = 3
STEPS = 12


def batches(seed):
    rng = np.random.default_rng(seed)
    for _ in range(STEPS):
        ids = torch.from_numpy(rng.integers(0, 20, size=(8, 2)))
        yield {"f": ids, "target": torch.from_numpy(
            rng.normal(size=(8, DIM)).astype(np.float32))}


def train(client, table, consistency, use_prefetch):
    ebc = tt.EmbeddingBagCollection(client, [tt.EmbeddingTable(
        table, DIM, ["f"], optimizer="sgd", learning_rate=0.1,
        init_scale=0.5, init_seed=3, consistency=consistency)])
    features_of = lambda b: {"f": b["f"]}
    stats = []
    if use_prefetch:
        loop = tt.prefetch(({**b, "features": features_of(b)}
                            for b in batches(7)), ebc,
                           lambda b: b["features"])
    else:
        loop = ({**b, "features": features_of(b)} for b in batches(7))
    for batch in loop:
        with tt.training_step(ebc) as step:
            pooled = ebc(batch["features"])["f"]
            ((pooled - batch["target"]) ** 2).mean().backward()
        stats.append(step.stats.tables[table])
    ebc.close()
    keys = np.arange(20, dtype=np.uint64)  # feature slot 0: key == id
    rows = np.empty((20, DIM), np.float32)
    client.pull_sparse(table, keys, rows)
    return rows, stats


class PrefetchTest(unittest.TestCase):

    def test_sync_prefetch_gives_the_same_parameters(self):
        sync = taups.consistency("sync", num_workers=1)
        with ps_servers(3) as (first, second, third):
            with taups.Client([first], worker_id=0) as client:
                plain, _ = train(client, "pf_sync", sync, False)
            with taups.Client([second], worker_id=0) as client:
                fetched, stats = train(client, "pf_sync", sync, True)
            with taups.Client([third], worker_id=0) as client:
                init = np.empty((20, DIM), np.float32)
                client.create_table(taups.sparse_table(
                    "pf_sync", DIM, initializer="uniform", init_scale=0.5,
                    init_seed=3, consistency=sync))
                client.pull_sparse("pf_sync", np.arange(20, dtype=np.uint64),
                                   init)
        self.assertEqual(len(stats), STEPS)
        self.assertTrue(all(s.pushes == 1 and s.rejected == 0 for s in stats))
        np.testing.assert_array_equal(plain, fetched)
        self.assertFalse(np.array_equal(init, plain))  # training moved rows

    def test_async_prefetch_trains_and_reports_staleness(self):
        with taups.Client(SERVERS, worker_id=0) as client:
            _, stats = train(client, "pf_async", None, True)
        self.assertEqual(len(stats), STEPS)
        self.assertTrue(all(s.pushes == 1 and s.rejected == 0 for s in stats))
        self.assertTrue(all(s.tau_max <= 1 for s in stats))


if __name__ == "__main__":
    unittest.main()

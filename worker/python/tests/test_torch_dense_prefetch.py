"""DenseParameters(prefetch=True) against plain pulls, on a real ps_server.

Sync: two workers (threads, one taups.Client each) fit one linear model
in a sync dense table, each on its own data, once with plain pulls and once
with the next step's values prefetched (zero initial values, so the two
tables start equal). Under sync the prefetch is made
after the clock and answered when the step closed, so both runs must end
with the same parameters, bit for bit, and no pull may have arrived before
its step's predecessor was clocked (overlapped_pulls == 0).

Async: one worker prefetches while its step computes. Some pulls then
arrive before the previous step's push is applied (overlapped_pulls > 0,
and that push's successor measures tau == 1), and none is staler than that
(tau <= 1: a single worker can miss only its own last update).

Run by CTest (python_torch_dense_prefetch_test) through with_ps_server.sh
and run_if_torch.py.
"""

import os
import threading
import time
import unittest

import numpy as np
import torch

import taups
import taups.torch as tt

SERVERS = os.environ["TAUPS_SERVERS"].split(",")
STEPS = 8


def data(worker):
    rng = np.random.default_rng(10 + worker)
    x = torch.from_numpy(rng.normal(size=(STEPS, 16, 3)).astype(np.float32))
    y = torch.from_numpy(rng.normal(size=(STEPS, 16, 2)).astype(np.float32))
    return x, y


def fit(client, table, worker, consistency, use_prefetch, compute_s=0.0):
    """Trains; returns (final flat parameters, per-step TableStepStats)."""
    model = torch.nn.Linear(3, 2)
    dense = tt.DenseParameters(client, table, model.parameters(),
                               optimizer="sgd", learning_rate=0.1,
                               initializer="zeros", consistency=consistency, prefetch=use_prefetch)
    x, y = data(worker)
    stats = []
    for step in range(STEPS):
        with tt.training_step(dense) as done:
            loss = ((model(x[step]) - y[step]) ** 2).mean()
            time.sleep(compute_s)
            loss.backward()
        stats.append(done.stats.tables[table])
    dense.close()
    final = np.empty(dense.size, np.float32)
    client.pull_dense(table, final)
    return final, stats


def two_workers(table, use_prefetch):
    sync = taups.consistency("sync", num_workers=2)
    clients = [taups.Client(SERVERS, worker_id=w, call_timeout_s=30)
               for w in range(2)]
    results, errors = [None, None], []

    def worker(w):
        try:
            results[w] = fit(clients[w], table, w, sync, use_prefetch)
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for c in clients:
        c.close()
    if errors:
        raise errors[0]
    return results


class DensePrefetchTest(unittest.TestCase):

    def test_sync_prefetch_gives_the_same_parameters(self):
        plain = two_workers("dense_pf_plain", False)
        fetched = two_workers("dense_pf_fetched", True)
        for w in range(2):
            np.testing.assert_array_equal(plain[w][0], fetched[w][0])
            for stats in (plain[w][1], fetched[w][1]):
                self.assertEqual(len(stats), STEPS)
                self.assertTrue(all(s.pushes == 1 and s.rejected == 0
                                    and s.tau_max == 0 for s in stats))
            self.assertTrue(all(s.overlapped_pulls == 0
                                for s in fetched[w][1]))
        # Both workers read one table: the same final values.
        np.testing.assert_array_equal(fetched[0][0], fetched[1][0])
        # Training moved them away from the initial zeros.
        self.assertTrue(np.all(plain[0][0] != 0), plain[0][0])

    def test_async_prefetch_overlaps_and_misses_at_most_its_own_step(self):
        with taups.Client(SERVERS, worker_id=0) as client:
            _, stats = fit(client, "dense_pf_async", 0, None, True,
                           compute_s=0.03)
        self.assertTrue(all(s.pushes == 1 and s.tau_max <= 1 for s in stats))
        self.assertGreater(sum(s.overlapped_pulls for s in stats), 0)
        self.assertTrue(any(s.tau_max == 1 for s in stats), stats)


if __name__ == "__main__":
    unittest.main(verbosity=2)

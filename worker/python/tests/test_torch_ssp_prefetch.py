"""Prefetch under ssp(s): it starts early, and every pull stays within s.

Two workers (threads, one taups.Client each) train one ssp(s) table; worker
1 computes more slowly, so worker 0 runs ahead until the bound holds it.
Each batch looks up two "counter" rows, one per worker, and the loss makes
worker w's gradient on its own counter exactly -1 (SGD, learning rate 1,
zero initial rows): counter w = the number of worker w's pushes applied.
So the rows a worker's forward receives at its step j say how far behind
every worker they are: lag_w = j - counter_w steps. The SSP bound promises
lag_w <= s for every worker and every pull (the rows of step j include
every update of steps < j - s). Checked for every step of both workers, in
a plain run and in one through taups.torch.prefetch.

That the prefetch overlapped is read from the same rows: in the prefetched
run a worker sees its own counter one behind (lag 1) at some steps, i.e.
its rows were pulled before its previous step's push landed; the plain run
never does (lag 0). StepStats' overlapped_pulls counts those pulls. (The
fast worker's prefetches mostly wait for the clock: it is at the bound.)

Each run has a ps_server of its own ($TAUPS_PS_SERVER). Run by CTest
(python_torch_ssp_prefetch_test) through with_ps_server.sh and
run_if_torch.py.
"""

import threading
import time
import unittest

import torch

import taups
import taups.torch as tt
from ps_servers import ps_servers

BOUND = 2
STEPS = 10
COMPUTE_S = (0.03, 0.09)  # worker 0's and worker 1's compute per step


def counters():
    """One batch: bag w of feature "counter" holds id w."""
    return {"counter": torch.tensor([[0], [1]])}


def train(client, table, worker, use_prefetch, record):
    ebc = tt.EmbeddingBagCollection(client, [tt.EmbeddingTable(
        table, 1, ["counter"], optimizer="sgd", learning_rate=1.0,
        initializer="zeros",
        consistency=taups.consistency("ssp", num_workers=2,
                                      staleness_bound=BOUND))])
    batches = (counters() for _ in range(STEPS))
    if use_prefetch:
        batches = tt.prefetch(batches, ebc)
    for step, batch in enumerate(batches):
        with tt.training_step(ebc) as done:
            rows = ebc(batch)["counter"]          # (2, 1): both counters
            seen = [float(v) for v in rows.detach()[:, 0]]
            time.sleep(COMPUTE_S[worker])         # the step's compute
            (-rows[worker, 0]).backward()
        record.append({"step": step, "lags": [step - v for v in seen],
                       "overlapped": done.stats.tables[table]
                       .overlapped_pulls})
    ebc.close()


def run(servers, use_prefetch):
    """Both workers' records: one dict per step. `servers` are fresh: a
    worker id that registered before would rejoin with its old clock."""
    clients = [taups.Client(servers, worker_id=w, call_timeout_s=30)
               for w in range(2)]
    records, errors = [[], []], []

    def worker(w):
        try:
            train(clients[w], "ssp_counters", w, use_prefetch, records[w])
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            clients[w].close()  # leaves: the other is no longer bounded

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    return records


class SspPrefetchTest(unittest.TestCase):

    def check_bound(self, records):
        for w, record in enumerate(records):
            self.assertEqual(len(record), STEPS)
            for r in record:
                # Counters are whole numbers of pushes.
                self.assertTrue(all(lag == int(lag) for lag in r["lags"]))
                self.assertLessEqual(max(r["lags"]), BOUND,
                                     f"worker {w} step {r['step']}: {r}")
                self.assertGreaterEqual(r["lags"][w], 0)

    def test_plain_and_prefetched_runs_stay_within_the_bound(self):
        with ps_servers(2) as (first, second):
            plain = run([first], False)
            fetched = run([second], True)
        self.check_bound(plain)
        self.check_bound(fetched)
        # Plain pulls come after the worker's own previous push.
        for w in range(2):
            self.assertTrue(all(r["lags"][w] == 0 for r in plain[w]))
            self.assertTrue(all(r["overlapped"] == 0 for r in plain[w]))
        # Some prefetched pulls ran during the worker's previous step (the
        # fast worker's mostly wait at the bound, the slow one's do not):
        # its own counter was one behind, and the stats say so.
        own_behind = [(w, r["step"]) for w in range(2) for r in fetched[w]
                      if r["lags"][w] == 1]
        self.assertTrue(own_behind, f"no early pull: {fetched}")
        overlapped = [(w, r["step"]) for w in range(2) for r in fetched[w]
                      if r["overlapped"]]
        self.assertTrue(set(own_behind) <= set(overlapped),
                        f"{own_behind} vs {overlapped}")
        self.assertTrue(all(r["lags"][w] <= 1
                            for w in range(2) for r in fetched[w]))


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""taups.torch under the policies the other tests leave out, on a real
ps_server: DenseParameters under semi_sync (a quorum closes the step, a push
that arrives after its step closed is refused and counted), and refused stale pushes counted in StepStats
(a tau threshold on an embedding table).

Expected values are worked out by hand from SGD at rate 1 on zero-initial
tables. Run by CTest (python_torch_policies_test) through with_ps_server.sh
and run_if_torch.py.
"""

import os
import unittest

import numpy as np
import torch

import taups
import taups.torch as tt

SERVERS = os.environ["TAUPS_SERVERS"].split(",")


def table_values(client, table, size):
    out = np.empty(size, np.float32)
    client.pull_dense(table, out)
    return out


class SemiSyncDenseTest(unittest.TestCase):

    def test_a_quorum_closes_the_step_and_a_late_push_is_refused(self):
        table = f"semi_{os.getpid()}"
        # Half of two workers: one push closes a step; late pushes dropped.
        policy = taups.consistency("semi_sync", num_workers=2, quorum=0.5,
                                   late="drop")
        fast_client = taups.Client(SERVERS, worker_id=0, call_timeout_s=20)
        slow_client = taups.Client(SERVERS, worker_id=1, call_timeout_s=20)
        settings = dict(optimizer="sgd", learning_rate=1.0,
                        initializer="zeros", consistency=policy)
        fast = torch.nn.Parameter(torch.zeros(4))
        slow = torch.nn.Parameter(torch.zeros(4))
        fast_dense = tt.DenseParameters(fast_client, table, [fast], **settings)
        slow_dense = tt.DenseParameters(slow_client, table, [slow], **settings)
        # Worker 0 runs two steps alone: under sync it would wait for
        # worker 1 at the first pull of step 1; here each step closes on
        # its own push (the mean over the arrivals: its gradient).
        for step, grad in enumerate([[1, 2, 3, 4], [0.5, 0.5, 0.5, 0.5]]):
            with tt.training_step(fast_dense) as done:
                fast.grad = torch.tensor(grad, dtype=torch.float32)
            stats = done.stats.tables[table]
            self.assertEqual((stats.pushes, stats.rejected), (1, 0), step)
        expected = -np.array([1.5, 2.5, 3.5, 4.5], np.float32)
        np.testing.assert_array_equal(
            table_values(fast_client, table, 4), expected)
        # Worker 1, behind, pulls: the pull carries the open step (2), so
        # it catches up at once. Worker 0 closes step 2 before worker 1's
        # push arrives: that push is late, refused and counted, and the
        # table holds worker 0's three steps only.
        with tt.training_step(slow_dense) as late:
            np.testing.assert_array_equal(slow.detach().numpy(), expected)
            with tt.training_step(fast_dense):
                fast.grad = torch.full((4,), 0.25)
            slow.grad = torch.full((4,), 100.0)
        stats = late.stats.tables[table]
        self.assertEqual((stats.pushes, stats.rejected), (1, 1))
        self.assertEqual(late.stats.rejected, 1)
        np.testing.assert_array_equal(
            table_values(fast_client, table, 4), expected - 0.25)
        for client in (fast_client, slow_client):
            client.close()


class RejectedPushTest(unittest.TestCase):

    def test_a_push_past_tau_max_is_refused_and_counted(self):
        table = f"reject_{os.getpid()}"
        strict = taups.StalenessConfig()
        strict.reject_above_tau_max = True
        strict.tau_max = 0
        with taups.Client(SERVERS, worker_id=0, call_timeout_s=20) as client, \
                taups.Client(SERVERS, worker_id=1,
                             call_timeout_s=20) as other:
            ebc = tt.EmbeddingBagCollection(client, [tt.EmbeddingTable(
                table, 2, ["f"], optimizer="sgd", learning_rate=1.0,
                initializer="zeros", staleness=strict)])
            out = ebc({"f": torch.tensor([5])})["f"]
            # Another worker's push lands between our pull and our push.
            other.push_sparse(table, np.array([5], np.uint64),
                              np.ones((1, 2), np.float32))
            out.sum().backward()
            stats = ebc.step()
            self.assertEqual(stats.tables[table].pushes, 1)
            self.assertEqual(stats.tables[table].rejected, 1)
            self.assertEqual(stats.rejected, 1)
            self.assertEqual(stats.tau_max, 1)
            row = np.empty((1, 2), np.float32)
            client.pull_sparse(table, np.array([5], np.uint64), row)
            np.testing.assert_array_equal(row, [[-1.0, -1.0]])  # theirs only
            # A fresh pull makes the next push current again: accepted.
            out = ebc({"f": torch.tensor([5])})["f"]
            out.sum().backward()
            stats = ebc.step()
            self.assertEqual(stats.rejected, 0)
            client.pull_sparse(table, np.array([5], np.uint64), row)
            np.testing.assert_array_equal(row, [[-2.0, -2.0]])
            ebc.close()


if __name__ == "__main__":
    unittest.main()

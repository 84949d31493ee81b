"""CPU torch tensors through the taups binding, against a real ps_server.

Run by CTest (python_torch_test) through with_ps_server.sh (TAUPS_SERVERS);
PYTHONPATH must hold <build>/python. CTest runs it through run_if_torch.py,
which reports it skipped when torch is missing.
"""

import os
import unittest

import numpy as np
import torch

import taups

SERVERS = os.environ["TAUPS_SERVERS"].split(",")


class TorchTensorTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = taups.Client(SERVERS, worker_id=0, call_timeout_s=10)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_dense_pull_fills_the_tensor_itself(self):
        c = self.client
        c.create_table(taups.dense_table("t_dense", 6, learning_rate=0.5))
        c.push_dense("t_dense", torch.arange(6, dtype=torch.float32))
        weight = torch.nn.Parameter(torch.zeros(2, 3))  # requires_grad
        pointer = weight.data_ptr()
        c.pull_dense("t_dense", weight)
        self.assertEqual(weight.data_ptr(), pointer)
        expected = -0.5 * torch.arange(6, dtype=torch.float32).reshape(2, 3)
        self.assertTrue(torch.equal(weight.detach(), expected))

    def test_sparse_with_torch_keys_and_rows(self):
        c = self.client
        c.create_table(taups.sparse_table("t_sparse", 3, learning_rate=1.0))
        keys = torch.tensor([[10, 11], [10, 12]])  # int64, torch's index type
        grads = torch.ones(2, 2, 3)
        c.push_sparse("t_sparse", keys, grads)
        rows = torch.zeros(2, 2, 3)
        c.pull_sparse("t_sparse", keys, rows)
        self.assertTrue(torch.equal(rows[0, 0], torch.full((3,), -2.0)))
        self.assertTrue(torch.equal(rows[0, 1], torch.full((3,), -1.0)))
        self.assertTrue(torch.equal(rows[1, 1], torch.full((3,), -1.0)))
        # numpy keys and torch rows mix freely.
        same = torch.zeros(1, 3)
        c.pull_sparse("t_sparse", np.array([10], np.uint64), same)
        self.assertTrue(torch.equal(same[0], rows[0, 0]))

    def test_wrong_tensors_raise(self):
        c = self.client
        c.create_table(taups.dense_table("t_check", 4))
        with self.assertRaisesRegex(TypeError, "float64, expected float32"):
            c.pull_dense("t_check", torch.zeros(4, dtype=torch.float64))
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            c.pull_dense("t_check", torch.zeros(2, 2).t())
        with self.assertRaisesRegex(TypeError, "int32, expected uint64"):
            c.pull_sparse("t_check", torch.zeros(2, dtype=torch.int32),
                          torch.zeros(2, 4))


if __name__ == "__main__":
    unittest.main(verbosity=2)

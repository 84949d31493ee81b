"""taups.torch modules with CUDA tensors (inputs, outputs and gradients on
the GPU; rows staged through pinned memory), on a real ps_server.

Exits 77, reported skipped by CTest (python_torch_cuda_test), when this
torch has no CUDA device. Expected values come from the same lookups done
by torch.nn.EmbeddingBag on the CPU over rows read with the raw client.
"""

import os
import sys
import unittest

import numpy as np
import torch

if not torch.cuda.is_available():
    print("SKIPPED: torch.cuda.is_available() is False (no CUDA device, or "
          "a torch built without CUDA)")
    sys.exit(77)

import taups
import taups.torch as tt

SERVERS = os.environ["TAUPS_SERVERS"].split(",")
DIM = 8


class CudaModuleTest(unittest.TestCase):

    def test_pooled_lookup_and_push_from_the_gpu(self):
        table = f"cuda_{os.getpid()}"
        with taups.Client(SERVERS, worker_id=0) as client:
            ebc = tt.EmbeddingBagCollection(client, [tt.EmbeddingTable(
                table, DIM, ["f"], optimizer="sgd", learning_rate=1.0,
                init_scale=0.5)], pooling="mean", device="cuda")
            values = torch.tensor([4, 4, 9, 2], device="cuda")
            lengths = torch.tensor([2, 0, 2], device="cuda")
            unique = np.array([2, 4, 9], np.uint64)  # feature slot 0
            before = np.empty((3, DIM), np.float32)
            client.pull_sparse(table, unique, before)
            bag = torch.nn.EmbeddingBag(3, DIM, mode="mean")
            bag.weight.data.copy_(torch.from_numpy(before))
            expected = bag(torch.tensor([1, 1, 2, 0]), torch.tensor([0, 2, 2]))
            out = ebc({"f": (values, lengths)})["f"]
            self.assertEqual(out.device.type, "cuda")
            torch.testing.assert_close(out.detach().cpu(), expected.detach())
            weights = torch.randn(3, DIM)
            (out * weights.cuda()).sum().backward()
            (expected * weights).sum().backward()
            ebc.step()
            after = np.empty((3, DIM), np.float32)
            client.pull_sparse(table, unique, after)
            torch.testing.assert_close(torch.from_numpy(before - after),
                                       bag.weight.grad, rtol=1e-5, atol=1e-5)
            ebc.close()

    def test_dense_parameters_on_the_gpu(self):
        with taups.Client(SERVERS, worker_id=0) as client:
            model = torch.nn.Linear(4, 2).cuda()
            dense = tt.DenseParameters(client, f"cuda_dense_{os.getpid()}",
                                       model.parameters(), optimizer="sgd",
                                       learning_rate=0.5)
            with tt.training_step(dense):
                w0 = model.weight.detach().cpu()
                model(torch.ones(3, 4, device="cuda")).sum().backward()
                grad = model.weight.grad.detach().cpu()
            dense.pull()
            torch.testing.assert_close(model.weight.detach().cpu(),
                                       w0 - 0.5 * grad)


if __name__ == "__main__":
    unittest.main()

"""taups.torch's embedding modules against plain torch, on a real ps_server.

Every expected value comes from torch itself: the rows the module used are
read back with the raw client, put into a torch.nn.EmbeddingBag (or
Embedding), and its forward output and weight gradient are what the module
must produce and push. The tables use SGD with learning rate 1, so a row's
pushed gradient is exactly old row - new row.

Run by CTest (python_torch_modules_test) through with_ps_server.sh and
run_if_torch.py (skipped without torch).
"""

import itertools
import os
import sys
import types
import unittest

import numpy as np
import torch

import taups
import taups.torch as tt

SERVERS = os.environ["TAUPS_SERVERS"].split(",")
DIM = 4
_names = itertools.count()


def fresh(prefix):
    """A table name no earlier run against this server used."""
    return f"{prefix}_{os.getpid()}_{next(_names)}"


def sgd_table(name, features, **kw):
    kw.setdefault("optimizer", "sgd")
    kw.setdefault("learning_rate", 1.0)
    kw.setdefault("init_scale", 0.5)
    return tt.EmbeddingTable(name, DIM, features, **kw)


def feature_keys(slot, ids):
    """The key the module must use for (feature slot, id): the reference's
    own statement of the key layout (slot in the bits from 40 up)."""
    return (np.uint64(slot) << np.uint64(40)) | np.asarray(ids, np.uint64)


# Two features sharing a table; bags with duplicates and empty bags.
#   "a": [3, 3, 7] [] [7] [1, 3]      "b": [3] [3, 9] [] []
BATCH = {
    "a": (torch.tensor([3, 3, 7, 7, 1, 3]), torch.tensor([3, 0, 1, 2])),
    "b": (torch.tensor([3, 3, 9]), torch.tensor([1, 2, 0, 0])),
}


class ModuleTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = taups.Client(SERVERS, worker_id=0, call_timeout_s=20)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def rows(self, table, keys):
        out = np.empty((len(keys), DIM), np.float32)
        self.client.pull_sparse(table, np.asarray(keys, np.uint64), out)
        return torch.from_numpy(out)

    def reference_bag(self, table, slot, feature, mode):
        """nn.EmbeddingBag over the feature's rows as they are now, and the
        ids remapped to positions among the feature's unique ids."""
        values, lengths = BATCH[feature]
        unique, inverse = np.unique(values.numpy(), return_inverse=True)
        weight = self.rows(table, feature_keys(slot, unique))
        bag = torch.nn.EmbeddingBag(len(unique), DIM, mode=mode)
        bag.weight.data.copy_(weight)
        offsets = torch.cumsum(lengths, 0) - lengths
        return bag, torch.from_numpy(inverse), offsets, unique

    def check_pooled(self, mode):
        name = fresh(f"ebc_{mode}")
        ebc = tt.EmbeddingBagCollection(
            self.client, [sgd_table(name, ["a", "b"])], pooling=mode)
        # The references read the rows before training changes them.
        refs = {f: self.reference_bag(name, slot, f, mode)
                for slot, f in enumerate(["a", "b"])}
        out = ebc(BATCH)
        self.assertEqual(list(out), ["a", "b"])
        torch.manual_seed(0)
        weights = {f: torch.randn(4, DIM) for f in out}
        loss = sum((out[f] * weights[f]).sum() for f in out)
        expected_grads = {}
        for f, (bag, inverse, offsets, unique) in refs.items():
            expected = bag(inverse, offsets)
            torch.testing.assert_close(out[f].detach(), expected,
                                       rtol=1e-6, atol=1e-6)
            (expected * weights[f]).sum().backward()
            expected_grads[f] = (unique, bag.weight.grad.clone(),
                                 bag.weight.detach().clone())
        loss.backward()
        stats = ebc.step()
        table_stats = stats.tables[name]
        self.assertEqual((table_stats.pulls, table_stats.pushes,
                          table_stats.rejected), (1, 1, 0))
        for slot, f in enumerate(["a", "b"]):
            unique, grad, before = expected_grads[f]
            after = self.rows(name, feature_keys(slot, unique))
            torch.testing.assert_close(before - after, grad,
                                       rtol=1e-5, atol=1e-5)
        # Empty bags pool to zeros.
        self.assertTrue(torch.equal(out["a"][1].detach(), torch.zeros(DIM)))
        self.assertTrue(torch.equal(out["b"][3].detach(), torch.zeros(DIM)))
        ebc.close()

    def test_sum_pooling_matches_embedding_bag(self):
        self.check_pooled("sum")

    def test_mean_pooling_matches_embedding_bag(self):
        self.check_pooled("mean")

    def test_features_have_their_own_key_spaces(self):
        name = fresh("spaces")
        ebc = tt.EmbeddingBagCollection(self.client,
                                        [sgd_table(name, ["a", "b"])])
        out = ebc({"a": torch.tensor([5]), "b": torch.tensor([5])})
        self.assertFalse(torch.equal(out["a"], out["b"]))
        torch.testing.assert_close(
            out["b"].detach(), self.rows(name, feature_keys(1, [5])))
        ebc.close()

    def test_unpooled_matches_embedding(self):
        name = fresh("ec")
        ec = tt.EmbeddingCollection(self.client, [sgd_table(name, ["a"])])
        values, lengths = BATCH["a"]
        unique, inverse = np.unique(values.numpy(), return_inverse=True)
        emb = torch.nn.Embedding(len(unique), DIM)
        emb.weight.data.copy_(self.rows(name, feature_keys(0, unique)))
        before = emb.weight.detach().clone()
        out = ec({"a": BATCH["a"]})["a"]
        expected = emb(torch.from_numpy(inverse))
        torch.testing.assert_close(out.values.detach(), expected.detach(),
                                   rtol=1e-6, atol=1e-6)
        self.assertTrue(torch.equal(out.lengths, lengths))
        target = torch.linspace(-1, 1, values.numel() * DIM).reshape(-1, DIM)
        ((out.values - target) ** 2).sum().backward()
        ((expected - target) ** 2).sum().backward()
        ec.step()
        after = self.rows(name, feature_keys(0, unique))
        torch.testing.assert_close(before - after, emb.weight.grad,
                                   rtol=1e-5, atol=1e-5)
        ec.close()

    def test_offsets_lengths_and_fixed_bags_agree(self):
        name = fresh("layouts")
        ebc = tt.EmbeddingBagCollection(self.client,
                                        [sgd_table(name, ["a", "b"])])
        ebc.eval()
        ids = torch.tensor([[1, 2], [2, 4], [8, 8]])
        by_tensor = ebc({"a": ids, "b": ids[:, 0]})
        jagged = tt.JaggedFeatures(["a", "b"],
                                   torch.cat([ids.reshape(-1), ids[:, 0]]),
                                   lengths=[2, 2, 2, 1, 1, 1])
        by_lengths = ebc(jagged)
        by_offsets = ebc(tt.JaggedFeatures(
            ["a", "b"], jagged.values, offsets=[0, 2, 4, 6, 7, 8, 9]))
        for f in ("a", "b"):
            self.assertTrue(torch.equal(by_tensor[f], by_lengths[f]))
            self.assertTrue(torch.equal(by_tensor[f], by_offsets[f]))
        self.assertEqual(ebc.step().tables[name].pushes, 0)  # eval: no push
        ebc.close()

    def test_keyed_jagged_tensor_is_read_when_torchrec_is_imported(self):
        class FakeKjt:  # torchrec's accessors, nothing more
            def __init__(self, keys, values, lengths):
                self._k, self._v, self._l = keys, values, lengths

            def keys(self):
                return self._k

            def values(self):
                return self._v

            def lengths(self):
                return self._l

        fake = types.ModuleType("torchrec")
        fake.KeyedJaggedTensor = FakeKjt
        sys.modules["torchrec"] = fake
        try:
            name = fresh("kjt")
            ebc = tt.EmbeddingBagCollection(self.client,
                                            [sgd_table(name, ["a"])])
            ebc.eval()
            kjt = FakeKjt(["a"], BATCH["a"][0], BATCH["a"][1])
            self.assertTrue(torch.equal(ebc(kjt)["a"], ebc(
                {"a": BATCH["a"]})["a"]))
            ebc.close()
        finally:
            del sys.modules["torchrec"]

    def test_bad_input_is_refused_precisely(self):
        name = fresh("bad")
        ebc = tt.EmbeddingBagCollection(self.client, [sgd_table(name, ["a"])])
        with self.assertRaisesRegex(ValueError, r"ids must be in \[0, 2\^40\)"):
            ebc({"a": torch.tensor([-1])})
        with self.assertRaisesRegex(KeyError, "no feature 'a'"):
            ebc({"z": torch.tensor([1])})
        with self.assertRaisesRegex(ValueError,
                                    "exactly one of lengths and offsets"):
            tt.JaggedFeatures(["a"], torch.tensor([1]))
        with self.assertRaisesRegex(ValueError, "offsets run from 0 to 2"):
            tt.JaggedFeatures(["a"], torch.tensor([1]), offsets=[0, 2])
        with self.assertRaisesRegex(ValueError, "pooling 'max'"):
            tt.EmbeddingBagCollection(self.client, [sgd_table(name, ["a"])],
                                      pooling="max")
        with self.assertRaisesRegex(ValueError, "has 2 bags, the others 1"):
            tt.EmbeddingBagCollection(
                self.client, [sgd_table(name, ["a", "b"])])(
                    {"a": torch.tensor([1]), "b": torch.tensor([1, 2])})
        ebc.close()

    def test_a_table_codec_encodes_the_pushed_rows(self):
        name = fresh("codec")
        ebc = tt.EmbeddingBagCollection(self.client, [sgd_table(
            name, ["a"], compression=taups.compression("fp16"))])
        keys = feature_keys(0, [1, 2])
        before = np.empty((2, DIM), np.float32)
        self.client.pull_sparse(name, keys, before)
        out = ebc({"a": torch.tensor([1, 2, 2])})["a"]  # bags of one id
        weights = torch.randn(3, DIM)
        (out * weights).sum().backward()
        ebc.step()
        # Row 2's gradient is the sum of its two lookups'; each row travels
        # as IEEE half floats, and SGD at rate 1 subtracts what arrived.
        grad = np.stack([weights[0].numpy(),
                         (weights[1] + weights[2]).numpy()])
        after = np.empty((2, DIM), np.float32)
        self.client.pull_sparse(name, keys, after)
        np.testing.assert_array_equal(
            after, before - grad.astype(np.float16).astype(np.float32))
        sent = self.client.transfers(name)
        self.assertEqual(sent.pushes_sent, 1)
        # 2 rows: 4 bytes a value raw; one 32-byte block header and 2 bytes
        # a value on the wire.
        self.assertEqual(sent.push_raw_bytes, 4 * 2 * DIM)
        self.assertEqual(sent.push_wire_bytes, 32 + 2 * 2 * DIM)
        ebc.close()

    def test_staleness_is_reported_per_step_and_per_row(self):
        name = fresh("tau")
        ebc = tt.EmbeddingBagCollection(
            self.client, [sgd_table(name, ["a"], row_versions=True)])
        other = taups.Client(SERVERS, worker_id=1, call_timeout_s=20)
        out = ebc({"a": torch.tensor([1, 2])})
        # Another worker updates row 1 twice between our pull and push.
        key = feature_keys(0, [1])
        for _ in range(2):
            other.push_sparse(name, key, np.ones((1, DIM), np.float32))
        out["a"].sum().backward()
        stats = ebc.step().tables[name]
        self.assertEqual(stats.pushes, 1)
        self.assertEqual(stats.tau_max, 2)   # the table moved 2 versions
        self.assertEqual(stats.row_tau_max, 2)  # row 1: 2 updates; row 2: 0
        self.assertAlmostEqual(stats.row_tau_mean, 1.0)
        self.assertGreaterEqual(stats.wait_s, 0.0)
        other.close()
        ebc.close()


class DenseParametersTest(unittest.TestCase):

    def test_pull_push_is_sgd_on_the_torch_gradient(self):
        with taups.Client(SERVERS, worker_id=0) as client:
            torch.manual_seed(1)
            model = torch.nn.Linear(3, 2)
            dense = tt.DenseParameters(client, fresh("dense"),
                                       model.parameters(), optimizer="sgd",
                                       learning_rate=0.5, init_scale=0.3)
            x = torch.randn(5, 3)
            with tt.training_step(dense) as step:
                w0 = model.weight.detach().clone()
                b0 = model.bias.detach().clone()
                model(x).square().sum().backward()
            # The same gradient, computed by torch on a copy.
            ref = torch.nn.Linear(3, 2)
            ref.weight.data.copy_(w0)
            ref.bias.data.copy_(b0)
            ref(x).square().sum().backward()
            self.assertEqual(step.stats.tables[dense.table].pushes, 1)
            dense.pull()
            torch.testing.assert_close(model.weight.detach(),
                                       w0 - 0.5 * ref.weight.grad)
            torch.testing.assert_close(model.bias.detach(),
                                       b0 - 0.5 * ref.bias.grad)
            self.assertTrue(bool((w0.abs() <= 0.3).all()))

    def test_cpu_parameters_keep_the_host_codec_path(self):
        with taups.Client(SERVERS, worker_id=0) as client:
            p = torch.nn.Parameter(torch.zeros(300))
            int8 = taups.compression("int8", bucket_size=100)
            dense = tt.DenseParameters(client, fresh("dense_int8"), [p],
                                       optimizer="sgd", learning_rate=1.0,
                                       initializer="zeros", compression=int8)
            self.assertEqual(dense.gradient_path, "host")
            dense.pull()
            p.grad = torch.linspace(-1.0, 1.0, 300)
            self.assertTrue(dense.push().all_accepted)
            # The host path: the CPU codec's block, decoded and applied.
            block = taups.encode_block(p.grad.numpy(), int8.push)
            got = np.empty(300, np.float32)
            client.pull_dense(dense.table, got)
            scales = np.frombuffer(block[32:32 + 12], np.float32)
            codes = np.frombuffer(block[44:], np.int8).astype(np.float32)
            np.testing.assert_array_equal(
                got, -(codes * np.repeat(scales, 100)))
            with self.assertRaisesRegex(ValueError,
                                        "not on a CUDA device"):
                tt.DenseParameters(client, fresh("dense_dev"), [p],
                                   compression=int8, device_codec=True)
            dense.close()


class WorkerFromEnvTest(unittest.TestCase):

    def test_rank_and_world_size_or_the_arguments(self):
        saved = {k: os.environ.pop(k, None) for k in ("RANK", "WORLD_SIZE")}
        try:
            self.assertEqual(tt.worker_from_env(), (0, 1))
            os.environ.update(RANK="3", WORLD_SIZE="4")
            self.assertEqual(tt.worker_from_env(), (3, 4))
            self.assertEqual(tt.worker_from_env(1, 2), (1, 2))
            os.environ["RANK"] = "4"
            with self.assertRaisesRegex(ValueError, r"4 is not in \[0, 4\)"):
                tt.worker_from_env()
            os.environ["RANK"] = "x"
            with self.assertRaisesRegex(ValueError, r"\$RANK='x'"):
                tt.worker_from_env()
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main()

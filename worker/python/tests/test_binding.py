"""Tests of the taups Python binding against a real ps_server.

Run by CTest (python_binding_test) through with_ps_server.sh, which starts
the server and sets TAUPS_SERVERS; PYTHONPATH must hold <build>/python.
numpy only; the torch side is in test_torch_tensors.py.
"""

import os
import threading
import time
import unittest

import numpy as np

import taups

SERVERS = os.environ["TAUPS_SERVERS"].split(",")


def connect(**kwargs):
    return taups.Client(SERVERS, call_timeout_s=10, connect_timeout_s=10,
                        **kwargs)


class BindingTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = connect(worker_id=0)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_dense_round_trip_under_sgd(self):
        c = self.client
        c.create_table(taups.dense_table("dense_sgd", 10, optimizer="sgd",
                                         learning_rate=0.5))
        w = np.full(10, 7.0, np.float32)
        info = c.pull_dense("dense_sgd", w)
        np.testing.assert_array_equal(w, np.zeros(10, np.float32))
        self.assertEqual(info.shard_versions, [0])

        grad = np.arange(10, dtype=np.float32) * np.float32(0.25)
        result = c.push_dense("dense_sgd", grad)
        self.assertTrue(result.all_accepted)
        self.assertEqual(result.taus, [0])
        self.assertEqual(result.shards[0].new_version, 1)
        c.pull_dense("dense_sgd", w)
        np.testing.assert_array_equal(w, -np.float32(0.5) * grad)

        # A second push on the same pull is one version stale.
        grad2 = np.ones(10, np.float32)
        c.push_dense("dense_sgd", grad)
        result = c.push_dense("dense_sgd", grad2)
        self.assertEqual(result.taus, [1])
        self.assertEqual(result.max_tau, 1)
        expected = -np.float32(0.5) * grad
        expected = expected - np.float32(0.5) * grad
        expected = expected - np.float32(0.5) * grad2
        c.pull_dense("dense_sgd", w)
        np.testing.assert_array_equal(w, expected)

        stats = c.stats("dense_sgd")
        self.assertEqual(len(stats), c.num_shards)
        self.assertEqual(stats[0].version, 3)
        self.assertEqual(stats[0].pushes, 3)

    def test_dense_initializer_and_any_shape(self):
        c = self.client
        c.create_table(taups.dense_table("dense_init", 12, learning_rate=0.25,
                                         initializer="uniform",
                                         init_scale=0.1, init_seed=3))
        first = np.zeros((3, 4), np.float32)
        c.pull_dense("dense_init", first)
        self.assertTrue(np.all(np.abs(first) <= 0.1))
        self.assertGreater(np.count_nonzero(first), 0)
        grad = np.full((3, 4), 2.0, np.float32)
        c.push_dense("dense_init", grad)
        after = np.zeros(12, np.float32)
        c.pull_dense("dense_init", after)
        np.testing.assert_array_equal(
            after, first.reshape(-1) - np.float32(0.25) * np.float32(2.0))

    def test_pull_fills_the_callers_memory(self):
        c = self.client
        c.create_table(taups.dense_table("dense_view", 8, learning_rate=1.0))
        c.push_dense("dense_view", np.full(8, -3.0, np.float32))
        buffer = np.zeros(20, np.float32)
        view = buffer[5:13]  # a view into the middle of a bigger buffer
        c.pull_dense("dense_view", view)
        np.testing.assert_array_equal(buffer[5:13], np.full(8, 3.0))
        np.testing.assert_array_equal(buffer[:5], np.zeros(5))
        np.testing.assert_array_equal(buffer[13:], np.zeros(7))

        c.create_table(taups.sparse_table("sparse_view", 2, learning_rate=1.0))
        c.push_sparse("sparse_view", np.array([4], np.uint64),
                      np.array([[1.0, 2.0]], np.float32))
        rows = np.zeros((3, 2), np.float32)
        inner = rows[1:2]
        c.pull_sparse("sparse_view", np.array([4], np.uint64), inner)
        np.testing.assert_array_equal(rows, [[0, 0], [-1, -2], [0, 0]])

    def test_sparse_round_trip_under_sgd(self):
        c = self.client
        c.create_table(taups.sparse_table("sparse_sgd", 4, learning_rate=0.25))
        keys = np.array([5, 7, 5], np.uint64)  # 5 twice: summed
        grads = np.array([[1, 2, 3, 4], [8, 8, 8, 8], [4, 0, -4, 1]],
                         np.float32)
        result = c.push_sparse("sparse_sgd", keys, grads)
        self.assertTrue(result.all_accepted)
        out = np.full((3, 4), 9.0, np.float32)
        c.pull_sparse("sparse_sgd", np.array([5, 7, 9], np.uint64), out)
        lr = np.float32(0.25)
        np.testing.assert_array_equal(out[0], -lr * (grads[0] + grads[2]))
        np.testing.assert_array_equal(out[1], -lr * grads[1])
        np.testing.assert_array_equal(out[2], np.zeros(4))  # born by zeros
        stats = self.client.stats("sparse_sgd")[0]
        self.assertEqual(stats.pushes, 1)
        self.assertGreaterEqual(stats.sparse_rows, 2)  # 5 and 7 at least
        self.assertEqual(stats.push_raw_bytes, 2 * 4 * 4)  # 2 rows after merge

        # Keys of any shape; int64 keys name the same rows as uint64 ones.
        grid = np.array([[7, 5], [9, 7]], np.int64)
        rows = np.zeros((2, 2, 4), np.float32)
        c.pull_sparse("sparse_sgd", grid, rows)
        np.testing.assert_array_equal(rows[0, 0], out[1])
        np.testing.assert_array_equal(rows[0, 1], out[0])
        np.testing.assert_array_equal(rows[1, 0], out[2])
        np.testing.assert_array_equal(rows[1, 1], out[1])

    def test_sparse_initializer_is_deterministic(self):
        c = self.client
        c.create_table(taups.sparse_table("sparse_init", 3,
                                          initializer="normal",
                                          init_scale=0.5, init_seed=11))
        keys = np.array([1, 2, 3, 1], np.uint64)
        a = np.zeros((4, 3), np.float32)
        b = np.zeros((4, 3), np.float32)
        c.pull_sparse("sparse_init", keys, a)
        c.pull_sparse("sparse_init", keys, b)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a[0], a[3])
        self.assertFalse(np.array_equal(a[0], a[1]))

    def test_wrong_arrays_raise_before_sending(self):
        c = self.client
        c.create_table(taups.dense_table("dense_check", 6))
        c.create_table(taups.sparse_table("sparse_check", 4))
        keys = np.array([1, 2, 3], np.uint64)
        with self.assertRaisesRegex(TypeError, "float64, expected float32"):
            c.pull_dense("dense_check", np.zeros(6))
        with self.assertRaisesRegex(TypeError, "numpy array"):
            c.push_dense("dense_check", [0.0] * 6)
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            c.pull_dense("dense_check", np.zeros(12, np.float32)[::2])
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            c.pull_dense("dense_check", np.zeros((3, 2), np.float32).T)
        read_only = np.zeros(6, np.float32)
        read_only.setflags(write=False)
        with self.assertRaisesRegex(ValueError, "read-only"):
            c.pull_dense("dense_check", read_only)
        # Wrong size for the table: the client's INVALID_ARGUMENT.
        with self.assertRaises(taups.InvalidArgumentError) as caught:
            c.pull_dense("dense_check", np.zeros(5, np.float32))
        self.assertIsInstance(caught.exception, ValueError)
        self.assertEqual(caught.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("holds 6 floats", caught.exception.message)

        with self.assertRaisesRegex(TypeError, "int32, expected uint64"):
            c.pull_sparse("sparse_check", keys.astype(np.int32),
                          np.zeros((3, 4), np.float32))
        with self.assertRaisesRegex(TypeError, "keys: dtype float64"):
            c.pull_sparse("sparse_check", keys.astype(np.float64),
                          np.zeros((3, 4), np.float32))
        with self.assertRaisesRegex(ValueError, r"shape \(2, 4\) does not fit"):
            c.pull_sparse("sparse_check", keys, np.zeros((2, 4), np.float32))
        with self.assertRaisesRegex(ValueError, r"shape \(3, 4\) does not fit"):
            c.push_sparse("sparse_check", keys[:2],
                          np.zeros((3, 4), np.float32))
        with self.assertRaises(taups.InvalidArgumentError):  # dim is 4, not 5
            c.pull_sparse("sparse_check", keys, np.zeros((3, 5), np.float32))
        with self.assertRaises(taups.InvalidArgumentError):
            c.pull_sparse("dense_check", keys, np.zeros((3, 4), np.float32))

    def test_missing_table_raises_not_found(self):
        with self.assertRaises(taups.NotFoundError) as caught:
            self.client.pull_dense("no_such_table", np.zeros(4, np.float32))
        error = caught.exception
        self.assertEqual(error.code_name, "NOT_FOUND")
        self.assertEqual(error.code, 5)  # gRPC/absl NOT_FOUND
        self.assertIn("no_such_table", error.message)
        self.assertIsInstance(error, taups.StatusError)
        self.assertIsInstance(error, LookupError)
        with self.assertRaises(taups.NotFoundError):
            self.client.open_table("no_such_table")
        with self.assertRaises(taups.NotFoundError):
            self.client.stats("no_such_table")

    def test_drop_table_gives_the_memory_and_the_name_back(self):
        c = self.client
        n = 1000
        freed = {}
        for optimizer in ("sgd", "adam"):
            name = f"drop_{optimizer}"
            c.create_table(taups.dense_table(name, n, optimizer=optimizer))
            c.push_dense(name, np.ones(n, np.float32))
            freed[optimizer] = c.drop_table(name)
            with self.assertRaises(taups.NotFoundError):
                c.open_table(name)
            with self.assertRaises(taups.NotFoundError):
                c.pull_dense(name, np.zeros(n, np.float32))
            with self.assertRaises(taups.NotFoundError) as caught:
                c.drop_table(name)
            self.assertIn(name, caught.exception.message)
        # n float32 values; Adam adds two moments of n floats each.
        self.assertGreaterEqual(freed["sgd"], 4 * n)
        self.assertGreaterEqual(freed["adam"] - freed["sgd"], 8 * n)
        # The name is free for another configuration (it was not before).
        c.create_table(taups.dense_table("drop_sgd", 3))
        w = np.full(3, 9.0, np.float32)
        c.pull_dense("drop_sgd", w)
        np.testing.assert_array_equal(w, np.zeros(3, np.float32))
        with self.assertRaises(taups.AlreadyExistsError):
            c.create_table(taups.dense_table("drop_sgd", 4))

    def test_tables_and_configs(self):
        c = self.client
        config = taups.sparse_table("sparse_cfg", 8, optimizer="adagrad",
                                    learning_rate=0.05, max_rows=1000,
                                    eviction="lfu")
        c.create_table(config)
        c.create_table(config)  # identical: fine
        self.assertEqual(c.open_table("sparse_cfg"), config)
        opened = c.open_table("sparse_cfg")
        self.assertEqual(opened.kind, taups.TableKind.SPARSE)
        self.assertEqual(opened.dim, 8)
        self.assertEqual(opened.optimizer.kind, taups.Optimizer.ADAGRAD)
        self.assertEqual(opened.sparse_max_rows, 1000)
        self.assertEqual(opened.sparse_eviction, taups.SparseEviction.LFU)
        other = taups.sparse_table("sparse_cfg", 16)
        with self.assertRaises(taups.AlreadyExistsError) as caught:
            c.create_table(other)
        self.assertEqual(caught.exception.code_name, "ALREADY_EXISTS")
        with self.assertRaisesRegex(ValueError, "optimizer: 'rmsprop'"):
            taups.dense_table("x", 4, optimizer="rmsprop")
        with self.assertRaises(taups.InvalidArgumentError):
            taups.TableConfig.dense("x", 0).validate()
        manual = taups.TableConfig.dense("dense_manual", 4)
        manual.optimizer.kind = taups.Optimizer.MOMENTUM
        manual.optimizer.momentum = 0.5
        c.create_table(manual)
        self.assertEqual(c.open_table("dense_manual").optimizer.momentum, 0.5)

    def test_compressed_push_and_pull(self):
        c = self.client
        n = 4096
        c.create_table(taups.dense_table("dense_int8", n, optimizer="sgd",
                                         learning_rate=1.0))
        with connect(worker_id=5) as worker:
            worker.set_compression(
                "dense_int8",
                taups.compression("int8", bucket_size=256,
                                  error_feedback=True, pull="bf16"))
            rng = np.random.default_rng(3)
            grad = rng.normal(0.0, 1e-2, n).astype(np.float32)
            result = worker.push_dense("dense_int8", grad)
            self.assertTrue(result.all_accepted)
            w = np.empty(n, np.float32)
            worker.pull_dense("dense_int8", w)
            # SGD at rate 1 applies -decoded; int8 (nearest) errs by at most
            # half a step per value (step = bucket max / 127), bf16 pulls by
            # 2^-8 relative.
            step = np.abs(grad).reshape(-1, 256).max(axis=1) / 127
            bound = np.repeat(step, 256) / 2 + np.abs(grad) / 128 + 1e-12
            self.assertTrue(np.all(np.abs(w + grad) <= bound))
            self.assertGreater(np.abs(w + grad).max(), 0.0)
            t = worker.transfers("dense_int8")
            self.assertEqual(t.pushes_sent, 1)
            self.assertEqual(t.push_raw_bytes, 4 * n)
            # 1 byte per value, 4 per bucket, 32 per block header.
            self.assertEqual(t.push_wire_bytes, n + 4 * (n // 256) + 32)
            self.assertEqual(t.pulls, 1)
            self.assertLess(t.pull_wire_bytes, 0.51 * t.pull_raw_bytes)
        with self.assertRaises(taups.InvalidArgumentError):
            taups.compression("int8", bucket_size=(1 << 20) + 1)
        with self.assertRaisesRegex(ValueError, "codec: 'int3'"):
            taups.compression("int3")
        with self.assertRaises(taups.InvalidArgumentError):
            taups.compression("none", pull="int4")
        with self.assertRaises(taups.NotFoundError):
            c.set_compression("no_such_table", taups.compression("fp16"))

    def test_encode_block_is_the_cpu_codec(self):
        values = np.array([0.5, -1.25, 3.0, 65504.0, -2.0 ** -14],
                          np.float32)
        block = taups.encode_block(values, taups.compression("fp16").push)
        # A 32-byte header, then the values as IEEE half floats.
        self.assertEqual(len(block), 32 + 2 * values.size)
        np.testing.assert_array_equal(
            np.frombuffer(block[32:], np.float16), values.astype(np.float16))
        # int8: 1 byte per value and a 4-byte scale per bucket.
        grad = np.linspace(-1, 1, 1000, dtype=np.float32)
        int8 = taups.compression("int8", bucket_size=256).push
        self.assertEqual(len(taups.encode_block(grad, int8)),
                         32 + 1000 + 4 * 4)
        with self.assertRaises(taups.InvalidArgumentError):  # NaN, scaled
            taups.encode_block(np.array([np.nan], np.float32), int8)
        with self.assertRaisesRegex(TypeError, "float32"):
            taups.encode_block(np.zeros(3), int8)

    def test_push_dense_with_needs_an_encoder(self):
        self.assertIsInstance(taups.cuda_built, bool)
        self.assertEqual(hasattr(taups._taups, "DeviceGradient"),
                         taups.cuda_built)
        self.assertGreaterEqual(taups.cuda_device_count(), 0)
        if not taups.cuda_built:
            self.assertEqual(taups.cuda_device_count(), 0)
        with self.assertRaises(TypeError):
            self.client.push_dense_with("dense_sgd",
                                        np.zeros(10, np.float32))

    def test_clock_counts_steps(self):
        with connect(worker_id=3) as c:
            self.assertEqual(c.worker_id, 3)
            self.assertEqual(c.worker_clock, 0)
            self.assertEqual(c.clock(), 1)
            self.assertEqual(c.clock(), 2)
            self.assertEqual(c.worker_clock, 2)
        self.assertTrue(c.closed)
        with self.assertRaisesRegex(ValueError, "closed"):
            c.clock()

    def test_blocking_call_releases_the_gil(self):
        # A sync table waiting for a second worker that never comes: the
        # pull of step 1 blocks until its deadline. Meanwhile this thread
        # must keep running Python.
        c = taups.Client(SERVERS, worker_id=9, call_timeout_s=2.0)
        try:
            consistency = taups.ConsistencyConfig()
            consistency.kind = taups.Consistency.SYNC
            consistency.num_workers = 2
            c.create_table(taups.dense_table("dense_sync", 4,
                                             consistency=consistency))
            w = np.zeros(4, np.float32)
            c.pull_dense("dense_sync", w)
            c.push_dense("dense_sync", np.ones(4, np.float32))
            c.clock()
            outcome = {}

            def blocked_pull():
                try:
                    c.pull_dense("dense_sync", w)
                    outcome["error"] = None
                except taups.StatusError as error:
                    outcome["error"] = error
                outcome["ended"] = time.monotonic()

            thread = threading.Thread(target=blocked_pull)
            started = time.monotonic()
            thread.start()
            time.sleep(0.3)
            spins = 0
            while time.monotonic() - started < 0.8:
                spins += 1
            self.assertTrue(thread.is_alive(),
                            "the pull returned early or held the GIL")
            self.assertGreater(spins, 1000)
            thread.join(timeout=30)
            self.assertIsInstance(outcome["error"],
                                  taups.DeadlineExceededError)
            self.assertIsInstance(outcome["error"], TimeoutError)
            # It gave up at its deadline (call_timeout_s; measured 2.00 s),
            # not long after (up to 1 s for scheduling).
            waited = outcome["ended"] - started
            self.assertGreaterEqual(waited, 2.0)
            self.assertLess(waited, 2.0 + 1.0)
        finally:
            c.close()

    def test_unreachable_server_raises_unavailable(self):
        with self.assertRaises(taups.UnavailableError) as caught:
            taups.Client(["127.0.0.1:1"], connect_timeout_s=0.5)
        self.assertIsInstance(caught.exception, ConnectionError)


if __name__ == "__main__":
    unittest.main(verbosity=2)

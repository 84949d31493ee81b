"""CUDA gradients compressed on the GPU (taups.torch.device_push) against
the CPU codec, on a real ps_server.

The expected values come from the CPU: taups.encode_block (the CPU codec)
on the same gradient copied to the host, and a second dense table fed the
same gradients through the host path (gradient to host memory, CPU codec,
CPU error feedback). The project's promise for the CUDA codecs is the same
bytes, so blocks and the shards' parameters must be equal bit for bit.

Exits 77, reported skipped by CTest (python_torch_device_codec_test), when
this torch sees no CUDA device or taups was built without the CUDA codecs.
"""

import os
import sys
import unittest

import numpy as np
import torch

import taups

if not torch.cuda.is_available():
    print("SKIPPED: torch.cuda.is_available() is False (no CUDA device, or "
          "a torch built without CUDA)")
    sys.exit(77)
if not taups.cuda_built or taups.cuda_device_count() == 0:
    print(f"SKIPPED: taups.cuda_built is {taups.cuda_built}, "
          f"taups.cuda_device_count() is {taups.cuda_device_count()}")
    sys.exit(77)

import taups.torch as tt  # noqa: E402

SERVERS = os.environ["TAUPS_SERVERS"].split(",")


def codec_cases():
    """(name, CodecOptions) of every push codec, both roundings."""
    cases = []
    for name, settings in [
            ("int8", {}), ("int8 stochastic", {"rounding": "stochastic",
                                               "seed": 7}),
            ("int4", {"bucket_size": 64}), ("int2", {}),
            ("fp16", {}), ("bf16", {}), ("sign", {"bucket_size": 128}),
            ("topk", {"topk_ratio": 0.05}),
            ("topk", {"topk_count": 100, "topk_values": "int8"})]:
        codec = name.split()[0]
        cases.append((f"{name} {settings}",
                      taups.compression(codec, **settings).push))
    return cases


def gradient(n, seed):
    """A gradient with a spread of magnitudes and exact zeros."""
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(n, generator=g) * torch.rand(n, generator=g) ** 3
    values[::97] = 0.0
    return values.to(torch.float32)


class DeviceBlocksTest(unittest.TestCase):

    def test_device_blocks_equal_the_cpu_codec(self):
        host = gradient(10_000, 1)
        device = host.cuda()
        encoder = taups._taups.DeviceGradient(device.data_ptr(), host.numel(),
                                              device.device.index)
        self.assertEqual(encoder.size, host.numel())
        for name, options in codec_cases():
            for offset, count in [(0, 10_000), (1_000, 3_333), (9_999, 1)]:
                with self.subTest(codec=name, offset=offset, count=count):
                    expected = taups.encode_block(
                        host[offset:offset + count].numpy(), options, offset)
                    got = encoder.encode_slice(offset, count, options)
                    self.assertEqual(got, expected)
                    # A zero residual adds nothing, and a test encode leaves
                    # the committed residual as it was.
                    fed = encoder.encode_slice(offset, count, options, True)
                    self.assertEqual(fed, expected)
        residual = np.ones(host.numel(), np.float32)
        encoder.copy_residual(residual)
        np.testing.assert_array_equal(residual, np.zeros_like(residual))

    def test_a_bad_slice_is_refused(self):
        device = torch.zeros(16, device="cuda")
        encoder = taups._taups.DeviceGradient(device.data_ptr(), 16,
                                              device.device.index)
        with self.assertRaises(taups.InvalidArgumentError):
            encoder.encode_slice(8, 9, taups.compression("int8").push)


class DevicePushTest(unittest.TestCase):

    def run_pair(self, compression, steps=4, side_stream_step=2):
        """Two tables, the same gradients: the host path (CPU parameters)
        and the device codec (CUDA parameters). Returns both modules' table
        values after each step, and the two DenseParameters."""
        suffix = f"{os.getpid()}_{id(compression)}"
        # Small slices: the gradient travels in several blocks, so the
        # elements' numbering (stochastic rounding) crosses slice bounds.
        with taups.Client(SERVERS, worker_id=0, slice_bytes=4096) as client:
            shapes = [(40, 30), (30,), (7, 40)]
            cpu = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
            gpu = [torch.nn.Parameter(torch.zeros(s, device="cuda"))
                   for s in shapes]
            settings = dict(optimizer="sgd", learning_rate=0.5,
                            initializer="zeros", compression=compression)
            host = tt.DenseParameters(client, f"host_{suffix}", cpu,
                                      device_codec=False, **settings)
            dev = tt.DenseParameters(client, f"dev_{suffix}", gpu,
                                     device_codec=True, **settings)
            self.assertEqual(host.gradient_path, "host")
            self.assertEqual(dev.gradient_path, "device codec")
            seen = []
            for step in range(steps):
                host.pull()
                dev.pull()
                # One step runs on a side stream (non-blocking, unlike the
                # codec's): the push must wait for the gather made there.
                stream = (torch.cuda.Stream() if step == side_stream_step
                          else torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    for i, (a, b) in enumerate(zip(cpu, gpu)):
                        g = gradient(a.numel(), 100 * step + i).view_as(a)
                        a.grad = g.clone()
                        b.grad = g.cuda() * 1.0
                    r_host = host.push()
                    r_dev = dev.push()
                torch.cuda.synchronize()
                self.assertTrue(r_host.all_accepted)
                self.assertTrue(r_dev.all_accepted)
                client.clock()
                values = []
                for name, size in ((host.table, host.size),
                                   (dev.table, dev.size)):
                    out = np.empty(size, np.float32)
                    client.pull_dense(name, out)
                    values.append(out)
                seen.append(values)
            counters = (client.transfers(host.table),
                        client.transfers(dev.table))
            host.close()
            dev.close()
        return seen, counters

    def check_pair(self, compression):
        seen, (c_host, c_dev) = self.run_pair(compression)
        for step, (on_host, on_device) in enumerate(seen):
            with self.subTest(step=step):
                np.testing.assert_array_equal(on_device, on_host)
                self.assertTrue(np.any(on_host != 0))
        self.assertEqual(c_dev.pushes_sent, c_host.pushes_sent)
        self.assertEqual(c_dev.push_wire_bytes, c_host.push_wire_bytes)
        self.assertLess(c_dev.push_wire_bytes, c_dev.push_raw_bytes)

    def test_int8_with_error_feedback(self):
        self.check_pair(taups.compression("int8", error_feedback=True))

    def test_stochastic_int4_with_error_feedback(self):
        self.check_pair(taups.compression("int4", rounding="stochastic",
                                          seed=3, bucket_size=64,
                                          error_feedback=True))

    def test_topk_with_error_feedback(self):
        self.check_pair(taups.compression("topk", topk_ratio=0.1,
                                          error_feedback=True))

    def test_sign_without_feedback(self):
        self.check_pair(taups.compression("sign", bucket_size=128))

    def test_device_residual_after_an_int8_push(self):
        """The device residual is what the CPU codec lost: g - decode."""
        with taups.Client(SERVERS, worker_id=0) as client:
            g = gradient(500, 9)
            p = torch.nn.Parameter(torch.zeros(500, device="cuda"))
            dense = tt.DenseParameters(
                client, f"residual_{os.getpid()}", [p], optimizer="sgd",
                learning_rate=1.0, initializer="zeros",
                compression=taups.compression("int8", error_feedback=True))
            dense.pull()
            p.grad = g.cuda()
            self.assertTrue(dense.push().all_accepted)
            applied = np.empty(500, np.float32)
            client.pull_dense(dense.table, applied)
            # SGD with rate 1 from zeros: the table holds -decode(block).
            np.testing.assert_array_equal(
                dense._device_push.residual().numpy(),
                g.numpy() + applied)
            dense.close()


if __name__ == "__main__":
    unittest.main()

"""DenseParameters: chosen nn.Parameters kept in one dense tauPS table.

    dense = taups.torch.DenseParameters(client, "mlp", model.parameters(),
                                        learning_rate=0.1)
    with taups.torch.training_step(ebc, dense):   # pulls into the params
        loss = model(batch); loss.backward()      # leaves .grad as usual
    # leaving: the .grads pushed (one flat vector), then the clock

The parameters are laid out one after another in a flat float32 table;
their values come from the table (its initializer: uniform(-init_scale,
init_scale) by default), never from torch's initialisation, so every worker
starts from the same values. The table's server-side optimizer applies the
pushed gradients under its consistency policy (sync, semi_sync, ssp or
async), which replaces a torch optimizer for these parameters. A parameter
without a gradient pushes zeros.

prefetch=True pulls the next step's values on a background thread while
the current step computes, as far as the table's policy allows: async
tables start that pull as soon as a step has its values (it then misses
this worker's own update of the step: one more unit of tau); ssp(s) tables
too when every live worker's clock already allows the next step (see
taups.torch.ssp_gate), else after the clock; sync and semi_sync tables
start it when the step is clocked (the shard answers once the step closed,
so the values are those a plain pull would read). The next step's pull()
then only waits for what is left of it (StepStats wait_s); the stats'
overlapped_pulls counts the pulls that arrived before the previous step
was clocked.

CUDA parameters with a push codec (or error feedback) have their gradient
encoded on the GPU when taups was built with the CUDA codecs and a device
is usable (taups.torch.device_push): only the encoded blocks leave the
device, byte for byte what the CPU codec would send. device_codec=None
chooses that path whenever it can, True requires it (ValueError saying why
not), False keeps the host path (gradient to pinned memory, CPU codec);
`gradient_path` says which one is used ("device codec" or "host").

Thread-compatible: use from the training thread (the prefetch runs on a
thread of this object's own).
"""

import concurrent.futures
import functools
import time

import torch

import taups
from taups.torch.device_push import (DevicePush, device_codec_reason,
                                     flatten_grads)
from taups.torch.ssp_gate import DEFERRED, SspGate, deferred
from taups.torch.staging import staging_for
from taups.torch.stats import StatsBook
from taups.torch.table_spec import finish_config


class DenseParameters:
    """See the module docstring. Arguments after `params` are
    taups.dense_table's plus adagrad_initial_accumulator, staleness (a
    StalenessConfig), compression (a CompressionConfig), create_table,
    prefetch (pull the next step's values in the background) and
    device_codec (encode CUDA gradients on the GPU: None = when possible)."""

    def __init__(self, client, table, params, *, optimizer="adagrad",
                 learning_rate=0.01, initializer="uniform", init_scale=0.1,
                 init_seed=0, adagrad_initial_accumulator=None,
                 consistency=None, staleness=None, compression=None,
                 create_table=True, prefetch=False, device_codec=None):
        self.client = client
        self.table = table
        self.params = [p for p in params]
        if not self.params:
            raise ValueError(f"DenseParameters {table!r}: no parameters")
        devices = {p.device for p in self.params}
        if len(devices) != 1:
            raise ValueError(f"DenseParameters {table!r}: parameters on "
                             f"several devices {sorted(map(str, devices))}")
        if any(p.dtype != torch.float32 for p in self.params):
            raise TypeError(f"DenseParameters {table!r}: tauPS tables hold "
                            "float32; every parameter must be float32")
        self.size = sum(p.numel() for p in self.params)
        device = devices.pop()
        pinned = device.type == "cuda"
        self._staging = staging_for(device)
        # Two host buffers: a prefetch fills one while the parameters may
        # still be copied from the other.
        self._buffers = [torch.empty(self.size, dtype=torch.float32,
                                     pin_memory=pinned) for _ in range(2)]
        self._current = 1  # the buffer the parameters were last copied from
        self._copied = [None, None]  # CUDA: event after the copy out of it
        self._grad = torch.empty(self.size, dtype=torch.float32,
                                 pin_memory=pinned)
        self._book = StatsBook([table])
        self._info = None
        config = taups.dense_table(
            table, self.size, optimizer=optimizer,
            learning_rate=learning_rate, initializer=initializer,
            init_scale=init_scale, init_seed=init_seed,
            consistency=consistency)
        self.config = finish_config(config, adagrad_initial_accumulator,
                                    staleness)
        if create_table:
            client.create_table(self.config)
        if compression is not None:
            client.set_compression(table, compression)
        self._device_push = self._choose_gradient_path(device, compression,
                                                       device_codec)
        self.prefetch = bool(prefetch)
        self._future = None  # of the background pull: _pull_into's result
        self._executor = None
        self._gate = None
        if self.prefetch:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="taups-dense")
            if self.config.consistency.kind == taups.Consistency.SSP:
                self._gate = SspGate(
                    client, table, self.config.consistency.staleness_bound)

    def _choose_gradient_path(self, device, compression, device_codec):
        """A DevicePush when the gradient is encoded on the GPU, else None
        (see the module docstring for device_codec)."""
        if device_codec is False:
            return None
        reason = device_codec_reason(device, compression)
        if reason is None:
            return DevicePush(self.client, self.table, self.size, device)
        if device_codec:
            raise ValueError(f"DenseParameters {self.table!r}: cannot encode "
                             f"the gradient on the GPU: {reason}")
        return None

    @property
    def gradient_path(self):
        """"device codec" when gradients are encoded on the GPU and only
        their blocks leave it, "host" when they are copied to host memory
        (and encoded there if the table has a codec)."""
        return "host" if self._device_push is None else "device codec"

    # ---------------------------------------------------------- pulling ---
    def _pull_into(self, index):
        """Pulls the table into buffer `index` (any thread); returns
        (index, PullInfo, worker clock when the values arrived)."""
        copied = self._copied[index]
        if copied is not None:
            copied.synchronize()  # the last copy out of it is done
        info = self.client.pull_dense(self.table, self._buffers[index])
        self._book.add_pull(self.table, info)
        return index, info, self.client.worker_clock

    def _start_prefetch(self, early):
        """Starts the background pull of the next step's values, unless one
        is running. early: the current step is not clocked yet (only async
        tables, and ssp ones the bound allows, pull then)."""
        if not self.prefetch or self._future is not None:
            return
        index = 1 - self._current
        kind = self.config.consistency.kind
        if not early or kind == taups.Consistency.ASYNC:
            self._future = self._executor.submit(self._pull_into, index)
        elif kind == taups.Consistency.SSP:
            clock = self.client.worker_clock
            self._future = self._executor.submit(
                self._gate.pull_if_allowed, clock + 1, clock,
                functools.partial(self._pull_into, index))

    def _take_pulled(self):
        """(buffer index, info, arrival clock) of the prefetch if one was
        started (made now if it was deferred), else of a pull made now."""
        future, self._future = self._future, None
        result = future.result() if future is not None else DEFERRED
        if result is DEFERRED:
            result = self._pull_into(1 - self._current)
        return result

    def pull(self):
        """Reads the table into the parameters (and zeroes their .grad);
        returns the PullInfo. Under sync it waits for the previous step.
        With prefetch it takes the values prefetched for this step."""
        started = time.monotonic()
        index, info, arrived_at_clock = self._take_pulled()
        self._current = index
        self._book.add_wait(self.table, time.monotonic() - started)
        if arrived_at_clock < self.client.worker_clock:
            self._book.add_overlapped(self.table)
        device_flat = self._staging.rows_to_device(self._buffers[index])
        with torch.no_grad():
            offset = 0
            for p in self.params:
                n = p.numel()
                p.copy_(device_flat[offset:offset + n].view_as(p))
                p.grad = None
                offset += n
        if device_flat.is_cuda:
            self._copied[index] = torch.cuda.Event()
            self._copied[index].record()
        self._info = info
        return info

    def close(self):
        """Waits for a running prefetch and stops its thread."""
        if self._future is not None:
            self._future.result()
            self._future = None
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def push(self):
        """Sends the parameters' .grad (zeros where None) as one gradient;
        returns the PushResult (its tau against the last pull)."""
        if self._device_push is not None:  # encoded on the GPU
            self._device_push.gather(self.params)
            send = functools.partial(self._device_push.push, self._info)
        else:
            flatten_grads(self.params, self._grad)
            send = functools.partial(self.client.push_dense, self.table,
                                     self._grad, basis=self._info)
        started = time.monotonic()
        result = send()
        self._book.add_push(self.table, result, time.monotonic() - started)
        return result

    # The step protocol of taups.torch.step / training_step.
    def _begin_step(self):
        self.pull()
        self._start_prefetch(early=True)

    def _finish_step(self):
        self.push()

    def _after_clock(self):
        if deferred(self._future):
            self._future = None
        self._start_prefetch(early=False)

    def _take_stats(self):
        return self._book.take()

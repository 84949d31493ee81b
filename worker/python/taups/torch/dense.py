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

Thread-compatible: use from the training thread.
"""

import time

import torch

import taups
from taups.torch.staging import staging_for
from taups.torch.stats import StatsBook
from taups.torch.table_spec import finish_config


class DenseParameters:
    """See the module docstring. Arguments after `params` are
    taups.dense_table's plus adagrad_initial_accumulator, staleness (a
    StalenessConfig), compression (a CompressionConfig) and create_table."""

    def __init__(self, client, table, params, *, optimizer="adagrad",
                 learning_rate=0.01, initializer="uniform", init_scale=0.1,
                 init_seed=0, adagrad_initial_accumulator=None,
                 consistency=None, staleness=None, compression=None,
                 create_table=True):
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
        self._flat = torch.empty(self.size, dtype=torch.float32,
                                 pin_memory=pinned)
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

    def pull(self):
        """Reads the table into the parameters (and zeroes their .grad);
        returns the PullInfo. Under sync it waits for the previous step."""
        started = time.monotonic()
        info = self.client.pull_dense(self.table, self._flat)
        self._book.add_pull(self.table, info)
        self._book.add_wait(self.table, time.monotonic() - started)
        device_flat = self._staging.rows_to_device(self._flat)
        with torch.no_grad():
            offset = 0
            for p in self.params:
                n = p.numel()
                p.copy_(device_flat[offset:offset + n].view_as(p))
                p.grad = None
                offset += n
        self._info = info
        return info

    def push(self):
        """Sends the parameters' .grad (zeros where None) as one gradient;
        returns the PushResult (its tau against the last pull)."""
        offset = 0
        with torch.no_grad():
            for p in self.params:
                n = p.numel()
                target = self._grad[offset:offset + n]
                if p.grad is None:
                    target.zero_()
                else:
                    target.copy_(p.grad.reshape(-1))
                offset += n
        started = time.monotonic()
        result = self.client.push_dense(self.table, self._grad,
                                        basis=self._info)
        self._book.add_push(self.table, result, time.monotonic() - started)
        return result

    # The step protocol of taups.torch.step / training_step.
    def _begin_step(self):
        self.pull()

    def _finish_step(self):
        self.push()

    def _after_clock(self):
        pass

    def _take_stats(self):
        return self._book.take()

"""One batch's rows of one table: which keys, their pull, their push.

A TablePlan is made from the batch's ids: every feature's ids get the
feature's key space (slot << 40 | id), the keys are made unique (each row is
pulled once), and every lookup remembers its row's index among the unique
keys. The pull fills a host tensor of unique rows; `attach` gives the
forward pass those rows, on the device, through PushOnBackward, whose
backward sends the rows' gradient (already summed per unique key by the
lookups' backward) to tauPS on a background thread.

A plan is used by one training thread; its pull and push run on the
module's executor threads (the client releases the GIL).
"""

import time

import torch

from taups.torch.jagged import ID_BITS


class TablePlan:
    """Lookups of one table in one batch. Attributes: keys (the lookups'
    keys, on the input device), unique_host (unique keys, host int64),
    inverse (per feature: row index of each lookup), offsets (per feature,
    B + 1 bag starts), count (number of unique rows), future (of the pull,
    once started)."""

    def __init__(self, per_feature, slots, staging):
        values = [v for v, _ in per_feature]
        shifted = [v | (slot << ID_BITS) for v, slot in zip(values, slots)]
        self.keys = torch.cat(shifted) if shifted else torch.empty(
            0, dtype=torch.int64)
        unique, inverse = torch.unique(self.keys, sorted=True,
                                       return_inverse=True)
        self.unique_host = staging.keys_to_host(unique)
        self.count = int(unique.numel())
        sizes = [v.numel() for v in values]
        self.inverse_all = inverse
        self.inverse = list(torch.split(inverse, sizes))
        self.offsets = [o for _, o in per_feature]
        self.future = None

    def all_bags(self):
        """(inverse, offsets) of every feature's bags, feature after
        feature: offsets has len(features) * B + 1 entries, so one
        embedding_bag call pools the whole table."""
        shifted, base = [], 0
        for inverse, offsets in zip(self.inverse, self.offsets):
            shifted.append(offsets[:-1] + base)
            base += inverse.numel()
        shifted.append(torch.tensor([base], dtype=torch.int64,
                                    device=self.offsets[0].device))
        return self.inverse_all, torch.cat(shifted)

    def same_keys(self, other):
        return (self.keys.shape == other.keys.shape
                and bool(torch.equal(self.keys, other.keys)))


def pull_rows(client, table, plan, dim, staging, row_versions, book):
    """Pulls the plan's unique rows into a new host tensor; returns (rows,
    PullInfo or None when there is nothing to pull)."""
    rows = staging.host_rows(plan.count, dim)
    if plan.count == 0:
        return rows, None
    info = client.pull_sparse(table, plan.unique_host, rows,
                              row_versions=row_versions)
    book.add_pull(table, info)
    return rows, info


class RowPusher:
    """Sends one plan's row gradients to tauPS; remembers the push's
    future so the step can wait for it."""

    def __init__(self, module, table, plan, info):
        self.module = module
        self.table = table
        self.plan = plan
        self.info = info

    def push(self, grad):
        if self.plan.count == 0:
            return
        host_grad = self.module._staging.grad_to_host(grad)
        client, book, keys, info = (self.module.client, self.module._book,
                                    self.plan.unique_host, self.info)
        table = self.table

        def send():
            started = time.monotonic()
            result = client.push_sparse(table, keys, host_grad, basis=info)
            book.add_push(table, result, time.monotonic() - started)
            return result

        self.module._track_push(self.module._executor.submit(send))


class PushOnBackward(torch.autograd.Function):
    """forward(anchor, rows, pusher) -> rows, differentiable; backward
    hands the rows' gradient to pusher.push. `anchor` is an empty tensor
    that requires grad, so autograd calls backward although the rows
    themselves are not parameters of any torch module."""

    @staticmethod
    def forward(ctx, anchor, rows, pusher):
        ctx.pusher = pusher
        return rows.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.pusher.push(grad)
        return None, None, None

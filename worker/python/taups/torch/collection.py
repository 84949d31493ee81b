"""The machinery shared by EmbeddingBagCollection and EmbeddingCollection:
tables, per-batch plans, pulls (direct or prefetched), pushes, the step."""

import collections
import concurrent.futures
import functools
import time

import torch

import taups
from taups.torch.jagged import as_features
from taups.torch.rows import PushOnBackward, TablePlan, pull_rows, RowPusher
from taups.torch.ssp_gate import DEFERRED, SspGate, deferred
from taups.torch.staging import staging_for
from taups.torch.stats import StatsBook


class _Prefetched:
    """A batch whose pulls were asked for ahead of its forward pass."""

    def __init__(self, features, plans):
        self.features = features
        self.plans = plans  # table name -> TablePlan (future set once started)


class SparseCollection(torch.nn.Module):
    """Base of the embedding modules (see EmbeddingBagCollection).

    Thread-compatible: forward, prefetch and the step belong to one training
    thread; pulls and pushes run on this module's executor threads.
    """

    def __init__(self, client, tables, *, device=None, create_tables=True,
                 max_threads=4):
        super().__init__()
        if not tables:
            raise ValueError("no tables")
        self.client = client
        self.tables = list(tables)
        names = [t.name for t in self.tables]
        if len(set(names)) != len(names):
            raise ValueError(f"table names repeat: {names}")
        self.feature_names = [f for t in self.tables for f in t.features]
        if len(set(self.feature_names)) != len(self.feature_names):
            raise ValueError("a feature is in two tables: "
                             f"{self.feature_names}")
        self._staging = staging_for(device)
        self._book = StatsBook(names)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_threads, thread_name_prefix="taups-rows")
        self._pushes = []
        self._pending = collections.deque()
        self._gates = {t.name: SspGate(client, t.name,
                                       t.config.consistency.staleness_bound)
                       for t in self.tables
                       if t.consistency_kind == taups.Consistency.SSP}
        for table in self.tables:
            if create_tables:
                client.create_table(table.config)
            if table.compression is not None:
                client.set_compression(table.name, table.compression)

    # ------------------------------------------------------------ plans ---
    def _plans(self, features):
        per_feature = dict(zip(self.feature_names,
                               as_features(features, self.feature_names)))
        plans = {}
        for table in self.tables:
            ids = [per_feature[f] for f in table.features]
            plans[table.name] = TablePlan(ids, range(len(ids)), self._staging)
        return plans

    def _pull(self, table, plan):
        """Pulls the plan's rows (on an executor thread); returns (rows,
        info, the worker clock when they arrived), so the forward can tell
        whether the pull overlapped the previous step."""
        rows, info = pull_rows(self.client, table.name, plan, table.dim,
                               self._staging, table.row_versions, self._book)
        return rows, info, self.client.worker_clock

    def _start(self, table, plan):
        if plan.future is None:
            plan.future = self._executor.submit(self._pull, table, plan)

    def _start_early(self, table, plan, step):
        """Starts a prefetch pull of rows for `step` before this worker's
        current step is clocked, where the policy allows it: async tables
        always (their pulls never wait); ssp(s) tables when every live
        worker's clock already allows step `step` (SspGate; the pull is
        deferred to the clock otherwise); sync and semi_sync never (the
        rows of the next step must hold this step's update)."""
        kind = table.consistency_kind
        if kind == taups.Consistency.ASYNC:
            self._start(table, plan)
        elif kind == taups.Consistency.SSP and plan.future is None:
            plan.future = self._executor.submit(
                self._gates[table.name].pull_if_allowed, step,
                self.client.worker_clock,
                functools.partial(self._pull, table, plan))

    def prefetch(self, features):
        """Asks for the rows of a coming batch (the batches are consumed,
        one forward per step, in the order they were prefetched): async
        tables pull at once, on a background thread; ssp tables too when
        the bound already allows the batch's step (see _start_early); the
        others when this step is clocked (a pull for the next step under
        sync waits for this step anyway)."""
        plans = self._plans(features)
        step = self.client.worker_clock + len(self._pending)
        for table in self.tables:
            self._start_early(table, plans[table.name], step)
        self._pending.append(_Prefetched(features, plans))

    def _take_prefetched(self, features):
        """The plans prefetched for `features`, or fresh ones (dropping a
        prefetch queue that does not match)."""
        if self._pending and self._pending[0].features is features:
            return self._pending.popleft().plans
        plans = self._plans(features)
        if self._pending:
            head = self._pending[0].plans
            if all(plans[n].same_keys(head[n]) for n in plans):
                self._pending.popleft()
                for name, plan in plans.items():
                    plan.future = head[name].future
                return plans
            self._drop_prefetched()
        return plans

    def _drop_prefetched(self):
        while self._pending:
            for plan in self._pending.popleft().plans.values():
                if plan.future is not None:
                    plan.future.result()

    def _rows_of(self, table, plan):
        """_pull's result for the plan, the pull made now if it was
        deferred."""
        result = plan.future.result()
        if result is DEFERRED:
            plan.future = None
            self._start(table, plan)
            result = plan.future.result()
        return result

    # ---------------------------------------------------------- forward ---
    def _table_rows(self, features):
        """table name -> (plan, device rows, differentiable when training)."""
        plans = self._take_prefetched(features)
        for table in self.tables:
            self._start(table, plans[table.name])
        learn = self.training and torch.is_grad_enabled()
        out = {}
        for table in self.tables:
            plan = plans[table.name]
            waited = time.monotonic()
            rows, info, arrived_at_clock = self._rows_of(table, plan)
            self._book.add_wait(table.name, time.monotonic() - waited)
            if arrived_at_clock < self.client.worker_clock:
                self._book.add_overlapped(table.name)
            rows = self._staging.rows_to_device(rows)
            if learn:
                anchor = torch.empty(0, requires_grad=True)
                pusher = RowPusher(self, table.name, plan, info)
                rows = PushOnBackward.apply(anchor, rows, pusher)
            out[table.name] = (plan, rows)
        return out

    # ------------------------------------------------------------- step ---
    def _track_push(self, future):
        self._pushes.append(future)

    def _begin_step(self):
        pass

    def _finish_step(self):
        """Waits for this step's pushes (raising the first failure)."""
        pushes, self._pushes = self._pushes, []
        for future in pushes:
            future.result()

    def _after_clock(self):
        for pending in self._pending:
            for table in self.tables:
                plan = pending.plans[table.name]
                if deferred(plan.future):
                    plan.future = None
                self._start(table, plan)

    def _take_stats(self):
        return self._book.take()

    def step(self):
        """Waits for the pushes, clocks the client, starts deferred
        prefetches; returns a taups.torch.StepStats. With other tauPS
        modules on the same client use taups.torch.step(a, b, ...)."""
        from taups.torch.step import step
        return step(self)

    def close(self):
        """Waits for outstanding pulls and pushes and stops the threads
        (the client stays open)."""
        self._drop_prefetched()
        self._finish_step()
        self._executor.shutdown(wait=True)

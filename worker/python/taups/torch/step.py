"""The end of a training step for every tauPS module of a job.

    with taups.torch.training_step(ebc, dense) as s:   # dense pulls here
        loss = model(batch)
        loss.backward()                               # ebc pushes here
    print(s.stats.tau_max)         # dense pushed, every push done, clocked

or, without the context manager, `stats = taups.torch.step(ebc, dense)`
after loss.backward() (then call dense.pull() before the forward).

The modules must share one taups.Client: the worker's clock moves once per
step, after every table's pushes of the step were answered.
"""

import time


class StepStats:
    """One step: clock (the worker clock after it), seconds (since the
    previous step ended, for the first step since the stats object's
    module set was first used), tables (table name -> TableStepStats), and
    totals over the tables."""

    def __init__(self, clock, tables, seconds):
        self.clock = clock
        self.tables = tables
        self.seconds = seconds

    def _values(self, name):
        return [getattr(t, name) for t in self.tables.values()]

    @property
    def tau_max(self):
        return max(self._values("tau_max"), default=0)

    @property
    def row_tau_max(self):
        return max(self._values("row_tau_max"), default=0)

    @property
    def rejected(self):
        return sum(self._values("rejected"))

    @property
    def wait_s(self):
        return sum(self._values("wait_s"))

    @property
    def pull_s(self):
        """Time the step's pulls took, summed over tables (on their own
        threads; with prefetch they overlap the compute)."""
        return sum(self._values("pull_s"))

    @property
    def push_s(self):
        return sum(self._values("push_s"))

    def as_dict(self):
        return {"clock": self.clock, "seconds": self.seconds,
                "tables": {k: v.as_dict() for k, v in self.tables.items()}}

    def __repr__(self):
        return (f"StepStats(clock={self.clock}, tau_max={self.tau_max}, "
                f"rejected={self.rejected}, wait_s={self.wait_s:.4f})")


_last_step_end = {}


def _client_of(modules):
    if not modules:
        raise ValueError("step: no modules")
    client = modules[0].client
    for m in modules[1:]:
        if m.client is not client:
            raise ValueError("step: the modules use different taups.Clients; "
                             "one step clocks one client")
    return client


def step(*modules):
    """Finishes the step of `modules` (tauPS embedding modules and
    DenseParameters): dense gradients pushed, every push answered (the first
    failure raised), then the client clocked once and deferred prefetches
    started. Returns a StepStats. Call from the training thread."""
    client = _client_of(modules)
    for m in modules:
        m._finish_step()
    clock = client.clock()
    for m in modules:
        m._after_clock()
    tables = {}
    for m in modules:
        tables.update(m._take_stats())
    now = time.monotonic()
    key = id(client)
    seconds = now - _last_step_end.get(key, now)
    _last_step_end[key] = now
    return StepStats(clock, tables, seconds)


class training_step:
    """Context manager around one step: entering starts it (DenseParameters
    pull); leaving without an exception ends it with step(*modules) and
    keeps the StepStats in `.stats`. On an exception nothing is pushed for
    dense tables and the clock does not move."""

    def __init__(self, *modules):
        _client_of(modules)
        self.modules = modules
        self.stats = None

    def __enter__(self):
        for m in self.modules:
            m._begin_step()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.stats = step(*self.modules)
        return False

"""When an SSP table lets a prefetch pull before this worker's step ends.

Under ssp(s) a shard serves a pull for step j only when every live worker
on it has pushed step j - s - 1 (its clock there, steps pushed, is at least
j - s). A prefetch of step j's rows runs during step j - 1, while this
worker's own clock is still j - 1, so the shard checks it against the bound
of step j - 1: one step too lenient. SspGate closes that gap: it lets the
pull go early only when the bound of step j itself already holds, i.e. the
smallest live worker clock on every shard (from Client.stats) is at least
j - s; otherwise the pull waits for the step to be clocked, as under sync.

Clocks on a shard never go down (a worker that joins starts at the
slowest live one's clock; one that dies or leaves stops counting), so a
minimum once seen stays a lower bound: stats are asked for only when the
last minimum seen does not already allow the step.

Thread-safe (a lock around the cached minimum); the stats call runs on
the caller's thread.
"""

import threading

# What an early pull returns when the bound did not allow it yet: the
# caller pulls again once the step is clocked.
DEFERRED = object()


def deferred(future):
    """Whether `future` (of an early pull) finished without pulling."""
    return (future is not None and future.done()
            and future.exception() is None and future.result() is DEFERRED)


def min_live_clock(shard_stats):
    """The smallest clock of a live worker over every shard's
    TableShardStats, as the shard's SSP rule counts it: a live worker the
    table has no entry for yet (it has neither pulled nor pushed there) is
    at clock 0. None when no shard has a live worker."""
    clocks = []
    for shard in shard_stats:
        listed = [w.clock for w in shard.workers if w.live]
        if len(listed) < shard.live_workers:
            listed.append(0)
        clocks.extend(listed)
    return min(clocks) if clocks else None


class SspGate:
    """Early-pull decisions for one ssp table (bound s = `bound`)."""

    def __init__(self, client, table, bound):
        self.client = client
        self.table = table
        self.bound = int(bound)
        self._lock = threading.Lock()
        self._known_min = 0  # a lower bound of every live worker's clock
        self.stats_calls = 0

    def _allows(self, step):
        return step <= self._known_min + self.bound

    def allows(self, step, own_clock):
        """Whether rows for `step` may be pulled now, by a worker whose
        clock is `own_clock` (< step: its pushes of steps own_clock..step-1
        may not have landed). Asks the shards' stats at most once."""
        if step - self.bound > own_clock:
            return False  # the worker's own pushes are not there yet
        with self._lock:
            if self._allows(step):
                return True
        seen = min_live_clock(self.client.stats(self.table))
        with self._lock:
            self.stats_calls += 1
            if seen is not None:
                self._known_min = max(self._known_min, seen)
            return self._allows(step)

    def pull_if_allowed(self, step, own_clock, pull):
        """pull() when allows(step, own_clock), else DEFERRED. Meant to run
        on a background thread."""
        return pull() if self.allows(step, own_clock) else DEFERRED

"""Per-step staleness and timing of one table, as seen by this worker.

Every pull and push of a step adds to its table's TableStepStats; the step
(taups.torch.step or a module's step()) hands them out and starts afresh.
Thread-safe: pulls and pushes run on background threads.
"""

import threading


class TableStepStats:
    """What one step did to one table (read after the step).

    pulls, pushes: calls made; rejected: pushes some shard did not accept;
    tau_max, tau_mean: the table-version staleness of the pushes (max over
    the shards, mean of the per-push shard means); row_tau_max,
    row_tau_mean: per-row staleness, when the table pulls row versions;
    pull_s: time the pulls took (policy waits included); wait_s: time the
    forward pass blocked on pulls (less than pull_s when prefetched);
    push_s: time the pushes took; overlapped_pulls: pulls of this step's
    rows that had arrived before the previous step was clocked (prefetches
    that ran during the previous step's compute).
    """

    __slots__ = ("table", "pulls", "pushes", "rejected", "tau_max",
                 "tau_mean", "row_tau_max", "row_tau_mean", "pull_s",
                 "wait_s", "push_s", "overlapped_pulls", "_tau_sum", "_row_tau_sum", "_row_pushes")

    def __init__(self, table):
        self.table = table
        self.pulls = self.pushes = self.rejected = 0
        self.overlapped_pulls = 0
        self.tau_max = self.row_tau_max = 0
        self.tau_mean = self.row_tau_mean = 0.0
        self.pull_s = self.wait_s = self.push_s = 0.0
        self._tau_sum = self._row_tau_sum = 0.0
        self._row_pushes = 0

    def add_pull(self, info):
        self.pulls += 1
        self.pull_s += info.elapsed_s

    def add_push(self, result, seconds):
        self.pushes += 1
        self.push_s += seconds
        if not result.all_accepted:
            self.rejected += 1
        self.tau_max = max(self.tau_max, int(result.max_tau))
        self._tau_sum += result.mean_tau
        self.tau_mean = self._tau_sum / self.pushes
        if result.row_taus:
            self._row_pushes += 1
            self.row_tau_max = max(self.row_tau_max, int(result.max_row_tau))
            self._row_tau_sum += result.mean_row_tau
            self.row_tau_mean = self._row_tau_sum / self._row_pushes

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__
                if not name.startswith("_")}

    def __repr__(self):
        return (f"TableStepStats({self.table!r}, pushes={self.pushes}, "
                f"rejected={self.rejected}, tau_max={self.tau_max}, "
                f"wait_s={self.wait_s:.4f})")


class StatsBook:
    """The current step's TableStepStats of several tables, under a lock."""

    def __init__(self, tables):
        self._lock = threading.Lock()
        self._tables = list(tables)
        self._current = {t: TableStepStats(t) for t in self._tables}

    def add_pull(self, table, info):
        with self._lock:
            self._current[table].add_pull(info)

    def add_wait(self, table, seconds):
        with self._lock:
            self._current[table].wait_s += seconds

    def add_overlapped(self, table):
        with self._lock:
            self._current[table].overlapped_pulls += 1

    def add_push(self, table, result, seconds):
        with self._lock:
            self._current[table].add_push(result, seconds)

    def take(self):
        """This step's stats (dict table -> TableStepStats); starts anew."""
        with self._lock:
            done = self._current
            self._current = {t: TableStepStats(t) for t in self._tables}
        return done

// What a shard measures about one table: staleness, treatment of stale
// pushes, and (sync / semi-sync) how long steps waited and for whom.
// Snapshots are plain values; ConsistencyController keeps the live copy
// under its mutex.
#ifndef TAUPS_SERVER_TABLE_STATS_H_
#define TAUPS_SERVER_TABLE_STATS_H_

#include <cstdint>
#include <map>

#include "common/histogram.h"

namespace taups {

// Largest tau counted in its own bucket; larger ones share the last bucket
// (their max is still exact).
inline constexpr int kTauHistogramMax = 1024;

struct WorkerTableStats {
  WorkerTableStats() : tau(Histogram::IntegerBounds(kTauHistogramMax)) {}
  Histogram tau;
  uint64_t rejected = 0;
  uint64_t downweighted = 0;
  uint64_t late = 0;
  uint64_t closed_steps_as_last = 0;  // steps its arrival closed (straggler)
  uint64_t missed_steps = 0;          // semi-sync steps closed without it
  uint64_t clock = 0;                 // steps completed, as the server saw
};

struct TableStats {
  TableStats()
      : tau(Histogram::IntegerBounds(kTauHistogramMax)),
        step_wait_s(Histogram::ExponentialBounds(1e-4, 2.0, 120.0)),
        row_tau(Histogram::IntegerBounds(kTauHistogramMax)) {}
  Histogram tau;
  uint64_t pushes = 0;
  uint64_t rejected = 0;
  uint64_t downweighted = 0;
  uint64_t late = 0;
  uint64_t nonfinite_refused = 0;  // updates whose result would not be finite
  uint64_t duplicates = 0;         // pushes (or slices) answered again
  uint64_t steps_closed = 0;
  uint64_t quorum_closes = 0;   // closed because enough workers arrived
  uint64_t timeout_closes = 0;  // closed by the semi-sync timeout
  Histogram step_wait_s;        // step opened -> closed
  int64_t last_straggler = -1;  // worker whose arrival closed the last step
  std::map<uint32_t, WorkerTableStats> workers;
  // The table's clock, read under the same lock as the counters above, so
  // that (say) the versions and the steps closed between two reads match.
  uint64_t version = 0;
  uint64_t open_step = 0;
  // Sparse: per-row tau of pushes that carried row versions (one value per
  // row measured; see SparseTable). Filled by ParameterStore::Stats.
  Histogram row_tau;
};

}  // namespace taups

#endif  // TAUPS_SERVER_TABLE_STATS_H_

// Value types describing one push as the server core sees it.
#ifndef TAUPS_SERVER_PUSH_TYPES_H_
#define TAUPS_SERVER_PUSH_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "taups/table_config.h"  // kUnknownRowVersion

namespace taups {

// Who sent a push. `seq` increases per (worker_id, worker_incarnation).
struct PushOrigin {
  uint32_t worker_id = 0;
  uint64_t worker_incarnation = 0;
  uint64_t seq = 0;
};

// Per-row staleness of one sparse push that carried row base versions. A
// row's tau is its version now minus the version its gradient was computed
// on; when the base is above the version now, the row was evicted or
// expired and re-created since (versions restart at 0), so its tau is its
// version now and it counts as reborn. Keys without a row (not admitted, or
// gone when measured) and keys with an unknown base are not counted.
struct RowTauSummary {
  uint64_t rows = 0;    // rows measured
  uint64_t sum = 0;     // of their tau
  uint64_t max = 0;
  uint64_t reborn = 0;  // rows evicted or expired since the pusher's pull
  double mean() const { return rows == 0 ? 0.0 : static_cast<double>(sum) / rows; }
};

// The server's answer to a push (or to one slice of it).
struct PushOutcome {
  bool accepted = true;
  uint64_t tau = 0;          // version_now - base_version when first seen
  float lr_factor = 1.0f;    // learning-rate multiplier applied
  uint64_t new_version = 0;  // table version on this shard afterwards
  std::string reject_reason;
  bool downweighted = false;  // f(tau) < 1
  // This slice of a multi-slice push was kept; the push applies (or not)
  // when its last slice arrives, whose answer is the push's.
  bool staged = false;
  // The push (or slice) was seen before: this is the first answer again,
  // and nothing was applied now.
  bool duplicate = false;
  // Sparse pushes with row base versions only: the summary, and every
  // key's tau in request order (kUnknownRowVersion where its base was;
  // 0 for keys without a row).
  RowTauSummary row_tau;
  std::vector<uint64_t> row_taus;
};

}  // namespace taups

#endif  // TAUPS_SERVER_PUSH_TYPES_H_

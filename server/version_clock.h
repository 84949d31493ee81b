// The version clock of one table on one shard, and the staleness of pushes
// measured against it.
//
// version = number of pushes applied to the table on this shard. A push is
// stamped when it is first seen: tau = version - base_version. A push may
// arrive as several slices (large dense tensors travel in concurrent ~1 MiB
// pieces): all slices share the stamp of the first one to arrive, and the
// version advances once, when the last slice has been applied.
//
// Thread-safe. Internally one small mutex; it guards counters only, never
// the parameter data, so holding it is brief.
#ifndef TAUPS_SERVER_VERSION_CLOCK_H_
#define TAUPS_SERVER_VERSION_CLOCK_H_

#include <cstdint>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/push_types.h"

namespace taups {

// Staleness figures of one table on one shard since start.
struct StalenessStats {
  uint64_t pushes = 0;    // stamped pushes (accepted or not)
  uint64_t rejected = 0;
  uint64_t tau_sum = 0;
  uint64_t tau_max = 0;
};

class VersionClock {
 public:
  VersionClock() = default;
  VersionClock(const VersionClock&) = delete;
  VersionClock& operator=(const VersionClock&) = delete;

  uint64_t version() const ABSL_LOCKS_EXCLUDED(mu_);
  StalenessStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

  // Stamps a slice of a push: returns its outcome (tau, accepted, factor).
  // FAILED_PRECONDITION when base_version is ahead of the clock (the worker
  // read from another incarnation of this shard and must pull again).
  // Every stamped, accepted slice must be followed by FinishSlice() once it
  // has been applied.
  absl::StatusOr<PushOutcome> StampSlice(const PushOrigin& origin,
                                         uint64_t base_version,
                                         uint32_t slices_in_push)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Marks one applied slice; returns the version afterwards (advanced when
  // this was the push's last slice).
  uint64_t FinishSlice(const PushOrigin& origin, uint32_t slices_in_push)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using PushKey = std::tuple<uint32_t, uint64_t, uint64_t>;
  struct PendingPush {
    PushOutcome stamp;
    uint32_t slices_left = 0;
    absl::Time first_seen;
  };
  static PushKey KeyOf(const PushOrigin& o) {
    return {o.worker_id, o.worker_incarnation, o.seq};
  }
  void ForgetAbandonedLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  StalenessStats stats_ ABSL_GUARDED_BY(mu_);
  // Multi-slice pushes that have begun but not finished.
  absl::flat_hash_map<PushKey, PendingPush> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_VERSION_CLOCK_H_

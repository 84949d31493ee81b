// ConsistencyController: the clock and the consistency policy of one table on
// one shard. Every push and every pull of the table passes through it.
//
//   version   number of updates applied here; pulls report it, pushes carry
//             the version they were computed on, tau = version - base.
//   async     a push is stamped (tau, staleness decision) and applied at once.
//   ssp(s)    like async; the worker's clock advances with each push, and a
//             pull at clock c is ready once every live worker reached c - s.
//   sync      pushes for the open step are summed; when every live worker has
//             pushed, the mean is applied once (one version) and the next
//             step opens. A pull at clock c is ready once step c-1 closed.
//   semi_sync like sync, but the step closes at quorum or timeout; missing
//             workers are handled by the late policy.
// Pushes with tau > 0 get the table's staleness treatment (reject above
// tau_max, down-weight f(tau), warm-up, clipping; delay compensation lives in
// DenseTable).
//
// Updates whose result would not be finite are refused (a push:
// INVALID_ARGUMENT; a step's mean: not applied, logged and counted).
//
// Thread-safe, but mutations are meant to come from one thread at a time:
// the owning Partition calls every mutating method from its ordered apply
// path, so pushes, step closes and policy changes happen in one sequence.
// mu_ guards the clock, the step being gathered and the stats (pull waiters
// read them); table applies happen under it. Lock order: the partition's
// locks, then mu_, then table locks.
#ifndef TAUPS_SERVER_CONSISTENCY_CONTROLLER_H_
#define TAUPS_SERVER_CONSISTENCY_CONTROLLER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/push_types.h"
#include "server/table.h"
#include "server/table_stats.h"
#include "taups/table_config.h"

namespace taups {

// One whole push to this table part (all its slices), validated.
struct PushArgs {
  PushOrigin origin;
  uint64_t base_version = 0;
  uint64_t clock = 0;        // the step this gradient belongs to
  double push_norm_sq = 0;   // of the whole push; 0 = unknown
  absl::Span<const GradientPart> parts;
};

// The policy state of a controller, for a partition snapshot: the clock,
// the settings in force, worker clocks and the step being gathered.
struct PolicySnapshot {
  ConsistencyConfig consistency;
  StalenessConfig staleness;
  uint64_t version = 0;
  uint64_t open_step = 0;
  std::map<uint32_t, uint64_t> clocks;
  std::vector<uint32_t> arrivals;  // sorted
  uint64_t contributed = 0;
  BufferSnapshot step_sum;
  std::map<uint32_t, BufferSnapshot> current;  // reuse_last
  std::map<uint32_t, BufferSnapshot> last;
  bool operator==(const PolicySnapshot&) const = default;
};

class ConsistencyController {
 public:
  // `table` and `clock` must outlive the controller.
  ConsistencyController(Table* table, const Clock* clock);
  ConsistencyController(const ConsistencyController&) = delete;
  ConsistencyController& operator=(const ConsistencyController&) = delete;

  uint64_t version() const ABSL_LOCKS_EXCLUDED(mu_);
  // sync / semi_sync: the step being gathered (= steps closed); else 0.
  uint64_t open_step() const ABSL_LOCKS_EXCLUDED(mu_);
  ConsistencyConfig consistency() const ABSL_LOCKS_EXCLUDED(mu_);
  StalenessConfig staleness() const ABSL_LOCKS_EXCLUDED(mu_);

  // Stamps, treats and applies (or gathers) one whole push. Errors:
  // FAILED_PRECONDITION for a base version ahead of the clock, a push for a
  // step not open yet or already pushed, or an unregistered worker on a
  // barrier table; INVALID_ARGUMENT for an update whose result would not be
  // finite. Errors change nothing. A refused stale or late push is OK with
  // accepted=false.
  absl::StatusOr<PushOutcome> Push(const PushArgs& args)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Whether a pull by `worker` at `clock` may read now.
  bool PullReady(uint32_t worker, uint64_t clock) const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until PullReady or `deadline` (DEADLINE_EXCEEDED naming what it
  // waits for).
  absl::Status AwaitPullReady(uint32_t worker, uint64_t clock,
                              absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // Membership changed: the live workers now, and how many ever registered.
  // May close a step that was waiting only for workers now dead.
  void SetLiveWorkers(const std::vector<uint32_t>& live, size_t ever_registered)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The clock a (re)joining worker starts at; records it.
  uint64_t JoinClock(uint32_t worker) ABSL_LOCKS_EXCLUDED(mu_);
  // Closes a semi-sync step whose timeout has passed.
  void Tick() ABSL_LOCKS_EXCLUDED(mu_);

  // Admin: changes the policy. A step being gathered is closed first (its
  // arrivals applied as a mean), so nothing pushed is lost.
  absl::Status SetConfig(const ConsistencyConfig& consistency,
                         const StalenessConfig& staleness)
      ABSL_LOCKS_EXCLUDED(mu_);

  TableStats Stats() const ABSL_LOCKS_EXCLUDED(mu_);

  PolicySnapshot Export() const ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces the policy state (not membership, not stats); INVALID_ARGUMENT
  // and nothing changed if a buffer does not fit the table.
  absl::Status Import(const PolicySnapshot& snapshot) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class CloseReason { kArrivals, kTimeout, kMembership, kPolicyChange };

  bool barrier() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return consistency_.kind == ConsistencyKind::kSync ||
           consistency_.kind == ConsistencyKind::kSemiSync;
  }
  bool PullReadyLocked(uint32_t worker, uint64_t clock) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // tau and the staleness decision for a push (changes nothing).
  absl::StatusOr<PushOutcome> StampLocked(const PushArgs& args) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Counts a stamped push in the stats (and logs a rejection).
  void RecordLocked(const PushArgs& args, const PushOutcome& stamp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether applying `parts` with lr_factor keeps the table finite.
  bool StaysFiniteLocked(absl::Span<const GradientPart> parts, float lr_factor,
                         uint32_t worker) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status NonFiniteError(const PushArgs& args) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void ApplyLocked(absl::Span<const GradientPart> parts, float lr_factor,
                   uint32_t worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<PushOutcome> PushAsyncLocked(const PushArgs& args)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<PushOutcome> PushBarrierLocked(const PushArgs& args)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<PushOutcome> PushLateLocked(const PushArgs& args,
                                             PushOutcome stamp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Closes the open step if its policy says so.
  void MaybeCloseLocked(CloseReason reason, int64_t last_arrival)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseStepLocked(CloseReason reason, int64_t last_arrival)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string WaitingForLocked(uint64_t clock) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  uint64_t MinLiveClockLocked(int64_t excluding) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  StepBuffer& BufferOf(absl::flat_hash_map<uint32_t, std::unique_ptr<StepBuffer>>& map,
                       uint32_t worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Table* const table_;
  const Clock* const clock_;
  mutable absl::Mutex mu_;
  ConsistencyConfig consistency_ ABSL_GUARDED_BY(mu_);
  StalenessConfig staleness_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  TableStats stats_ ABSL_GUARDED_BY(mu_);

  // Membership snapshot.
  absl::flat_hash_set<uint32_t> live_ ABSL_GUARDED_BY(mu_);
  size_t ever_registered_ ABSL_GUARDED_BY(mu_) = 0;
  // Worker clocks (steps completed), for SSP.
  absl::flat_hash_map<uint32_t, uint64_t> clocks_ ABSL_GUARDED_BY(mu_);

  // The step being gathered (sync / semi_sync).
  uint64_t open_step_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time step_opened_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<StepBuffer> step_sum_ ABSL_GUARDED_BY(mu_);
  // Workers that pushed for the open step.
  absl::flat_hash_set<uint32_t> arrivals_ ABSL_GUARDED_BY(mu_);
  size_t contributed_ ABSL_GUARDED_BY(mu_) = 0;  // of those, accepted pushes
  // reuse_last: each worker's gradient for the open step, and its last one.
  absl::flat_hash_map<uint32_t, std::unique_ptr<StepBuffer>> current_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint32_t, std::unique_ptr<StepBuffer>> last_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_CONSISTENCY_CONTROLLER_H_

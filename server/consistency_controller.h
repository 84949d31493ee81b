// ConsistencyController: the clock and the consistency policy of one table
// part, behind one mutex.
//
//   version   number of updates applied here; pulls report it, pushes carry
//             the version they were computed on, tau = version - base.
//
// A push is stamped (tau, staleness decision: common/staleness.h), clipped
// if the table clips, and handed to the table's ConsistencyPolicy
// (consistency_policy.h: async, ssp, sync, semi_sync), which applies it,
// gathers it into a step, or refuses it. Pulls ask the policy whether they
// may read and wait on the mutex until they may. Policy state lives in a
// PolicyState (policy_state.h) so an admin call can switch policies and keep
// the clocks.
//
// Updates whose result would not be finite are refused (a push:
// INVALID_ARGUMENT; a step's mean: not applied, logged and counted).
//
// Thread-safe, but mutations are meant to come from one thread at a time:
// the owning Partition calls every mutating method from its ordered apply
// path, so pushes, step closes and policy changes happen in one sequence.
// mu_ guards the state (pull waiters read it); table applies happen under
// it. Lock order: the partition's locks, then mu_, then table locks.
#ifndef TAUPS_SERVER_CONSISTENCY_CONTROLLER_H_
#define TAUPS_SERVER_CONSISTENCY_CONTROLLER_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/consistency_policy.h"
#include "server/membership_view.h"
#include "server/policy_state.h"
#include "server/push_types.h"
#include "server/table.h"
#include "server/table_stats.h"
#include "taups/table_config.h"

namespace taups {

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
  // The version read without mu_: only for the owning Partition's apply
  // path, which holds the partition's state lock exclusively while it
  // calls every mutating method here, so nothing changes it meanwhile.
  uint64_t VersionOnApplyPath() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return state_.version;
  }
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

  // Membership changed: the live workers now, how many ever registered, and
  // those awaited after a restore (Membership::AwaitReturning), as one view.
  // May close a step that was waiting only for workers now dead.
  void SetLiveWorkers(const MembershipView& view) ABSL_LOCKS_EXCLUDED(mu_);
  // Every worker the clocks know, in id order (after a restore: the ones the
  // checkpoint knew).
  std::vector<uint32_t> KnownWorkers() const ABSL_LOCKS_EXCLUDED(mu_);
  // The clock a (re)joining worker starts at; records it.
  uint64_t JoinClock(uint32_t worker) ABSL_LOCKS_EXCLUDED(mu_);
  // Time passed: closes a semi-sync step whose timeout has passed.
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
  const ConsistencyPolicy& policy() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return PolicyFor(state_.consistency.kind);
  }

  mutable absl::Mutex mu_;
  PolicyState state_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_CONSISTENCY_CONTROLLER_H_

// Partition: one table's part on one shard, and the one place its state
// changes.
//
// A partition owns the part's storage (values and optimizer state), its
// consistency policy with the version clock, the slices of pushes still
// arriving (StagedPushes) and the answers to recent pushes (DedupWindow).
// Every change — a push, a step closed by a timeout or by membership, a
// policy change, a restore — runs on one ordered apply path: callers queue,
// and the first in the queue applies the whole queued group in order under
// the state lock taken once (leveldb's DBImpl::Write groups its writers the
// same way), then wakes the others with their answers. So there is always a
// point where values, version, policy state and dedup window agree: reads
// (pulls, Snapshot) take the state lock shared and see one such point.
//
// A push reaches the partition as slices (PushSlice) that the caller has
// validated (range, keys, finite values, max_abs measured). Per slice:
//   1. a seen (worker, incarnation, seq) is answered from the DedupWindow
//      with duplicate = true, and nothing changes;
//   2. a slice of a k-slice push (k > 1) is staged until its k-th distinct
//      slice arrives (answer: staged = true); then the push applies as one
//      unit, with one tau and one version step;
//   3. the whole push goes to the policy (stamp tau, reject / down-weight,
//      apply or gather), which refuses an update whose result would not be
//      finite; its answer (OK or error) is recorded in the window.
// A slice refused before it reached the partition (Refuse) drops the push's
// staged slices and is recorded, so its other slices get the same refusal:
// a push is applied whole or not at all.
//
// Thread-safe. Lock order: queue_mu_ (never held while applying), then
// state_mu_, then the controller's and the table's own locks.
#ifndef TAUPS_SERVER_PARTITION_H_
#define TAUPS_SERVER_PARTITION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/consistency_controller.h"
#include "server/dedup_window.h"
#include "server/membership_view.h"
#include "server/memory_budget.h"
#include "server/pull_waiters.h"
#include "server/push_types.h"
#include "server/staged_pushes.h"
#include "server/table.h"
#include "server/table_stats.h"
#include "server/update_trigger.h"
#include "taups/table_config.h"

namespace taups {

struct PartitionLimits {
  // Bytes of unfinished multi-slice pushes a partition may hold.
  uint64_t max_staged_bytes = uint64_t{1} << 30;
  // A multi-slice push whose other slices have not come by then is dropped
  // (and its late slices refused).
  absl::Duration staged_push_timeout = absl::Minutes(2);
  size_t dedup_per_incarnation = DedupWindow::kDefaultPerIncarnation;
  size_t dedup_max_incarnations = DedupWindow::kDefaultMaxIncarnations;
  // When set (it must outlive the partition), staged slices are charged to
  // it while they wait (BudgetUse::kStaged), and each worker incarnation's
  // dedup window while it is kept (BudgetUse::kWorkerState, DedupWindow).
  MemoryBudget* budget = nullptr;
  // When set (it must outlive the partition), told of every version step
  // the apply path makes (UpdateTrigger::Add, once per group applied,
  // after the partition's locks are let go).
  UpdateTrigger* updates = nullptr;
};

// One validated slice of a push.
struct PushSlice {
  PushOrigin origin;
  uint32_t index = 0;  // 0-based, < header.slices
  PushHeader header;
  GradientPart part;
  // When set (dense only), keeps part.values' floats alive and unchanged for
  // as long as it lives: a slice that has to wait for its push's others is
  // staged as a reference to them instead of a copy.
  std::shared_ptr<const void> holder;
};

// Everything a partition holds that outlives a restart, at one point of its
// apply order.
struct PartitionSnapshot {
  uint64_t applied = 0;  // mutations applied before this point
  TableSnapshot table;
  PolicySnapshot policy;
  DedupSnapshot dedup;
};

// A cut of a partition at one point of its apply order (Partition::BeginCut)
// whose table storage is copied afterwards, block by block, while pushes go
// on (TableCut: a push copies a block it is about to change first). The
// rest (version, policy, dedup window) is copied at the cut.
// Thread-compatible; CopyAll may run on one thread while another, which
// owns the cut, runs CopyAll and then Finish.
struct PendingCut {
  PartitionSnapshot snapshot;  // its table empty until Finish
  std::unique_ptr<TableCut> table;
  // Copies every block not copied yet, calling between() after each (a
  // test slows the copy down with it). Only while the partition lives.
  void CopyAll(const std::function<void()>& between = nullptr);
  // The partition as it was at the cut. Once, after CopyAll on this thread.
  PartitionSnapshot Finish();
};

// What a pull reads, at one point of the apply order.
struct PartitionRead {
  uint64_t version = 0;
  uint64_t step = 0;  // sync / semi_sync: the open step; else 0
  // ReadOrPark: set when nothing was read and the pull is parked.
  ParkedPull parked;
};

class Partition {
 public:
  // `clock` must outlive the partition.
  Partition(std::unique_ptr<Table> table, const Clock* clock,
            const PartitionLimits& limits = {});
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  // The table as created (name, kind, shape, optimizer). Its consistency
  // and staleness fields are the creation's: see consistency()/staleness().
  const TableConfig& config() const { return table_->config(); }
  // For shape queries and typed reads inside Read(); never mutate through it.
  Table& table() const { return *table_; }

  absl::StatusOr<PushOutcome> Push(const PushSlice& slice);
  // The caller refused slice `index` of this push (`why`): drops its staged
  // slices and answers `why` to any later slice of it.
  void Refuse(const PushOrigin& origin, uint32_t index, uint32_t slices,
              const absl::Status& why);

  // Waits until the policy lets `worker` at `clock` read (or `deadline`:
  // DEADLINE_EXCEEDED naming what it waits for), then calls read() under
  // the state lock, shared: the version it returns is the one read() saw.
  absl::StatusOr<PartitionRead> Read(uint32_t worker, uint64_t clock,
                                     absl::Time deadline,
                                     absl::FunctionRef<void()> read);
  bool PullReady(uint32_t worker, uint64_t clock) const;

  // For an edge that must not block a thread on a waiting pull: like Read
  // when the policy lets `worker` at `clock` read now; otherwise nothing is
  // read and the pull is parked (the result's `parked` names it) with the
  // Wake that park() makes — called, under the state lock, only when it
  // parks. The Wake is called once, off this partition's locks: OK when a
  // change on the apply path (a push, a step closed, a Tick, membership,
  // SetConfig, Restore) lets it read (pull again then: the policy may have
  // moved on), DEADLINE_EXCEEDED naming what it waited for once `deadline`
  // passed (checked on Tick), CANCELLED (ParkedPull::Cancel), or the status
  // of ReleaseWaiters. A deadline already past is DEADLINE_EXCEEDED at once.
  absl::StatusOr<PartitionRead> ReadOrPark(
      uint32_t worker, uint64_t clock, absl::Time deadline,
      absl::FunctionRef<void()> read,
      absl::FunctionRef<PullWaiters::Wake()> park);
  // Wakes every parked pull with `why` (the table was dropped; the shard
  // is shutting down).
  void ReleaseWaiters(const absl::Status& why);
  // Pulls parked here now.
  size_t parked_pulls() const { return waiters_->size(); }

  // Membership, time and admin changes, each on the apply path.
  void SetLiveWorkers(const MembershipView& view);
  // The workers this part's clocks know (ConsistencyController::KnownWorkers).
  std::vector<uint32_t> KnownWorkers() const { return controller_.KnownWorkers(); }
  uint64_t JoinClock(uint32_t worker);
  void Tick();
  absl::Status SetConfig(const ConsistencyConfig& consistency,
                         const StalenessConfig& staleness);

  uint64_t version() const { return controller_.version(); }
  uint64_t open_step() const { return controller_.open_step(); }
  ConsistencyConfig consistency() const { return controller_.consistency(); }
  StalenessConfig staleness() const { return controller_.staleness(); }
  TableStats Stats() const;
  // Mutations applied so far (the length of the apply order).
  uint64_t applied() const;

  PartitionSnapshot Snapshot() const;
  // Like Snapshot, but the table's part is export_table(table()), called at
  // the same point of the apply order (an incremental checkpoint exports
  // only the rows changed since the last one: SparseTable::ExportChanges).
  PartitionSnapshot SnapshotWith(
      absl::FunctionRef<TableSnapshot(Table&)> export_table) const;

  // A cut at the current point of the apply order, taken on the apply path
  // (it waits its turn like a push); its table is copied afterwards
  // (PendingCut::CopyAll), so pushes wait only for the small state and the
  // cut's block table, not for a copy of the table.
  PendingCut BeginCut();

  // Called on the apply path right after a change that closed a step
  // (sync / semi_sync: the open step went up by one), with the steps closed
  // now and `begin_cut`, which cuts the partition at exactly that point
  // (the model of that step boundary) as BeginCut does. It runs under the
  // state lock: it must be quick and must not call into this partition
  // (but may copy an earlier PendingCut of it). Empty: none.
  using StepClosedHook = std::function<void(
      uint64_t steps_closed, absl::FunctionRef<PendingCut()> begin_cut)>;
  void SetStepClosedHook(StepClosedHook hook);
  // Replaces everything but membership with `snapshot`, on the apply path.
  // INVALID_ARGUMENT (nothing changed) if it does not fit this table.
  absl::Status Restore(const PartitionSnapshot& snapshot);

 private:
  struct Writer {
    Writer(absl::FunctionRef<void()> work, bool counted)
        : work(work), counted(counted) {}
    absl::FunctionRef<void()> work;
    bool counted;  // a mutation (applied_); a cut is not
    bool done = false;
    absl::CondVar cv;
  };
  // Runs `work` on the apply path: queued, then run (by this thread or by
  // the leader of its group) under state_mu_ held exclusively. `counted`:
  // it is one more mutation of the apply order.
  void Apply(absl::FunctionRef<void()> work, bool counted = true);

  // `copy`: the slice's data copied before the lock (multi-slice pushes).
  absl::StatusOr<PushOutcome> PushLocked(const PushSlice& slice,
                                         StagedSlice* copy)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  absl::StatusOr<PushOutcome> ApplyWholeLocked(
      const PushSlice& last, const std::vector<StagedSlice>& staged)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  void RecordLocked(const PushOrigin& origin,
                    const absl::StatusOr<PushOutcome>& answer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  void DropAbandonedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  // Wakes the parked pulls whose deadline passed (or that may read now).
  void ExpireParked() ABSL_LOCKS_EXCLUDED(state_mu_);
  PartitionSnapshot SnapshotLocked(
      absl::FunctionRef<TableSnapshot(Table&)> export_table) const
      ABSL_SHARED_LOCKS_REQUIRED(state_mu_);
  PendingCut BeginCutLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  // Calls step_hook_ if the open step went from `before` to before + 1.
  void NotifyStepClosedLocked(uint64_t before)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);

  const std::unique_ptr<Table> table_;
  const Clock* const clock_;
  const PartitionLimits limits_;

  absl::Mutex queue_mu_;
  std::deque<Writer*> queue_ ABSL_GUARDED_BY(queue_mu_);

  mutable absl::Mutex state_mu_;
  ConsistencyController controller_;  // mutated only under state_mu_
  StagedPushes staged_ ABSL_GUARDED_BY(state_mu_);
  DedupWindow dedup_ ABSL_GUARDED_BY(state_mu_);
  uint64_t applied_ ABSL_GUARDED_BY(state_mu_) = 0;
  uint64_t duplicates_ ABSL_GUARDED_BY(state_mu_) = 0;
  // Pulls parked by ReadOrPark (its own lock; taken after state_mu_).
  const std::shared_ptr<PullWaiters> waiters_ = std::make_shared<PullWaiters>();
  StepClosedHook step_hook_ ABSL_GUARDED_BY(state_mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_PARTITION_H_

#include "server/partition.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

// Writers one leader applies at most, so a leader's own call is not delayed
// without bound by a stream of newcomers.
constexpr size_t kMaxGroup = 64;

}  // namespace

Partition::Partition(std::unique_ptr<Table> table, const Clock* clock,
                     const PartitionLimits& limits)
    : table_(std::move(table)),
      clock_(clock),
      limits_(limits),
      controller_(table_.get(), clock),
      staged_(limits.max_staged_bytes, limits.budget),
      dedup_(limits.dedup_per_incarnation, limits.dedup_max_incarnations,
             limits.budget) {}

void Partition::Apply(absl::FunctionRef<void()> work, bool counted)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  Writer self(work, counted);
  queue_mu_.Lock();
  queue_.push_back(&self);
  while (!self.done && queue_.front() != &self) self.cv.Wait(&queue_mu_);
  if (self.done) {
    queue_mu_.Unlock();
    return;
  }
  // This thread leads: it applies everything queued behind it so far.
  std::vector<Writer*> group;
  for (auto it = queue_.begin(); it != queue_.end() && group.size() < kMaxGroup;
       ++it) {
    group.push_back(*it);
  }
  queue_mu_.Unlock();
  // Parked pulls the group's changes let read; woken once every lock here
  // is let go.
  std::vector<PullWaiters::Woken> woken;
  uint64_t versions = 0;  // steps of the version clock the group made
  {
    absl::MutexLock state(&state_mu_);
    const uint64_t version_before =
        limits_.updates != nullptr ? controller_.VersionOnApplyPath() : 0;
    for (Writer* writer : group) {
      const uint64_t step_before = step_hook_ ? controller_.open_step() : 0;
      writer->work();
      if (writer->counted) ++applied_;
      if (step_hook_) NotifyStepClosedLocked(step_before);
    }
    if (limits_.updates != nullptr) {
      const uint64_t version_after = controller_.VersionOnApplyPath();
      // A restore may set the clock back: no steps made then.
      if (version_after > version_before) versions = version_after - version_before;
    }
    if (waiters_->size() > 0) {
      woken = waiters_->TakeReady([this](uint32_t worker, uint64_t clock) {
        return controller_.PullReady(worker, clock);
      });
    }
  }
  queue_mu_.Lock();
  for (Writer* writer : group) {
    queue_.pop_front();
    if (writer != &self) {
      writer->done = true;
      writer->cv.Signal();
    }
  }
  if (!queue_.empty()) queue_.front()->cv.Signal();  // the next leader
  queue_mu_.Unlock();
  if (versions > 0) limits_.updates->Add(versions);
  PullWaiters::RunAll(woken);
}

absl::StatusOr<PushOutcome> Partition::Push(const PushSlice& slice) {
  if (slice.header.slices > 1 && slice.origin.seq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", config().name, "': a push of ", slice.header.slices,
        " slices needs origin.seq != 0 to tell its slices from another push's"));
  }
  // A slice that may be staged is copied before the apply path, so the
  // copies of concurrent slices run in parallel rather than one after
  // another under the lock. The slice that completes its push is applied
  // from where it lies: when a glance at the staged slices (only if the
  // lock is free now) says it completes, it is not copied. A wrong guess
  // costs only time: a slice to be staged without a copy is copied under
  // the lock (StagedPushes::Add).
  std::optional<StagedSlice> copy;
  if (slice.header.slices > 1 && slice.holder != nullptr &&
      slice.part.keys.empty()) {
    // The floats stay where they are: staging refers to them (no copy).
    copy = StagedSlice::Holding(slice.index, slice.part, slice.holder);
  } else if (slice.header.slices > 1) {
    bool completes = false;
    if (state_mu_.ReaderTryLock()) {
      completes = staged_.WouldComplete(slice.origin, slice.index, slice.header);
      state_mu_.ReaderUnlock();
    }
    if (!completes) copy = StagedSlice::CopyOf(slice.index, slice.part);
  }
  absl::StatusOr<PushOutcome> answer;
  Apply([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    answer = PushLocked(slice, copy ? &*copy : nullptr);
  });
  return answer;
}

absl::StatusOr<PushOutcome> Partition::PushLocked(const PushSlice& slice,
                                                  StagedSlice* copy) {
  const DedupWindow::Lookup seen = dedup_.Find(slice.origin);
  if (seen.verdict == DedupWindow::Verdict::kRepeat) {
    ++duplicates_;
    if (!seen.answer->status.ok()) return seen.answer->status;
    PushOutcome again = seen.answer->outcome;
    again.duplicate = true;
    return again;
  }
  if (seen.verdict == DedupWindow::Verdict::kForgotten) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", config().name, "': push ", slice.origin.seq, " of worker ",
        slice.origin.worker_id, " is older than this shard remembers (it "
        "keeps answers past push ", seen.forgotten_through,
        "); it may have been applied already, so it is not applied again"));
  }
  if (absl::Status room = dedup_.Admit(slice.origin); !room.ok()) {
    return absl::Status(room.code(), absl::StrCat("table '", config().name, "': ",
                                                  room.message(),
                                                  "; nothing of this push was applied"));
  }
  absl::StatusOr<StagedPushes::Added> added = staged_.Add(
      slice.origin, slice.index, slice.header, slice.part, clock_->Now(), copy);
  if (!added.ok()) {
    staged_.Drop(slice.origin);
    const absl::Status refused(
        added.status().code(),
        absl::StrCat("table '", config().name, "': ", added.status().message(),
                     "; nothing of this push was applied"));
    RecordLocked(slice.origin, refused);
    return refused;
  }
  PushOutcome outcome;
  outcome.new_version = controller_.version();
  switch (*added) {
    case StagedPushes::Added::kDuplicate:
      ++duplicates_;
      outcome.staged = true;
      outcome.duplicate = true;
      return outcome;
    case StagedPushes::Added::kStaged:
      outcome.staged = true;
      return outcome;
    case StagedPushes::Added::kComplete:
      break;
  }
  const std::vector<StagedSlice> staged = staged_.Take(slice.origin);
  absl::StatusOr<PushOutcome> answer = ApplyWholeLocked(slice, staged);
  RecordLocked(slice.origin, answer);
  return answer;
}

absl::StatusOr<PushOutcome> Partition::ApplyWholeLocked(
    const PushSlice& last, const std::vector<StagedSlice>& staged) {
  std::vector<GradientPart> parts;
  parts.reserve(staged.size() + 1);
  bool last_placed = false;
  for (const StagedSlice& s : staged) {
    if (!last_placed && last.index < s.index) {
      parts.push_back(last.part);
      last_placed = true;
    }
    parts.push_back(s.AsPart());
  }
  if (!last_placed) parts.push_back(last.part);
  PushArgs args;
  args.origin = last.origin;
  args.base_version = last.header.base_version;
  args.clock = last.header.clock;
  args.push_norm_sq = last.header.push_norm_sq;
  args.parts = parts;
  return controller_.Push(args);
}

void Partition::RecordLocked(const PushOrigin& origin,
                             const absl::StatusOr<PushOutcome>& answer) {
  PushAnswer remembered;
  if (answer.ok()) {
    remembered.outcome = *answer;
  } else {
    remembered.status = answer.status();
  }
  dedup_.Record(origin, std::move(remembered));
}

void Partition::Refuse(const PushOrigin& origin, uint32_t index,
                       uint32_t slices, const absl::Status& why) {
  Apply([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (dedup_.Find(origin).verdict != DedupWindow::Verdict::kNew) return;
    staged_.Drop(origin);
    RecordLocked(origin,
                 absl::Status(why.code(),
                              absl::StrCat("slice ", index, " of ", slices,
                                           " of push ", origin.seq, ": ",
                                           why.message())));
  });
}

void Partition::DropAbandonedLocked() {
  if (staged_.pushes() == 0) return;
  const absl::Time now = clock_->Now();
  for (const PushOrigin& origin : staged_.Older(now - limits_.staged_push_timeout)) {
    staged_.Drop(origin);
    spdlog::warn("table '{}': push {} of worker {} dropped: its other slices "
                 "did not arrive within {}", config().name, origin.seq,
                 origin.worker_id,
                 absl::FormatDuration(limits_.staged_push_timeout));
    RecordLocked(origin,
                 absl::AbortedError(absl::StrCat(
                     "table '", config().name, "': push ", origin.seq,
                     " was dropped because its other slices did not arrive "
                     "within ", absl::FormatDuration(limits_.staged_push_timeout),
                     "; nothing of it was applied")));
  }
}

absl::StatusOr<PartitionRead> Partition::Read(uint32_t worker, uint64_t clock,
                                              absl::Time deadline,
                                              absl::FunctionRef<void()> read) {
  if (!controller_.PullReady(worker, clock)) {
    RETURN_IF_ERROR(controller_.AwaitPullReady(worker, clock, deadline));
  }
  absl::ReaderMutexLock lock(&state_mu_);
  PartitionRead result;
  result.version = controller_.version();
  result.step = controller_.open_step();
  read();
  return result;
}

bool Partition::PullReady(uint32_t worker, uint64_t clock) const {
  return controller_.PullReady(worker, clock);
}

namespace {

// What a pull that may not read (yet) is told when it cannot wait longer.
absl::Status PullWaitedTooLong(absl::string_view table, uint32_t worker,
                               uint64_t clock, const absl::Status& waiting) {
  if (waiting.ok()) return waiting;
  return absl::DeadlineExceededError(absl::StrCat(
      "table '", table, "': the pull of worker ", worker, " at clock ", clock,
      " reached its deadline (the caller's, or the shard's --max_wait_s): ",
      waiting.message()));
}

}  // namespace

absl::StatusOr<PartitionRead> Partition::ReadOrPark(
    uint32_t worker, uint64_t clock, absl::Time deadline,
    absl::FunctionRef<void()> read, absl::FunctionRef<PullWaiters::Wake()> park) {
  // Shared, so no apply runs between the check and the parking: a change
  // that lets this pull read comes after it is parked, and wakes it.
  absl::ReaderMutexLock lock(&state_mu_);
  PartitionRead result;
  if (!controller_.PullReady(worker, clock)) {
    if (deadline <= clock_->Now()) {
      return PullWaitedTooLong(
          config().name, worker, clock,
          controller_.AwaitPullReady(worker, clock, absl::InfinitePast()));
    }
    result.parked = ParkedPull(waiters_, waiters_->Add(worker, clock, deadline, park()));
    return result;
  }
  result.version = controller_.version();
  result.step = controller_.open_step();
  read();
  return result;
}

void Partition::ReleaseWaiters(const absl::Status& why) {
  std::vector<PullWaiters::Woken> woken = waiters_->TakeAll(why);
  PullWaiters::RunAll(woken);
}

void Partition::ExpireParked() {
  if (waiters_->size() == 0) return;
  std::vector<PullWaiters::Woken> woken;
  {
    absl::ReaderMutexLock lock(&state_mu_);
    woken = waiters_->TakeExpired(
        clock_->Now(), [this](uint32_t worker, uint64_t clock) {
          // Not waiting at all (OK): the pull reads when it is run again.
          return PullWaitedTooLong(
              config().name, worker, clock,
              controller_.AwaitPullReady(worker, clock, absl::InfinitePast()));
        });
  }
  PullWaiters::RunAll(woken);
}

void Partition::SetLiveWorkers(const MembershipView& view) {
  Apply([&] { controller_.SetLiveWorkers(view); });
}

uint64_t Partition::JoinClock(uint32_t worker) {
  uint64_t clock = 0;
  Apply([&] { clock = controller_.JoinClock(worker); });
  return clock;
}

void Partition::Tick() {
  Apply([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    controller_.Tick();
    table_->ExpireIdle();
    DropAbandonedLocked();
  });
  ExpireParked();
}

absl::Status Partition::SetConfig(const ConsistencyConfig& consistency,
                                  const StalenessConfig& staleness) {
  absl::Status status;
  Apply([&] { status = controller_.SetConfig(consistency, staleness); });
  return status;
}

TableStats Partition::Stats() const {
  TableStats stats = controller_.Stats();
  absl::ReaderMutexLock lock(&state_mu_);
  stats.duplicates = duplicates_;
  return stats;
}

uint64_t Partition::applied() const {
  absl::ReaderMutexLock lock(&state_mu_);
  return applied_;
}

PartitionSnapshot Partition::Snapshot() const {
  return SnapshotWith([](Table& table) { return table.Export(); });
}

PartitionSnapshot Partition::SnapshotWith(
    absl::FunctionRef<TableSnapshot(Table&)> export_table) const {
  absl::ReaderMutexLock lock(&state_mu_);
  return SnapshotLocked(export_table);
}

PartitionSnapshot Partition::SnapshotLocked(
    absl::FunctionRef<TableSnapshot(Table&)> export_table) const {
  PartitionSnapshot snapshot;
  snapshot.applied = applied_;
  snapshot.table = export_table(*table_);
  snapshot.policy = controller_.Export();
  snapshot.dedup = dedup_.Export();
  return snapshot;
}

void PendingCut::CopyAll(const std::function<void()>& between) {
  for (size_t b = 0; b < table->blocks(); ++b) {
    table->CopyBlock(b);
    if (between) between();
  }
}

PartitionSnapshot PendingCut::Finish() {
  PartitionSnapshot out = std::move(snapshot);
  out.table = table->Finish();
  return out;
}

PendingCut Partition::BeginCut() {
  PendingCut cut;
  Apply([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { cut = BeginCutLocked(); },
        /*counted=*/false);
  return cut;
}

PendingCut Partition::BeginCutLocked() {
  PendingCut cut;
  cut.snapshot = SnapshotLocked([](Table&) { return TableSnapshot(); });
  cut.table = table_->BeginCut();
  return cut;
}

void Partition::SetStepClosedHook(StepClosedHook hook) {
  absl::MutexLock lock(&state_mu_);
  step_hook_ = std::move(hook);
}

void Partition::NotifyStepClosedLocked(uint64_t before) {
  const uint64_t now = controller_.open_step();
  if (now != before + 1) return;
  step_hook_(now, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return BeginCutLocked(); });
}

absl::Status Partition::Restore(const PartitionSnapshot& snapshot) {
  absl::Status status;
  Apply([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const PolicySnapshot before = controller_.Export();
    status = controller_.Import(snapshot.policy);
    if (!status.ok()) return;
    status = table_->Import(snapshot.table);
    if (!status.ok()) {
      controller_.Import(before).IgnoreError();  // fits: it was exported here
      return;
    }
    dedup_.Import(snapshot.dedup);
    staged_ = StagedPushes(limits_.max_staged_bytes, limits_.budget);
    // The restore itself is counted by Apply, after the restored position.
    applied_ = snapshot.applied;
  });
  return status;
}

}  // namespace taups

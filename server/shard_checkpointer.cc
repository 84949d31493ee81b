#include "server/shard_checkpointer.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/sparse_table.h"
#include "spdlog/spdlog.h"

namespace taups {

absl::Status ShardCheckpointerOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("checkpoint dir is empty");
  if (keep == 0) {
    return absl::InvalidArgumentError("checkpoints to keep must be at least 1");
  }
  if (interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("checkpoint interval must be >= 0");
  }
  if (full_every == 0) {
    return absl::InvalidArgumentError(
        "checkpoint full_every must be at least 1 (1: every checkpoint full)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ShardCheckpointer>> ShardCheckpointer::Open(
    ParameterStore* store, CheckpointFs* fs,
    const ShardCheckpointerOptions& options, uint64_t incarnation) {
  RETURN_IF_ERROR(options.Validate());
  CheckpointStoreOptions files;
  files.dir = options.dir;
  files.keep = options.keep;
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointStore> opened,
                   CheckpointStore::Open(fs, files));
  return std::unique_ptr<ShardCheckpointer>(
      new ShardCheckpointer(store, std::move(opened), options, incarnation));
}

ShardCheckpointer::ShardCheckpointer(ParameterStore* store,
                                     std::unique_ptr<CheckpointStore> files,
                                     const ShardCheckpointerOptions& options,
                                     uint64_t incarnation)
    : store_(store),
      files_(std::move(files)),
      options_(options),
      incarnation_(incarnation) {}

ShardCheckpointer::~ShardCheckpointer() {
  // No wake runs after this (SetWake waits for one running).
  if (options_.every_versions > 0 && thread_.joinable()) store_->updates().SetWake(nullptr);
  {
    absl::MutexLock lock(&steps_mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (copier_.joinable()) copier_.join();
  for (auto& [name, weak] : hooked_) {
    if (std::shared_ptr<Partition> partition = weak.lock()) {
      partition->SetStepClosedHook(nullptr);
    }
  }
}

absl::StatusOr<RestoreReport> ShardCheckpointer::Restore() {
  if (!store_->ListTables().empty()) {
    return absl::FailedPreconditionError(
        "a checkpoint is restored into a shard that holds no tables yet");
  }
  ForgetStepIndex();  // loading may set damaged checkpoints aside
  ASSIGN_OR_RETURN(LoadedCheckpoint loaded, files_->LoadNewest(options_.restore_step));
  const CheckpointHeader& header = loaded.manifest.header;
  if (header.shard_index != store_->shard_index() ||
      header.shard_count != store_->num_shards()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", loaded.path, " belongs to shard ", header.shard_index,
        " of ", header.shard_count, "; this is shard ", store_->shard_index(),
        " of ", store_->num_shards(), " (wrong --checkpoint_dir?)"));
  }
  for (const PartitionCheckpoint& part : loaded.partitions) {
    bool created = false;
    ASSIGN_OR_RETURN(const TableInfo info,
                     store_->CreateTable(part.config, /*exist_ok=*/false, &created));
    if (info.range.begin != part.range.begin || info.range.end != part.range.end) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table '", part.config.name, "' of checkpoint ", loaded.path,
          " holds elements [", part.range.begin, ", ", part.range.end,
          ") but this shard owns [", info.range.begin, ", ", info.range.end, ")"));
    }
    ASSIGN_OR_RETURN(std::shared_ptr<Partition> partition,
                     store_->PartitionOf(part.config.name));
    RETURN_IF_ERROR(partition->Restore(part.snapshot));
  }
  RestoreReport report;
  report.path = loaded.path;
  report.sequence = header.sequence;
  report.incarnation = header.incarnation;
  report.created = header.created;
  for (size_t i = 0; i < loaded.partitions.size(); ++i) {
    report.tables.push_back(SummaryOf(loaded.partitions[i], i));
  }
  report.broken = loaded.broken;
  report.chain = loaded.chain;
  {
    absl::MutexLock lock(&stats_mu_);
    stats_.restored_sequence = header.sequence;
  }
  {
    absl::WriterMutexLock lock(&write_mu_);
    updates_at_last_ = store_->updates().total();
  }
  return report;
}

absl::StatusOr<CheckpointWriteInfo> ShardCheckpointer::TakeNow() {
  absl::MutexLock lock(&write_mu_);
  return Take(std::nullopt, {});
}

absl::StatusOr<CheckpointTaken> ShardCheckpointer::TakeNowReporting() {
  absl::MutexLock lock(&write_mu_);
  CheckpointTaken report;
  ASSIGN_OR_RETURN(report.written, Take(std::nullopt, {}, &report));
  return report;
}

absl::StatusOr<CheckpointWriteInfo> ShardCheckpointer::Take(
    std::optional<uint64_t> step_cut, std::map<std::string, PartitionCheckpoint> cut,
    CheckpointTaken* report) {
  const absl::Time start = absl::Now();
  // The version trigger counts from here: the next one is due `every_versions`
  // updates after this one began (one that fails leaves the base as it was,
  // so the poll retries it, but the wake is not sent again until then).
  const uint64_t updates_at_start = store_->updates().total();
  if (options_.every_versions > 0) {
    store_->updates().Arm(updates_at_start + options_.every_versions);
  }
  // A step cut still being copied is finished first, so cutting its table
  // again below does not finish it on the apply path.
  if (options_.every_steps > 0) CopyStepCuts();
  ShardCheckpoint checkpoint;
  checkpoint.header.shard_index = store_->shard_index();
  checkpoint.header.shard_count = store_->num_shards();
  checkpoint.header.incarnation = incarnation_;
  checkpoint.header.created = start;
  const bool tracking = options_.full_every > 1;
  const bool incremental = tracking && chain_ && chain_->deltas + 1 < options_.full_every;
  if (incremental) checkpoint.base = chain_->base;
  ++cut_;
  absl::Duration longest_pause;
  std::optional<uint64_t> step;
  bool one_cut = true;
  uint64_t whole_in_delta = 0;
  std::map<std::string, TableTrack> tracked;  // as of this checkpoint
  for (const TableInfo& info : store_->ListTables()) {
    absl::StatusOr<std::shared_ptr<Partition>> partition =
        store_->PartitionOf(info.config.name);
    if (!partition.ok()) continue;  // dropped meanwhile
    const absl::Time taken_at = absl::Now();
    absl::Duration pause;  // the partition's apply path held
    auto copied = cut.find(info.config.name);
    auto* sparse = dynamic_cast<SparseTable*>(&(*partition)->table());
    if (copied != cut.end()) {
      checkpoint.partitions.push_back(std::move(copied->second));
    } else if (sparse != nullptr && tracking) {
      auto track = tracks_.find(info.config.name);
      uint32_t since = 0;
      if (incremental && track != tracks_.end() &&
          track->second.partition.lock() == *partition) {
        since = track->second.since;
      }
      SparseTable::Changes changes;
      PartitionSnapshot snapshot = (*partition)->SnapshotWith([&](Table&) {
        changes = sparse->ExportChanges(since, cut_);
        return std::move(changes.rows);
      });
      if (since > 0 && !changes.complete) {  // cannot tell: whole
        snapshot = (*partition)->SnapshotWith([&](Table&) {
          return sparse->ExportChanges(0, cut_).rows;
        });
        since = 0;
      }
      pause = absl::Now() - taken_at;
      if (incremental && since == 0) ++whole_in_delta;
      checkpoint.partitions.push_back(CheckpointOf(**partition, std::move(snapshot)));
      if (since > 0) {
        checkpoint.partitions.back().delta = true;
        checkpoint.partitions.back().removed = std::move(changes.removed);
      }
      tracked[info.config.name] = TableTrack{*partition, cut_};
    } else {
      PendingCut pending = (*partition)->BeginCut();
      pause = absl::Now() - taken_at;
      pending.CopyAll();  // pushes go on meanwhile
      checkpoint.partitions.push_back(CheckpointOf(**partition, pending.Finish()));
    }
    longest_pause = std::max(longest_pause, pause);
    const PartitionCheckpoint& taken = checkpoint.partitions.back();
    const ConsistencyKind kind = taken.config.consistency.kind;
    if (kind == ConsistencyKind::kSync || kind == ConsistencyKind::kSemiSync) {
      const PolicySnapshot& policy = taken.snapshot.policy;
      if (!policy.arrivals.empty() || (step && *step != policy.open_step)) {
        one_cut = false;
      }
      step = policy.open_step;
    }
  }
  if (one_cut) checkpoint.header.sync_step = step;
  if (step_cut && checkpoint.header.sync_step != step_cut) {
    // A sync table created or switched to sync after the copies were taken.
    spdlog::warn("checkpoint of step {} not written: a sync table of the shard was "
                 "not cut at that step", *step_cut);
    return absl::FailedPreconditionError("a step cut whose tables disagree on the step");
  }
  absl::StatusOr<CheckpointWriteInfo> written = files_->Write(checkpoint);
  ForgetStepIndex();  // written or not, it may have pruned old ones
  absl::MutexLock stats_lock(&stats_mu_);
  stats_.longest_pause = std::max(stats_.longest_pause, longest_pause);
  if (!written.ok()) {
    ++stats_.failed;
    stats_.last_error = written.status().ToString();
    spdlog::error("checkpoint into {} failed, the previous one stands: {}",
                  files_->dir(), written.status().ToString());
    return written.status();
  }
  updates_at_last_ = updates_at_start;
  chain_ = ChainLink{CheckpointBase{written->sequence, written->manifest_digest},
                     incremental ? chain_->deltas + 1 : 0};
  // A table held whole here or by a delta is tracked from this cut on; one
  // that was copied at a step (whole, tracking untouched) keeps its track.
  for (auto& [name, track] : tracked) tracks_[name] = track;
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    it = it->second.partition.expired() ? tracks_.erase(it) : std::next(it);
  }
  ++stats_.taken;
  if (incremental) ++stats_.incremental;
  if (step_cut) {
    ++stats_.step_cuts;
    stats_.last_step_cut = *step_cut;
  }
  stats_.tables_whole_in_delta += whole_in_delta;
  stats_.last_success = absl::Now();
  stats_.last_duration = stats_.last_success - start;
  stats_.last_bytes = written->bytes;
  stats_.last_sequence = written->sequence;
  stats_.last_error.clear();
  if (report != nullptr) {
    for (const PartitionCheckpoint& p : checkpoint.partitions) {
      report->tables.push_back(
          {p.config.name, p.snapshot.policy.version, p.snapshot.policy.open_step});
    }
    report->sync_step = checkpoint.header.sync_step;
    report->incremental = incremental;
  }
  spdlog::info("checkpoint {} written ({}): {} tables, {} bytes in {} (longest "
               "table cut {}){}", written->path,
               incremental ? absl::StrCat("delta on ", checkpoint.base->sequence)
                           : std::string("full"),
               checkpoint.partitions.size(), written->bytes,
               absl::FormatDuration(stats_.last_duration),
               absl::FormatDuration(longest_pause),
               checkpoint.header.sync_step
                   ? absl::StrCat(", at sync step ", *checkpoint.header.sync_step)
                   : std::string());
  return written;
}

void ShardCheckpointer::OnStepClosed(const std::string& table, uint64_t steps_closed,
                                     const Partition& partition,
                                     const std::weak_ptr<Partition>& self,
                                     absl::FunctionRef<PendingCut()> begin_cut) {
  if (steps_closed % options_.every_steps != 0) return;
  const absl::Time start = absl::Now();
  std::shared_ptr<CutInCopy> earlier;
  {
    absl::MutexLock lock(&steps_mu_);
    if (auto it = copying_.find(table); it != copying_.end()) {
      earlier = std::move(it->second);
      copying_.erase(it);
    }
  }
  // Of an older table of this name: its own partition (kept by the copier
  // while it copies) is gone or going; dropped.
  if (earlier && (earlier->partition.owner_before(self) ||
                  self.owner_before(earlier->partition))) {
    earlier.reset();
  }
  if (earlier) {  // the copier is a cut behind: finish it here, still exact
    earlier->cut.CopyAll();
    FileStepCut(table, partition, *earlier);
  }
  auto cut = std::make_shared<CutInCopy>(CutInCopy{steps_closed, self, begin_cut()});
  if (options_.copy_cut_on_apply_path) {
    cut->cut.CopyAll();
    FileStepCut(table, partition, *cut);
  }
  {
    absl::MutexLock lock(&stats_mu_);  // a leaf, like steps_mu_
    stats_.longest_pause = std::max(stats_.longest_pause, absl::Now() - start);
    if (earlier) ++stats_.cuts_finished_on_apply_path;
  }
  absl::MutexLock lock(&steps_mu_);
  if (!options_.copy_cut_on_apply_path) copying_[table] = std::move(cut);  // wakes the copier
}

void ShardCheckpointer::FileStepCut(const std::string& table, const Partition& partition,
                                    CutInCopy& cut) {
  PartitionCheckpoint copy = CheckpointOf(partition, cut.cut.Finish());
  const TableSnapshot& t = copy.snapshot.table;
  const uint64_t bytes = (t.values.size() + t.state.size()) * sizeof(float) +
                         (t.keys.size() + t.row_versions.size()) * sizeof(uint64_t);
  {
    absl::MutexLock lock(&stats_mu_);
    stats_.largest_cut_bytes = std::max(stats_.largest_cut_bytes, bytes);
  }
  absl::MutexLock lock(&steps_mu_);
  step_copies_[cut.step][table] = std::move(copy);
  // Copies of at most 4 steps wait (a slow write, or a table far ahead
  // of another). What gives way follows from the steps alone, so shards
  // that fall behind by different amounts still keep the same steps: the
  // cuts of multiples of 4 N outlast the others. The oldest waiting step
  // that is not such a multiple goes (the incoming one, if it is the only
  // one); when all are, the oldest.
  const uint64_t coarse = 4 * options_.every_steps;
  while (step_copies_.size() > 4) {
    auto gone = std::find_if(step_copies_.begin(), step_copies_.end(),
                             [&](const auto& step) { return step.first % coarse != 0; });
    step_copies_.erase(gone != step_copies_.end() ? gone : step_copies_.begin());
  }
  step_copied_ = true;  // wakes Loop to write it
}

void ShardCheckpointer::CopyStepCuts() {
  std::vector<std::pair<std::string, std::shared_ptr<CutInCopy>>> todo;
  {
    absl::MutexLock lock(&steps_mu_);
    todo.assign(copying_.begin(), copying_.end());
  }
  const absl::Duration delay = options_.cut_block_delay;
  for (auto& [table, cut] : todo) {
    const std::shared_ptr<Partition> partition = cut->partition.lock();
    bool mine = false;
    if (partition != nullptr) {
      // Block by block, each under its own lock: pushes go on meanwhile.
      cut->cut.CopyAll([delay] {
        if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
      });
    }
    {
      absl::MutexLock lock(&steps_mu_);
      auto it = copying_.find(table);
      if (it != copying_.end() && it->second == cut) {
        copying_.erase(it);
        mine = true;
      }
    }
    // Taken by the table's next cut meanwhile (which files it), or the
    // table went (nothing to file).
    if (mine && partition != nullptr) FileStepCut(table, *partition, *cut);
  }
}

void ShardCheckpointer::HookNewTables() {
  for (const TableInfo& info : store_->ListTables()) {
    const ConsistencyKind kind = info.config.consistency.kind;
    absl::StatusOr<std::shared_ptr<Partition>> partition =
        store_->PartitionOf(info.config.name);
    if (!partition.ok()) continue;
    const ConsistencyKind now = (*partition)->consistency().kind;
    if (now != ConsistencyKind::kSync && now != ConsistencyKind::kSemiSync &&
        kind != ConsistencyKind::kSync && kind != ConsistencyKind::kSemiSync) {
      continue;
    }
    auto it = hooked_.find(info.config.name);
    if (it != hooked_.end() && it->second.lock() == *partition) continue;
    const std::string name = info.config.name;
    Partition* raw = partition->get();
    std::weak_ptr<Partition> self = *partition;
    raw->SetStepClosedHook([this, name, raw, self](uint64_t steps, auto begin_cut) {
      OnStepClosed(name, steps, *raw, self, begin_cut);
    });
    hooked_[name] = *partition;
  }
}

void ShardCheckpointer::WriteCompleteStep() {
  std::vector<std::string> sync_tables;
  for (const TableInfo& info : store_->ListTables()) {
    absl::StatusOr<std::shared_ptr<Partition>> partition =
        store_->PartitionOf(info.config.name);
    if (!partition.ok()) continue;
    const ConsistencyKind kind = (*partition)->consistency().kind;
    if (kind == ConsistencyKind::kSync || kind == ConsistencyKind::kSemiSync) {
      sync_tables.push_back(info.config.name);
    }
  }
  if (sync_tables.empty()) return;
  // Every complete step, oldest first: shards running the same steps then
  // write the same steps, so they share cuts to restore (writing only the
  // newest let each shard skip different ones). A step older than a
  // complete one that is itself incomplete never completes: dropped.
  std::vector<std::pair<uint64_t, std::map<std::string, PartitionCheckpoint>>> cuts;
  {
    absl::MutexLock lock(&steps_mu_);
    auto complete = [&](const std::map<std::string, PartitionCheckpoint>& copies) {
      return std::all_of(sync_tables.begin(), sync_tables.end(),
                         [&](const std::string& t) { return copies.contains(t); });
    };
    auto newest = std::find_if(step_copies_.rbegin(), step_copies_.rend(),
                               [&](const auto& step) { return complete(step.second); });
    for (auto it = step_copies_.begin(); it != newest.base();) {
      if (complete(it->second)) cuts.emplace_back(it->first, std::move(it->second));
      it = step_copies_.erase(it);
    }
  }
  for (auto& [step, cut] : cuts) {
    absl::MutexLock lock(&write_mu_);
    Take(step, std::move(cut)).IgnoreError();  // logged and counted by Take
  }
}

void ShardCheckpointer::StartBackground() {
  if (thread_.joinable()) return;
  if (options_.interval <= absl::ZeroDuration() && options_.every_versions == 0 &&
      options_.every_steps == 0) {
    return;
  }
  if (options_.every_versions > 0) {
    // The apply path wakes Loop once the shard applied every_versions
    // updates since the last checkpoint began (steps_mu_ is a leaf).
    store_->updates().SetWake([this] {
      absl::MutexLock lock(&steps_mu_);
      versions_due_ = true;
    });
    absl::MutexLock lock(&write_mu_);
    store_->updates().Arm(updates_at_last_ + options_.every_versions);
  }
  thread_ = std::thread([this] { Loop(); });
  if (options_.every_steps > 0) copier_ = std::thread([this] { CopierLoop(); });
}

void ShardCheckpointer::CopierLoop() {
  while (true) {
    {
      absl::MutexLock lock(&steps_mu_);
      steps_mu_.Await(absl::Condition(this, &ShardCheckpointer::CutsToCopy));
      if (stopping_) return;
    }
    CopyStepCuts();
  }
}

void ShardCheckpointer::Loop() {
  // The version trigger also wakes it at once (UpdateTrigger); the poll
  // catches what the wake does not (a failed write retried, step hooks of
  // new tables). The timer is measured from the last success (or from start).
  const absl::Duration poll = absl::Milliseconds(200);
  absl::Time last = absl::Now();
  while (true) {
    {
      // A step copied wakes it at once, so copies are written before the
      // four kept give way to newer ones.
      absl::MutexLock lock(&steps_mu_);
      steps_mu_.AwaitWithTimeout(absl::Condition(this, &ShardCheckpointer::Woken), poll);
      if (stopping_) break;
      step_copied_ = false;
      versions_due_ = false;
    }
    if (options_.every_steps > 0) {
      HookNewTables();
      WriteCompleteStep();
    }
    bool due = options_.interval > absl::ZeroDuration() &&
               absl::Now() - last >= options_.interval;
    if (!due && options_.every_versions > 0) {
      uint64_t at_last = 0;
      {
        absl::MutexLock lock(&write_mu_);
        at_last = updates_at_last_;
      }
      due = store_->updates().total() >= at_last + options_.every_versions;
    }
    if (!due) continue;
    last = absl::Now();  // a failure waits a full interval before retrying
    TakeNow().IgnoreError();  // logged and counted by TakeNow
  }
}

CheckpointerStats ShardCheckpointer::stats() const {
  absl::MutexLock lock(&stats_mu_);
  return stats_;
}

void ShardCheckpointer::WriteMetrics(MetricsWriter& out) const {
  const CheckpointerStats s = stats();
  out.Counter("taups_checkpoints_total", "Checkpoints written.", {}, s.taken);
  out.Counter("taups_checkpoint_failures_total",
              "Checkpoints that failed (the previous one stands; see the log).",
              {}, s.failed);
  out.Gauge("taups_checkpoint_last_success_timestamp_seconds",
            "Unix time of the last checkpoint written (0: none yet).", {},
            s.last_success == absl::InfinitePast()
                ? 0.0
                : absl::ToDoubleSeconds(s.last_success - absl::UnixEpoch()));
  out.Gauge("taups_checkpoint_duration_seconds",
            "How long the last checkpoint took.", {},
            absl::ToDoubleSeconds(s.last_duration));
  out.Gauge("taups_checkpoint_bytes", "Bytes of the last checkpoint.", {},
            s.last_bytes);
  out.Counter("taups_checkpoints_incremental_total",
              "Checkpoints written as deltas on the one before.", {}, s.incremental);
  out.Counter("taups_checkpoint_step_cuts_total",
              "Checkpoints written at a sync step boundary (--checkpoint_every_steps).",
              {}, s.step_cuts);
  out.Gauge("taups_checkpoint_last_step_cut", "Step of the last step-cut checkpoint.",
            {}, s.last_step_cut);
  out.Gauge("taups_checkpoint_longest_pause_seconds",
            "Longest time one table's pushes waited for a checkpoint's cut.",
            {}, absl::ToDoubleSeconds(s.longest_pause));
}

}  // namespace taups

// ShardCheckpointer: a shard's durability — taking checkpoints of every
// partition of a ParameterStore into a CheckpointStore, and restoring the
// newest valid one into an empty store when the shard starts.
//
// Each partition's checkpoint is a consistent cut of its apply order
// (Partition::Snapshot); partitions are cut one after another. The header
// records a sync step only when every sync/semi-sync table of the shard was
// cut at the same step boundary with nothing of the open step gathered, so
// restoring such checkpoints of all shards gives a model that existed.
//
// Incremental checkpoints (full_every > 1): of every full_every
// checkpoints one is full and the others are deltas on the one before:
// sparse tables write only the rows changed and the keys removed since it
// (SparseTable::ExportChanges), dense tables and the small state (version,
// policy, dedup window) go whole. A table new since the last checkpoint, a
// restored one, or one whose changes could not all be told goes whole
// inside the delta. A failed write leaves the base as it was: the next
// delta covers everything since the last one written.
//
// Step cut (every_steps = N > 0): every sync and semi-sync table gets a
// hook on its apply path (Partition::SetStepClosedHook) that cuts the
// table exactly when its k*N-th step closes (Partition::BeginCut: the small
// state now, the storage copied block by block afterwards by the
// copier thread, a push copying a block it is about to change first);
// once every such table of the shard has its copy for step k*N, the
// background thread writes them (and the other tables as they are then) as one
// checkpoint whose header records sync_step = k*N; every complete step is
// written, oldest first, while at most 4 steps' copies wait. When a fifth
// comes, the oldest step that is not a multiple of 4 N gives way (the
// incoming one if it is the only such; the oldest when all are): a rule of
// the step numbers alone, so shards whose writes fall behind by different
// amounts still all keep the multiples of 4 N (as long as each writes one
// checkpoint per 4 N steps). Shards running the same steps thus hold
// checkpoints of the same steps: restoring one of those on every shard
// gives the model as it was after that step. Tables are hooked by the background thread, within
// 200 ms of their creation. Async tables have no steps: each of their
// checkpoints is consistent in itself only.
//
// The pause: a step cut holds the table's apply path for the small state
// and the cut's block table only; pushes of the open step (gathered until
// it closes) then never wait for the copy, and a change of a block (the
// next step's close, a late push applied at once) waits for that block's
// copy at most. One cut per table is copied at a time, holding at most one
// extra copy of its storage; a cut of a table whose previous cut is still
// being copied (the copier fell N steps behind) first finishes the
// previous copy on the apply path (counted: cuts_finished_on_apply_path).
// Checkpoints that are not step cuts (timer, versions, TakeNow) cut every
// table the same way, one after another, and copy each before the next;
// sparse tables of an incremental chain are exported under the
// partition's shared lock (ExportChanges), as before.
//
// Checkpoints are taken when asked (TakeNow: an admin call, SIGTERM after
// draining), and by a background thread every `interval` and/or as soon as
// the shard's tables together applied `every_versions` = N updates since
// the last checkpoint began: each checkpoint arms the store's UpdateTrigger
// at its start, and the apply path's Add that crosses it wakes the thread
// (a relaxed atomic add per group of changes otherwise; the 200 ms poll
// stays for retries and step hooks). As checkpoints are written one at a
// time, the next begins once N updates passed since this one began or when
// this one is written, whichever is later. The bound: a kill loses at most
// max(N, W) + W updates (plus those applied while the thread wakes up),
// W being the most updates applied while one checkpoint is written; N + W
// while each write takes less time than N updates. Any checkpoint written
// (timer, TakeNow, step cut) starts the count again; a failed one does not.
// Failures are logged with their errno, counted, and leave the previous
// checkpoint as it was; training goes on.
//
// Thread-safe: TakeNow may be called while the background thread runs (one
// checkpoint is written at a time).
#ifndef TAUPS_SERVER_SHARD_CHECKPOINTER_H_
#define TAUPS_SERVER_SHARD_CHECKPOINTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "server/checkpoint_fs.h"
#include "server/checkpoint_store.h"
#include "server/parameter_store.h"

namespace taups {

struct ShardCheckpointerOptions {
  std::string dir;    // the shard's own directory
  uint32_t keep = 3;  // complete checkpoints kept
  absl::Duration interval = absl::ZeroDuration();  // 0: no timer
  uint64_t every_versions = 0;                     // 0: no version trigger
  uint32_t full_every = 1;   // 1: every checkpoint full; K: 1 full, K-1 deltas
  uint64_t every_steps = 0;  // 0: no step cut
  // Restore only a checkpoint of this sync step (every shard given the
  // same step restores one model); unset: the newest.
  std::optional<uint64_t> restore_step;
  // Tests: the background copy of a step cut sleeps this long after each
  // block, so pushes can be seen going on while it copies.
  absl::Duration cut_block_delay = absl::ZeroDuration();
  // Benchmarks' reference: a step cut's whole copy is taken on the apply
  // path, under the partition's lock (how cuts were copied before).
  bool copy_cut_on_apply_path = false;
  absl::Status Validate() const;
};

// What a restore brought back, for the start-up log and the metrics.
struct RestoreReport {
  std::string path;
  uint64_t sequence = 0;
  uint64_t incarnation = 0;  // of the shard that wrote it
  absl::Time created;
  std::vector<PartitionSummary> tables;
  std::vector<std::string> broken;  // checkpoints found bad on the way
  std::vector<uint64_t> chain;      // sequences folded, the full one first
};

// Counters for metrics and the stats line.
struct CheckpointerStats {
  uint64_t taken = 0;
  uint64_t failed = 0;
  absl::Time last_success = absl::InfinitePast();
  absl::Duration last_duration;
  // Longest time one partition's apply path was held to cut it (its copy
  // runs afterwards, block by block).
  absl::Duration longest_pause;
  // Step cuts whose copy the apply path had to finish (the copier was a
  // cut behind), and the largest table copy held (bytes of storage).
  uint64_t cuts_finished_on_apply_path = 0;
  uint64_t largest_cut_bytes = 0;
  uint64_t last_bytes = 0;
  uint64_t incremental = 0;      // of `taken`, deltas
  uint64_t step_cuts = 0;        // of `taken`, at a step boundary
  uint64_t last_step_cut = 0;    // its step
  uint64_t tables_whole_in_delta = 0;  // sparse tables a delta wrote whole
  std::string last_error;
  uint64_t last_sequence = 0;                // of the last one written
  std::optional<uint64_t> restored_sequence;  // the one the shard started from
};

// What one checkpoint taken on demand holds (psctl checkpoint).
struct CheckpointTaken {
  CheckpointWriteInfo written;
  struct Table {
    std::string name;
    uint64_t version = 0;
    uint64_t open_step = 0;
  };
  std::vector<Table> tables;
  std::optional<uint64_t> sync_step;  // every sync table cut at this step
  bool incremental = false;
};

class ShardCheckpointer {
 public:
  // `store` and `fs` must outlive the checkpointer; `incarnation` is the
  // running shard's (written into every header until a RestoreInPlace
  // names the one the shard takes then).
  static absl::StatusOr<std::unique_ptr<ShardCheckpointer>> Open(
      ParameterStore* store, CheckpointFs* fs,
      const ShardCheckpointerOptions& options, uint64_t incarnation);
  ~ShardCheckpointer();  // stops the background thread

  // Loads the newest valid checkpoint into `store` (which must hold no
  // tables): creates each table from its config and restores its partition.
  // NOT_FOUND when the directory holds none (the caller decides whether an
  // empty start is allowed); FAILED_PRECONDITION when it belongs to another
  // shard layout.
  absl::StatusOr<RestoreReport> Restore();

  absl::StatusOr<CheckpointWriteInfo> TakeNow() ABSL_LOCKS_EXCLUDED(write_mu_);
  // TakeNow, saying what the checkpoint holds; it is durable on return.
  absl::StatusOr<CheckpointTaken> TakeNowReporting() ABSL_LOCKS_EXCLUDED(write_mu_);
  void StartBackground();

  // Rolling a running shard back to a step cut (checkpoint_rollback.cc).
  // StepCheckpoints: sequence -> sync step of each complete checkpoint
  // that records one, from the manifests alone (one pruned meanwhile is
  // left out); the answer is kept until this checkpointer writes (and so
  // prunes), restores or rolls back, so a status poll reads no manifest
  // twice (a checkpoint removed by hand meanwhile is still listed until
  // then; LoadStep then reports it missing). LoadStep: the newest checkpoint of `step`, every file read
  // and checked (a delta folded with its chain), nothing renamed; NOT_FOUND
  // when none records that step. RestoreInPlace runs `restore` (which puts
  // a loaded checkpoint into the tables and answers the incarnation the
  // shard runs as from then on) with no checkpoint being taken; when it
  // succeeds the next checkpoint is a full one recording that incarnation,
  // and the step copies taken before it are dropped.
  absl::StatusOr<std::map<uint64_t, uint64_t>> StepCheckpoints()
      ABSL_LOCKS_EXCLUDED(step_index_mu_);
  absl::StatusOr<LoadedCheckpoint> LoadStep(uint64_t step) ABSL_LOCKS_EXCLUDED(write_mu_);
  // StepFileBytes: the bytes of the files LoadStep(step) would read now (the
  // newest checkpoint of `step` and the ones its chain follows), from their
  // manifests alone, so a rollback can charge its memory before loading;
  // NOT_FOUND as LoadStep.
  absl::StatusOr<uint64_t> StepFileBytes(uint64_t step) ABSL_LOCKS_EXCLUDED(write_mu_);
  absl::Status RestoreInPlace(absl::FunctionRef<absl::StatusOr<uint64_t>()> restore)
      ABSL_LOCKS_EXCLUDED(write_mu_);
  CheckpointerStats stats() const ABSL_LOCKS_EXCLUDED(stats_mu_);
  // taups_checkpoints_total, taups_checkpoint_failures_total,
  // taups_checkpoint_last_success_timestamp_seconds (0: none yet),
  // taups_checkpoint_duration_seconds, taups_checkpoint_bytes (the last
  // one), taups_checkpoint_longest_pause_seconds (longest table cut),
  // taups_checkpoints_incremental_total, taups_checkpoint_step_cuts_total,
  // taups_checkpoint_last_step_cut.
  void WriteMetrics(MetricsWriter& out) const ABSL_LOCKS_EXCLUDED(stats_mu_);

 private:
  ShardCheckpointer(ParameterStore* store, std::unique_ptr<CheckpointStore> files,
                    const ShardCheckpointerOptions& options, uint64_t incarnation);
  // The last checkpoint written: what the next delta follows.
  struct ChainLink {
    CheckpointBase base;
    uint32_t deltas = 0;  // since the full one
  };
  // A sparse table's change tracking: the cut its last written checkpoint
  // holds it at, and which partition that was.
  struct TableTrack {
    std::weak_ptr<Partition> partition;
    uint32_t since = 0;
  };
  // Copies taken on the apply path when a step closed, by step then table.
  using StepCopies = std::map<uint64_t, std::map<std::string, PartitionCheckpoint>>;

  // Drops StepCheckpoints' kept answer: the directory changed.
  void ForgetStepIndex() ABSL_LOCKS_EXCLUDED(step_index_mu_);
  void Loop();
  // TakeNow's body; `cut`: the step and the copies of its sync tables.
  // `report`, when not null, is filled once the checkpoint is written.
  absl::StatusOr<CheckpointWriteInfo> Take(
      std::optional<uint64_t> step,
      std::map<std::string, PartitionCheckpoint> cut,
      CheckpointTaken* report = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Hooks the sync/semi-sync tables not hooked yet; writes every step all
  // of them have a copy of, oldest first.
  void HookNewTables();
  void WriteCompleteStep();
  // A step cut being copied.
  struct CutInCopy {
    uint64_t step = 0;
    std::weak_ptr<Partition> partition;  // whose table `cut` copies
    PendingCut cut;
  };
  // `self` is `partition`'s own pointer (a table dropped and created again
  // under its name is another partition).
  void OnStepClosed(const std::string& table, uint64_t steps_closed,
                    const Partition& partition, const std::weak_ptr<Partition>& self,
                    absl::FunctionRef<PendingCut()> begin_cut);
  // Copies the pending step cuts and files each in step_copies_ (Loop, and
  // Take before it cuts tables again).
  void CopyStepCuts();
  // Finishes `cut` (copied on this thread) and files it for its step.
  void FileStepCut(const std::string& table, const Partition& partition,
                   CutInCopy& cut) ABSL_LOCKS_EXCLUDED(steps_mu_);

  ParameterStore* const store_;
  const std::unique_ptr<CheckpointStore> files_;
  const ShardCheckpointerOptions options_;
  absl::Mutex write_mu_;  // one checkpoint at a time
  uint64_t incarnation_ ABSL_GUARDED_BY(write_mu_);
  absl::Mutex step_index_mu_;  // taken under write_mu_, never the reverse
  std::optional<std::map<uint64_t, uint64_t>> step_index_
      ABSL_GUARDED_BY(step_index_mu_);
  mutable absl::Mutex stats_mu_;
  CheckpointerStats stats_ ABSL_GUARDED_BY(stats_mu_);
  // store_->updates().total() when the last checkpoint written began.
  uint64_t updates_at_last_ ABSL_GUARDED_BY(write_mu_) = 0;
  std::optional<ChainLink> chain_ ABSL_GUARDED_BY(write_mu_);
  uint32_t cut_ ABSL_GUARDED_BY(write_mu_) = 0;
  std::map<std::string, TableTrack> tracks_ ABSL_GUARDED_BY(write_mu_);
  // Loop waits for a step copied, the version trigger or the destructor.
  bool Woken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(steps_mu_) {
    return step_copied_ || versions_due_ || stopping_;
  }
  // The copier thread: copies step cuts as they come, apart from Loop's
  // writes, so a slow write does not leave the next cut to the apply path.
  void CopierLoop();
  bool CutsToCopy() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(steps_mu_) {
    return !copying_.empty() || stopping_;
  }

  absl::Mutex steps_mu_;  // a leaf: taken under partition locks
  StepCopies step_copies_ ABSL_GUARDED_BY(steps_mu_);
  // Step cuts being copied, one per table at most; whoever takes one out
  // (the copier once it copied every block, or the table's next cut)
  // finishes and files it.
  std::map<std::string, std::shared_ptr<CutInCopy>> copying_
      ABSL_GUARDED_BY(steps_mu_);
  bool step_copied_ ABSL_GUARDED_BY(steps_mu_) = false;
  bool versions_due_ ABSL_GUARDED_BY(steps_mu_) = false;  // UpdateTrigger's wake
  bool stopping_ ABSL_GUARDED_BY(steps_mu_) = false;
  std::map<std::string, std::weak_ptr<Partition>> hooked_;  // Loop only
  std::thread thread_;
  std::thread copier_;  // with every_steps only
};

}  // namespace taups

#endif  // TAUPS_SERVER_SHARD_CHECKPOINTER_H_

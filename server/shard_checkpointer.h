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
// Checkpoints are taken when asked (TakeNow: an admin call, SIGTERM after
// draining), and by a background thread every `interval` and/or when the
// shard's tables together applied `every_versions` updates since the last.
// Failures are logged with their errno, counted, and leave the previous
// checkpoint as it was; training goes on.
//
// Thread-safe: TakeNow may be called while the background thread runs (one
// checkpoint is written at a time).
#ifndef TAUPS_SERVER_SHARD_CHECKPOINTER_H_
#define TAUPS_SERVER_SHARD_CHECKPOINTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
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
};

// Counters for metrics and the stats line.
struct CheckpointerStats {
  uint64_t taken = 0;
  uint64_t failed = 0;
  absl::Time last_success = absl::InfinitePast();
  absl::Duration last_duration;
  absl::Duration longest_pause;  // longest single partition cut
  uint64_t last_bytes = 0;
  std::string last_error;
};

class ShardCheckpointer {
 public:
  // `store` and `fs` must outlive the checkpointer; `incarnation` is the
  // running shard's (written into every header).
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
  void StartBackground();
  CheckpointerStats stats() const ABSL_LOCKS_EXCLUDED(stats_mu_);
  // taups_checkpoints_total, taups_checkpoint_failures_total,
  // taups_checkpoint_last_success_timestamp_seconds (0: none yet),
  // taups_checkpoint_duration_seconds, taups_checkpoint_bytes (the last
  // one), taups_checkpoint_longest_pause_seconds (longest table cut).
  void WriteMetrics(MetricsWriter& out) const ABSL_LOCKS_EXCLUDED(stats_mu_);

 private:
  ShardCheckpointer(ParameterStore* store, std::unique_ptr<CheckpointStore> files,
                    const ShardCheckpointerOptions& options, uint64_t incarnation);
  uint64_t TotalVersions() const;
  void Loop();

  ParameterStore* const store_;
  const std::unique_ptr<CheckpointStore> files_;
  const ShardCheckpointerOptions options_;
  const uint64_t incarnation_;
  absl::Mutex write_mu_;  // one checkpoint at a time
  mutable absl::Mutex stats_mu_;
  CheckpointerStats stats_ ABSL_GUARDED_BY(stats_mu_);
  uint64_t versions_at_last_ ABSL_GUARDED_BY(write_mu_) = 0;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_SHARD_CHECKPOINTER_H_

// What one shard's checkpoint holds, and its encoding into block files
// (checkpoint_blocks.h). A checkpoint directory holds:
//
//   part-<i>   (i = 0, 1, ...: one per partition)
//     kConfig  the table's config in force (consistency and staleness as
//              the policy had them at the snapshot) and the dense range
//     kTable   applied count; keys, values, optimizer state, row versions
//     or kDelta (a sparse table in an incremental checkpoint): as kTable
//              for the rows changed since the base, then the keys whose
//              rows went since it
//     kPolicy  version, open step, clocks, arrivals, step buffers
//     kDedup   every remembered answer: status code and message, outcome
//     kEnd
//   MANIFEST   (written last)
//     kShardHeader  sequence, shard index and count, incarnation, creation
//                   time, the sync step cut when there is one
//     kChain        only in an incremental checkpoint: the base's sequence
//                   and manifest digest; per partition, delta or whole and
//                   the removed keys' count
//     kSummary      per partition: table, version, open step, applied, rows
//     kFiles        per file: name, size, digest
//     kEnd
//
// Decoding checks every count against a limit and the bytes left before it
// allocates, every enum against its range, each config with Validate(), and
// that a partition file agrees with the manifest's summary of it; every
// failure is DATA_LOSS naming the file and the offset.
//
// Plain value types and pure functions; thread-compatible.
#ifndef TAUPS_SERVER_CHECKPOINT_FORMAT_H_
#define TAUPS_SERVER_CHECKPOINT_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/shard_map.h"
#include "server/checkpoint_fs.h"
#include "server/partition.h"
#include "taups/table_config.h"

namespace taups {

// The shard a checkpoint belongs to.
struct CheckpointHeader {
  uint64_t sequence = 0;  // N of ckpt-N; the store sets it
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  uint64_t incarnation = 0;  // of the shard that wrote it
  absl::Time created = absl::UnixEpoch();
  // Set when every sync and semi-sync table was cut at this step boundary.
  std::optional<uint64_t> sync_step;
  bool operator==(const CheckpointHeader&) const = default;
};

// One partition: enough to rebuild the table (config, range) and to
// Partition::Restore it. A delta (sparse tables only) holds in
// snapshot.table just the rows changed since the base checkpoint, and in
// `removed` the keys whose rows went since; the rest of the snapshot
// (policy, dedup, applied) is whole.
struct PartitionCheckpoint {
  TableConfig config;  // in force: consistency/staleness as in the snapshot
  Range range;         // dense: the part's elements; sparse: empty
  PartitionSnapshot snapshot;
  bool delta = false;
  std::vector<uint64_t> removed;  // delta only
};

// The checkpoint an incremental one follows.
struct CheckpointBase {
  uint64_t sequence = 0;
  uint32_t manifest_digest = 0;
  bool operator==(const CheckpointBase&) const = default;
};

struct ShardCheckpoint {
  CheckpointHeader header;
  std::optional<CheckpointBase> base;  // set: incremental
  std::vector<PartitionCheckpoint> partitions;
};

// A partition as the manifest summarises it.
struct PartitionSummary {
  std::string file;
  std::string table;
  uint64_t version = 0;
  uint64_t open_step = 0;
  uint64_t applied = 0;
  uint64_t rows = 0;    // sparse: keys; dense: 0
  uint64_t values = 0;  // floats of parameters
  bool delta = false;
  uint64_t removed = 0;
  bool operator==(const PartitionSummary&) const = default;
};

struct ManifestFile {
  std::string name;
  uint64_t size = 0;
  uint32_t digest = 0;
  bool operator==(const ManifestFile&) const = default;
};

struct CheckpointManifest {
  CheckpointHeader header;
  std::optional<CheckpointBase> base;
  std::vector<PartitionSummary> partitions;
  std::vector<ManifestFile> files;
};

// Limits a decoder holds a file to (beyond the bytes the file has).
struct CheckpointLimits {
  static constexpr uint64_t kMaxPartitions = 1 << 16;
  static constexpr uint64_t kMaxWorkers = 1 << 20;      // clocks, buffers
  static constexpr uint64_t kMaxIncarnations = 1 << 20;  // dedup
  static constexpr uint64_t kMaxAnswers = 1 << 20;       // per incarnation
  static constexpr uint64_t kMaxElements = uint64_t{1} << 36;
  static constexpr size_t kMaxMessageBytes = 64 * 1024;
  static constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;
};

inline constexpr char kManifestName[] = "MANIFEST";
// "part-00007"
std::string PartitionFileName(size_t index);

// A partition as it is now: its snapshot and the config in force with it.
PartitionCheckpoint CapturePartition(const Partition& partition);
// The same from a snapshot taken by the caller (Partition::SnapshotWith, a
// step-closed hook).
PartitionCheckpoint CheckpointOf(const Partition& partition, PartitionSnapshot snapshot);
PartitionSummary SummaryOf(const PartitionCheckpoint& partition, size_t index);

// Writes a partition file / the manifest to `file` (not synced or closed).
// Returns the file's size and digest (the name is left empty).
absl::StatusOr<ManifestFile> WritePartitionFile(
    CheckpointWritableFile* file, const PartitionCheckpoint& partition);
absl::StatusOr<ManifestFile> WriteManifestFile(CheckpointWritableFile* file,
                                               const CheckpointManifest& manifest);

// Reads and checks a file of `size` bytes; its digest is returned through
// `digest` for the caller to compare with the manifest (for the manifest:
// with the next checkpoint's base, when `digest` is not null).
absl::StatusOr<PartitionCheckpoint> ReadPartitionFile(
    CheckpointReadableFile* file, const std::string& name, uint64_t size,
    uint32_t* digest);
absl::StatusOr<CheckpointManifest> ReadManifestFile(CheckpointReadableFile* file,
                                                    const std::string& name,
                                                    uint64_t size,
                                                    uint32_t* digest = nullptr);

}  // namespace taups

#endif  // TAUPS_SERVER_CHECKPOINT_FORMAT_H_

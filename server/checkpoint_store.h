// CheckpointStore: one shard's checkpoints in a directory of its own.
//
//   <dir>/ckpt-<seq>/          complete checkpoints (seq: 20 digits)
//   <dir>/ckpt-<seq>.broken/   ones the loader found corrupt or partial
//   <dir>/tmp-<seq>/           one being written (or left by a crash)
//
// Write puts every file in tmp-<seq>/ (each fsynced), the MANIFEST last
// (fsynced), fsyncs tmp-<seq>/, renames it to ckpt-<seq>/ and fsyncs <dir>;
// then it deletes all but the newest `keep` checkpoints. A checkpoint is
// thus either absent or complete under its final name. A write that fails
// removes what it made and leaves every earlier checkpoint as it was.
//
// LoadNewest takes the newest ckpt-<seq> whose manifest and every file
// check out (checkpoint_format.h); one that does not is renamed
// ckpt-<seq>.broken and the next older one is tried. Broken ones are kept
// for inspection and never deleted by the store.
//
// Incremental checkpoints: one whose manifest names a base (ShardCheckpoint
// ::base) is loaded with its chain, the full checkpoint it starts from and
// every delta after it in order, each checked whole (manifest, files, and
// the base's manifest digest as the delta recorded it), then folded
// (checkpoint_delta.h). When a link is damaged or missing, that link and
// every newer checkpoint built on it are renamed *.broken and the newest
// checkpoint still whole is loaded: a bad delta costs the deltas after it,
// a bad full checkpoint its whole chain, never a restore of mixed state.
// Pruning keeps the newest `keep` checkpoints and every base they need.
//
// One process owns the directory. Thread-compatible: callers serialise
// Write and LoadNewest (the shard runs one checkpoint at a time).
#ifndef TAUPS_SERVER_CHECKPOINT_STORE_H_
#define TAUPS_SERVER_CHECKPOINT_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/checkpoint_format.h"
#include "server/checkpoint_fs.h"

namespace taups {

struct CheckpointStoreOptions {
  std::string dir;  // created (one level) if absent
  // Complete checkpoints kept after a successful write, >= 1.
  uint32_t keep = 3;

  // INVALID_ARGUMENT naming the bad field.
  absl::Status Validate() const;
};

// What a successful Write did.
struct CheckpointWriteInfo {
  uint64_t sequence = 0;
  std::string path;  // <dir>/ckpt-<seq>
  uint64_t bytes = 0;
  absl::Duration took;
  uint32_t manifest_digest = 0;  // what a delta on it records as its base
  std::vector<uint64_t> deleted;  // sequences pruned after it
  absl::Status prune_error;       // a failure to prune (the write stands)
};

struct LoadedCheckpoint {
  std::string path;
  CheckpointManifest manifest;  // header and per-partition summary
  std::vector<PartitionCheckpoint> partitions;  // manifest order
  std::vector<std::string> broken;  // renamed *.broken on the way, newest first
  uint64_t bytes = 0;
  // Sequences read, the full checkpoint first (just `sequence` when full);
  // `partitions` are then the chain folded, never deltas.
  std::vector<uint64_t> chain;
};

class CheckpointStore {
 public:
  // Creates the directory when absent and removes tmp-* left by a crash.
  // `fs` must outlive the store.
  static absl::StatusOr<std::unique_ptr<CheckpointStore>> Open(
      CheckpointFs* fs, const CheckpointStoreOptions& options);

  // Writes `checkpoint` as the next sequence (its header.sequence is set to
  // it). An incremental one's base must be a complete checkpoint here
  // (FAILED_PRECONDITION otherwise: write a full one). Errors are those of the filesystem (RESOURCE_EXHAUSTED for ENOSPC,
  // PERMISSION_DENIED for EACCES, ...; ErrnoOf gives the errno), after
  // removing the temporary directory.
  absl::StatusOr<CheckpointWriteInfo> Write(const ShardCheckpoint& checkpoint);

  // The newest valid checkpoint; NOT_FOUND when there is none (after
  // renaming the invalid ones). A filesystem error other than a missing
  // file or EIO (a permission, too many open files) is returned as it is,
  // without trying older checkpoints: falling back would silently lose the
  // updates in the newer one.
  // With `step`, only checkpoints whose manifest records that sync step
  // are candidates (the others are skipped, not renamed): for restoring
  // every shard at one common step.
  absl::StatusOr<LoadedCheckpoint> LoadNewest(
      std::optional<uint64_t> step = std::nullopt);

  // Sequences of the complete (not broken) checkpoints, ascending.
  absl::StatusOr<std::vector<uint64_t>> List();

  // Reads and checks one checkpoint directory without renaming anything;
  // a delta's partitions are returned as they are, not folded.
  absl::StatusOr<LoadedCheckpoint> Load(uint64_t sequence);
  // Load, with the chain of an incremental checkpoint folded. On failure
  // *damaged is the sequence of the link at fault.
  absl::StatusOr<LoadedCheckpoint> LoadChain(uint64_t sequence, uint64_t* damaged);

  const std::string& dir() const { return options_.dir; }
  CheckpointFs* fs() const { return fs_; }
  std::string PathOf(uint64_t sequence) const;

 private:
  CheckpointStore(CheckpointFs* fs, CheckpointStoreOptions options);
  absl::StatusOr<uint64_t> NextSequence();
  absl::Status WriteInto(const std::string& tmp, const ShardCheckpoint& checkpoint,
                         const CheckpointHeader& header, uint64_t* bytes,
                         uint32_t* manifest_digest);
  // The manifest of complete checkpoint `sequence`, and its digest.
  absl::StatusOr<CheckpointManifest> ReadManifest(uint64_t sequence, uint32_t* digest);
  absl::Status Prune(std::vector<uint64_t>* deleted);
  absl::Status MarkBroken(uint64_t sequence, std::string* renamed_to);

  CheckpointFs* const fs_;
  const CheckpointStoreOptions options_;
};

// Names of the store's directory entries: "ckpt-<20 digits>" and its
// ".broken" and "tmp-" forms. Parse* are false for any other name.
std::string CheckpointDirName(uint64_t sequence);
bool ParseCheckpointDirName(const std::string& name, uint64_t* sequence);
bool ParseBrokenDirName(const std::string& name, uint64_t* sequence);
bool ParseTempDirName(const std::string& name, uint64_t* sequence);

}  // namespace taups

#endif  // TAUPS_SERVER_CHECKPOINT_STORE_H_

// FaultInjectingFs: a CheckpointFs over another one that fails chosen calls,
// for tests of what a checkpoint leaves behind when the disk fills, a
// permission is missing, or the process dies halfway.
//
// Calls that change the disk (CreateDir, NewFile, Append, Sync, Close,
// Rename, SyncDir, RemoveFile, RemoveDir) are counted from 1 as "steps";
// reads are not. Two kinds of fault:
//   - Fail: a chosen call returns an errno (ENOSPC, EACCES, EIO, ...) and
//     does nothing; the caller goes on as after a real failure.
//   - CrashAt(step): the process "dies" there: that call does nothing (an
//     Append may first write some of its bytes, to tear a block) and every
//     later call fails with ABORTED without touching the disk, so neither
//     cleanup nor anything after runs. What was written before stays, as a
//     kill -9 would leave it. (Data written but not yet fsynced is kept
//     too: the page cache of a killed process survives; a power cut is not
//     modelled.)
//
// Thread-safe.
#ifndef TAUPS_SERVER_CHECKPOINT_FAULT_FS_H_
#define TAUPS_SERVER_CHECKPOINT_FAULT_FS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/checkpoint_fs.h"

namespace taups {

class FaultInjectingFs final : public CheckpointFs {
 public:
  enum class Op {
    kCreateDir, kNewFile, kAppend, kSync, kClose, kRename, kSyncDir,
    kRemoveFile, kRemoveDir, kOpenFile, kRead, kFileSize, kListDir, kIsDir,
  };
  static const char* OpName(Op op);

  // A rule: calls of `op` (any when unset) on a path containing `path_part`
  // fail with `error_number`; the `nth` such call only (1-based), or every
  // one from then on when `sticky`.
  struct Fault {
    std::optional<Op> op;
    std::string path_part;
    uint64_t nth = 1;
    bool sticky = false;
    int error_number = EIO;
  };

  struct Step {
    Op op;
    std::string path;
    size_t bytes = 0;  // Append: its size
  };

  // `base` must outlive this.
  explicit FaultInjectingFs(CheckpointFs* base);

  void AddFault(const Fault& fault) ABSL_LOCKS_EXCLUDED(mu_);
  // The step-th disk-changing call fails with `error_number`.
  void FailStep(uint64_t step, int error_number) ABSL_LOCKS_EXCLUDED(mu_);
  // Dies at the step-th disk-changing call; an Append there first writes
  // min(partial_bytes, its size) bytes.
  void CrashAt(uint64_t step, size_t partial_bytes = 0) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets faults, crash and counts.
  void Reset() ABSL_LOCKS_EXCLUDED(mu_);

  bool crashed() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t steps() const ABSL_LOCKS_EXCLUDED(mu_);
  // Every disk-changing call so far, in order.
  std::vector<Step> log() const ABSL_LOCKS_EXCLUDED(mu_);

  absl::Status CreateDir(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<CheckpointWritableFile>> NewFile(
      const std::string& path) override;
  absl::StatusOr<std::unique_ptr<CheckpointReadableFile>> OpenFile(
      const std::string& path) override;
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status SyncDir(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::Status RemoveDir(const std::string& path) override;
  bool IsDir(const std::string& path) override;

  // What a call may do: go ahead, fail, or (Append only) write a prefix and
  // die. Used by the file wrappers.
  struct Verdict {
    absl::Status status;           // not OK: return it, do nothing else
    std::optional<size_t> partial;  // Append at the crash: bytes to write first
  };
  Verdict Check(Op op, const std::string& path, size_t append_bytes = 0)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  static bool Counted(Op op);

  CheckpointFs* const base_;
  mutable absl::Mutex mu_;
  struct Rule {
    Fault fault;
    uint64_t seen = 0;
  };
  std::vector<Rule> rules_ ABSL_GUARDED_BY(mu_);
  uint64_t steps_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t crash_step_ ABSL_GUARDED_BY(mu_) = 0;  // 0 = none
  size_t crash_partial_ ABSL_GUARDED_BY(mu_) = 0;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Step> log_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_CHECKPOINT_FAULT_FS_H_

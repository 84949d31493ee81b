// CheckpointFs: the few filesystem calls a checkpoint needs, behind an
// interface so tests can fail any one of them (checkpoint_fault_fs.h) and
// the store never calls POSIX directly (leveldb's Env plays this part).
//
// Paths are plain strings joined with '/'. Every failure is an absl::Status
// whose code follows errno (absl::ErrnoToStatusCode: ENOSPC is
// RESOURCE_EXHAUSTED, EACCES PERMISSION_DENIED, ENOENT NOT_FOUND, ...), whose
// message names the call, the path and the errno, and which carries the
// errno as a payload (ErrnoOf).
//
// Implementations are thread-safe; one file object is used by one thread.
#ifndef TAUPS_SERVER_CHECKPOINT_FS_H_
#define TAUPS_SERVER_CHECKPOINT_FS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace taups {

// A file being written from its start. Close (or the destructor) releases it;
// only Sync makes what was appended durable.
class CheckpointWritableFile {
 public:
  virtual ~CheckpointWritableFile() = default;
  virtual absl::Status Append(absl::string_view data) = 0;
  // fsync(2): the file's bytes and size are on the disk when this returns.
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
};

// A file read from its start.
class CheckpointReadableFile {
 public:
  virtual ~CheckpointReadableFile() = default;
  // Reads up to `n` bytes into `buffer`; fewer only at the end of the file
  // (0 there).
  virtual absl::StatusOr<size_t> Read(char* buffer, size_t n) = 0;
};

class CheckpointFs {
 public:
  virtual ~CheckpointFs() = default;
  // mkdir(path, 0755); ALREADY_EXISTS if it is there.
  virtual absl::Status CreateDir(const std::string& path) = 0;
  // A new file (O_CREAT | O_EXCL): ALREADY_EXISTS if one is there.
  virtual absl::StatusOr<std::unique_ptr<CheckpointWritableFile>> NewFile(
      const std::string& path) = 0;
  virtual absl::StatusOr<std::unique_ptr<CheckpointReadableFile>> OpenFile(
      const std::string& path) = 0;
  virtual absl::StatusOr<uint64_t> FileSize(const std::string& path) = 0;
  // rename(2): atomic; replaces `to` only if it is a file or an empty dir.
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  // fsync(2) of a directory: the names created, renamed or removed in it
  // are on the disk when this returns.
  virtual absl::Status SyncDir(const std::string& path) = 0;
  // The names in a directory (no "." or ".."), sorted.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) = 0;
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // rmdir(2): the directory must be empty.
  virtual absl::Status RemoveDir(const std::string& path) = 0;
  // Whether `path` is a directory (false when it is absent or unreadable).
  virtual bool IsDir(const std::string& path) = 0;
};

// The real filesystem. Thread-safe; the object has no state.
CheckpointFs* PosixCheckpointFs();

// `call` on `path` failed with `error_number`: the status described above.
absl::Status FsError(absl::string_view call, absl::string_view path,
                     int error_number);
// The errno a CheckpointFs status carries; 0 when it carries none.
int ErrnoOf(const absl::Status& status);

std::string JoinPath(absl::string_view dir, absl::string_view name);

// Removes `dir`'s files and then `dir` (a checkpoint directory is flat: a
// subdirectory in it is removed only if empty). The first error is returned,
// after trying the rest.
absl::Status RemoveTree(CheckpointFs& fs, const std::string& dir);

}  // namespace taups

#endif  // TAUPS_SERVER_CHECKPOINT_FS_H_

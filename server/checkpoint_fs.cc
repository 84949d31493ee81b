#include "server/checkpoint_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace taups {
namespace {

constexpr absl::string_view kErrnoPayload = "type.taups/errno";

class PosixWritableFile final : public CheckpointWritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(absl::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return FsError("write", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    if (::fsync(fd_) != 0) return FsError("fsync", path_, errno);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return FsError("close", path_, errno);
    return absl::OkStatus();
  }

 private:
  const std::string path_;
  int fd_;
};

class PosixReadableFile final : public CheckpointReadableFile {
 public:
  PosixReadableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixReadableFile() override { ::close(fd_); }

  absl::StatusOr<size_t> Read(char* buffer, size_t n) override {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::read(fd_, buffer + done, n - done);
      if (got < 0) {
        if (errno == EINTR) continue;
        return FsError("read", path_, errno);
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  const std::string path_;
  const int fd_;
};

class PosixFs final : public CheckpointFs {
 public:
  absl::Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0) return FsError("mkdir", path, errno);
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<CheckpointWritableFile>> NewFile(
      const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return FsError("open", path, errno);
    return std::make_unique<PosixWritableFile>(path, fd);
  }
  absl::StatusOr<std::unique_ptr<CheckpointReadableFile>> OpenFile(
      const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return FsError("open", path, errno);
    return std::make_unique<PosixReadableFile>(path, fd);
  }
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return FsError("stat", path, errno);
    if (!S_ISREG(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
    }
    return static_cast<uint64_t>(st.st_size);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return FsError("rename", absl::StrCat(from, " -> ", to), errno);
    }
    return absl::OkStatus();
  }
  absl::Status SyncDir(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return FsError("open", path, errno);
    absl::Status status;
    if (::fsync(fd) != 0) status = FsError("fsync", path, errno);
    ::close(fd);
    return status;
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return FsError("opendir", path, errno);
    std::vector<std::string> names;
    errno = 0;
    while (const struct dirent* entry = ::readdir(dir)) {
      const absl::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
      errno = 0;
    }
    const int error = errno;
    ::closedir(dir);
    if (error != 0) return FsError("readdir", path, error);
    std::sort(names.begin(), names.end());
    return names;
  }
  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return FsError("unlink", path, errno);
    return absl::OkStatus();
  }
  absl::Status RemoveDir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return FsError("rmdir", path, errno);
    return absl::OkStatus();
  }
  bool IsDir(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
};

}  // namespace

CheckpointFs* PosixCheckpointFs() {
  static PosixFs fs;
  return &fs;
}

absl::Status FsError(absl::string_view call, absl::string_view path,
                     int error_number) {
  absl::Status status(absl::ErrnoToStatusCode(error_number),
                      absl::StrCat(call, " ", path, ": ", std::strerror(error_number),
                                   " (errno ", error_number, ")"));
  status.SetPayload(kErrnoPayload, absl::Cord(absl::StrCat(error_number)));
  return status;
}

int ErrnoOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrnoPayload);
  int error_number = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &error_number)) {
    return 0;
  }
  return error_number;
}

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

absl::Status RemoveTree(CheckpointFs& fs, const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> names = fs.ListDir(dir);
  if (!names.ok()) return names.status();
  absl::Status first;
  for (const std::string& name : *names) {
    const std::string path = JoinPath(dir, name);
    absl::Status removed = fs.IsDir(path) ? fs.RemoveDir(path) : fs.RemoveFile(path);
    if (first.ok()) first = removed;
  }
  absl::Status removed = fs.RemoveDir(dir);
  if (first.ok()) first = removed;
  return first;
}

}  // namespace taups

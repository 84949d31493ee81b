#include "server/checkpoint_fault_fs.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace taups {
namespace {

absl::Status Crashed(FaultInjectingFs::Op op, const std::string& path) {
  return absl::AbortedError(absl::StrCat("crashed (injected) before ",
                                         FaultInjectingFs::OpName(op), " ", path));
}

class FaultWritableFile final : public CheckpointWritableFile {
 public:
  FaultWritableFile(FaultInjectingFs* fs, std::string path,
                    std::unique_ptr<CheckpointWritableFile> base)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}

  absl::Status Append(absl::string_view data) override {
    FaultInjectingFs::Verdict verdict =
        fs_->Check(FaultInjectingFs::Op::kAppend, path_, data.size());
    if (verdict.partial.has_value()) {
      (void)base_->Append(data.substr(0, *verdict.partial));
    }
    if (!verdict.status.ok()) return verdict.status;
    return base_->Append(data);
  }
  absl::Status Sync() override {
    FaultInjectingFs::Verdict verdict = fs_->Check(FaultInjectingFs::Op::kSync, path_);
    if (!verdict.status.ok()) return verdict.status;
    return base_->Sync();
  }
  absl::Status Close() override {
    FaultInjectingFs::Verdict verdict = fs_->Check(FaultInjectingFs::Op::kClose, path_);
    if (!verdict.status.ok()) return verdict.status;
    return base_->Close();
  }

 private:
  FaultInjectingFs* const fs_;
  const std::string path_;
  const std::unique_ptr<CheckpointWritableFile> base_;
};

class FaultReadableFile final : public CheckpointReadableFile {
 public:
  FaultReadableFile(FaultInjectingFs* fs, std::string path,
                    std::unique_ptr<CheckpointReadableFile> base)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}
  absl::StatusOr<size_t> Read(char* buffer, size_t n) override {
    FaultInjectingFs::Verdict verdict = fs_->Check(FaultInjectingFs::Op::kRead, path_);
    if (!verdict.status.ok()) return verdict.status;
    return base_->Read(buffer, n);
  }

 private:
  FaultInjectingFs* const fs_;
  const std::string path_;
  const std::unique_ptr<CheckpointReadableFile> base_;
};

}  // namespace

const char* FaultInjectingFs::OpName(Op op) {
  switch (op) {
    case Op::kCreateDir: return "mkdir";
    case Op::kNewFile: return "create";
    case Op::kAppend: return "write";
    case Op::kSync: return "fsync";
    case Op::kClose: return "close";
    case Op::kRename: return "rename";
    case Op::kSyncDir: return "fsync-dir";
    case Op::kRemoveFile: return "unlink";
    case Op::kRemoveDir: return "rmdir";
    case Op::kOpenFile: return "open";
    case Op::kRead: return "read";
    case Op::kFileSize: return "stat";
    case Op::kListDir: return "readdir";
    case Op::kIsDir: return "isdir";
  }
  return "?";
}

bool FaultInjectingFs::Counted(Op op) {
  switch (op) {
    case Op::kOpenFile:
    case Op::kRead:
    case Op::kFileSize:
    case Op::kListDir:
    case Op::kIsDir:
      return false;
    default:
      return true;
  }
}

FaultInjectingFs::FaultInjectingFs(CheckpointFs* base) : base_(base) {}

void FaultInjectingFs::AddFault(const Fault& fault) {
  absl::MutexLock lock(&mu_);
  rules_.push_back(Rule{fault, 0});
}

void FaultInjectingFs::FailStep(uint64_t step, int error_number) {
  absl::MutexLock lock(&mu_);
  Fault fault;
  fault.nth = step;
  fault.error_number = error_number;
  rules_.push_back(Rule{fault, 0});  // no op, no path: counts steps
}

void FaultInjectingFs::CrashAt(uint64_t step, size_t partial_bytes) {
  absl::MutexLock lock(&mu_);
  crash_step_ = step;
  crash_partial_ = partial_bytes;
}

void FaultInjectingFs::Reset() {
  absl::MutexLock lock(&mu_);
  rules_.clear();
  steps_ = 0;
  crash_step_ = 0;
  crash_partial_ = 0;
  crashed_ = false;
  log_.clear();
}

bool FaultInjectingFs::crashed() const {
  absl::MutexLock lock(&mu_);
  return crashed_;
}

uint64_t FaultInjectingFs::steps() const {
  absl::MutexLock lock(&mu_);
  return steps_;
}

std::vector<FaultInjectingFs::Step> FaultInjectingFs::log() const {
  absl::MutexLock lock(&mu_);
  return log_;
}

FaultInjectingFs::Verdict FaultInjectingFs::Check(Op op, const std::string& path,
                                                  size_t append_bytes) {
  absl::MutexLock lock(&mu_);
  Verdict verdict;
  if (crashed_) {
    verdict.status = Crashed(op, path);
    return verdict;
  }
  const bool counted = Counted(op);
  if (counted) {
    ++steps_;
    log_.push_back(Step{op, path, append_bytes});
    if (crash_step_ != 0 && steps_ == crash_step_) {
      crashed_ = true;
      if (op == Op::kAppend) verdict.partial = std::min(crash_partial_, append_bytes);
      verdict.status = Crashed(op, path);
      return verdict;
    }
  }
  for (Rule& rule : rules_) {
    const Fault& f = rule.fault;
    // A rule with neither op nor path counts disk-changing calls only.
    const bool step_rule = !f.op.has_value() && f.path_part.empty();
    if (step_rule ? !counted : (f.op.has_value() && *f.op != op)) continue;
    if (!absl::StrContains(path, f.path_part)) continue;
    ++rule.seen;
    if (rule.seen == f.nth || (f.sticky && rule.seen > f.nth)) {
      verdict.status = FsError(absl::StrCat(OpName(op), " (injected)"), path,
                               f.error_number);
      return verdict;
    }
  }
  return verdict;
}

absl::Status FaultInjectingFs::CreateDir(const std::string& path) {
  Verdict v = Check(Op::kCreateDir, path);
  if (!v.status.ok()) return v.status;
  return base_->CreateDir(path);
}

absl::StatusOr<std::unique_ptr<CheckpointWritableFile>> FaultInjectingFs::NewFile(
    const std::string& path) {
  Verdict v = Check(Op::kNewFile, path);
  if (!v.status.ok()) return v.status;
  absl::StatusOr<std::unique_ptr<CheckpointWritableFile>> base = base_->NewFile(path);
  if (!base.ok()) return base.status();
  return std::make_unique<FaultWritableFile>(this, path, std::move(*base));
}

absl::StatusOr<std::unique_ptr<CheckpointReadableFile>> FaultInjectingFs::OpenFile(
    const std::string& path) {
  Verdict v = Check(Op::kOpenFile, path);
  if (!v.status.ok()) return v.status;
  absl::StatusOr<std::unique_ptr<CheckpointReadableFile>> base = base_->OpenFile(path);
  if (!base.ok()) return base.status();
  return std::make_unique<FaultReadableFile>(this, path, std::move(*base));
}

absl::StatusOr<uint64_t> FaultInjectingFs::FileSize(const std::string& path) {
  Verdict v = Check(Op::kFileSize, path);
  if (!v.status.ok()) return v.status;
  return base_->FileSize(path);
}

absl::Status FaultInjectingFs::Rename(const std::string& from, const std::string& to) {
  Verdict v = Check(Op::kRename, absl::StrCat(from, " -> ", to));
  if (!v.status.ok()) return v.status;
  return base_->Rename(from, to);
}

absl::Status FaultInjectingFs::SyncDir(const std::string& path) {
  Verdict v = Check(Op::kSyncDir, path);
  if (!v.status.ok()) return v.status;
  return base_->SyncDir(path);
}

absl::StatusOr<std::vector<std::string>> FaultInjectingFs::ListDir(
    const std::string& path) {
  Verdict v = Check(Op::kListDir, path);
  if (!v.status.ok()) return v.status;
  return base_->ListDir(path);
}

absl::Status FaultInjectingFs::RemoveFile(const std::string& path) {
  Verdict v = Check(Op::kRemoveFile, path);
  if (!v.status.ok()) return v.status;
  return base_->RemoveFile(path);
}

absl::Status FaultInjectingFs::RemoveDir(const std::string& path) {
  Verdict v = Check(Op::kRemoveDir, path);
  if (!v.status.ok()) return v.status;
  return base_->RemoveDir(path);
}

bool FaultInjectingFs::IsDir(const std::string& path) {
  if (!Check(Op::kIsDir, path).status.ok()) return false;
  return base_->IsDir(path);
}

}  // namespace taups

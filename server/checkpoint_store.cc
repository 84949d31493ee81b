#include "server/checkpoint_store.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "server/checkpoint_delta.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

constexpr absl::string_view kCkptPrefix = "ckpt-";
constexpr absl::string_view kTempPrefix = "tmp-";
constexpr absl::string_view kBrokenSuffix = ".broken";
constexpr size_t kSequenceDigits = 20;

// "<prefix><20 digits>" followed by the rest, which must be `suffix` or
// start with it when `suffix_prefix_only`.
bool ParseName(absl::string_view name, absl::string_view prefix,
               absl::string_view suffix, bool suffix_prefix_only, uint64_t* sequence) {
  if (!absl::ConsumePrefix(&name, prefix) || name.size() < kSequenceDigits) return false;
  const absl::string_view digits = name.substr(0, kSequenceDigits);
  const absl::string_view rest = name.substr(kSequenceDigits);
  if (!std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit)) return false;
  if (suffix_prefix_only ? !absl::StartsWith(rest, suffix) : rest != suffix) return false;
  return absl::SimpleAtoi(digits, sequence);
}

// `status` with `context` before its message; code and errno payload kept.
absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  absl::Status out(status.code(), absl::StrCat(context, ": ", status.message()));
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

// A checkpoint that failed this way is damaged (rename it and try an older
// one); other failures are the environment's and are returned.
bool IsDamage(const absl::Status& status) {
  const int error_number = ErrnoOf(status);
  if (error_number == EIO || error_number == ENOTDIR || error_number == EISDIR ||
      error_number == ENOENT) {
    return true;
  }
  if (error_number != 0) return false;
  return status.code() == absl::StatusCode::kDataLoss ||
         status.code() == absl::StatusCode::kFailedPrecondition;
}

}  // namespace

std::string CheckpointDirName(uint64_t sequence) {
  return absl::StrFormat("%s%020u", kCkptPrefix, sequence);
}
bool ParseCheckpointDirName(const std::string& name, uint64_t* sequence) {
  return ParseName(name, kCkptPrefix, "", false, sequence);
}
bool ParseBrokenDirName(const std::string& name, uint64_t* sequence) {
  return ParseName(name, kCkptPrefix, kBrokenSuffix, true, sequence);
}
bool ParseTempDirName(const std::string& name, uint64_t* sequence) {
  return ParseName(name, kTempPrefix, "", false, sequence);
}

absl::Status CheckpointStoreOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("checkpoint dir is empty");
  if (keep < 1) return absl::InvalidArgumentError("checkpoint keep must be >= 1");
  return absl::OkStatus();
}

CheckpointStore::CheckpointStore(CheckpointFs* fs, CheckpointStoreOptions options)
    : fs_(fs), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<CheckpointStore>> CheckpointStore::Open(
    CheckpointFs* fs, const CheckpointStoreOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  if (!fs->IsDir(options.dir)) {
    absl::Status made = fs->CreateDir(options.dir);
    if (!made.ok() && made.code() != absl::StatusCode::kAlreadyExists) {
      return Annotate(made, "checkpoint directory");
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(options.dir));
  bool removed = false;
  for (const std::string& name : names) {
    uint64_t sequence = 0;
    if (!ParseTempDirName(name, &sequence)) continue;
    const std::string path = JoinPath(options.dir, name);
    spdlog::warn("checkpoint: removing {} left by an unfinished write", path);
    RETURN_IF_ERROR(Annotate(RemoveTree(*fs, path), "removing an unfinished checkpoint"));
    removed = true;
  }
  if (removed) RETURN_IF_ERROR(fs->SyncDir(options.dir));
  return std::unique_ptr<CheckpointStore>(new CheckpointStore(fs, options));
}

std::string CheckpointStore::PathOf(uint64_t sequence) const {
  return JoinPath(options_.dir, CheckpointDirName(sequence));
}

absl::StatusOr<uint64_t> CheckpointStore::NextSequence() {
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(options_.dir));
  uint64_t newest = 0;
  for (const std::string& name : names) {
    uint64_t sequence = 0;
    if (ParseCheckpointDirName(name, &sequence) || ParseBrokenDirName(name, &sequence) ||
        ParseTempDirName(name, &sequence)) {
      newest = std::max(newest, sequence);
    }
  }
  return newest + 1;
}

absl::StatusOr<std::vector<uint64_t>> CheckpointStore::List() {
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(options_.dir));
  std::vector<uint64_t> sequences;
  for (const std::string& name : names) {
    uint64_t sequence = 0;
    if (ParseCheckpointDirName(name, &sequence)) sequences.push_back(sequence);
  }
  std::sort(sequences.begin(), sequences.end());
  return sequences;
}

absl::Status CheckpointStore::WriteInto(const std::string& tmp,
                                        const ShardCheckpoint& checkpoint,
                                        const CheckpointHeader& header, uint64_t* bytes,
                                        uint32_t* manifest_digest) {
  RETURN_IF_ERROR(fs_->CreateDir(tmp));
  CheckpointManifest manifest;
  manifest.header = header;
  manifest.base = checkpoint.base;
  for (size_t i = 0; i < checkpoint.partitions.size(); ++i) {
    const PartitionCheckpoint& partition = checkpoint.partitions[i];
    const std::string name = PartitionFileName(i);
    ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWritableFile> file,
                     fs_->NewFile(JoinPath(tmp, name)));
    ASSIGN_OR_RETURN(ManifestFile written, WritePartitionFile(file.get(), partition));
    RETURN_IF_ERROR(file->Sync());
    RETURN_IF_ERROR(file->Close());
    written.name = name;
    *bytes += written.size;
    manifest.files.push_back(written);
    manifest.partitions.push_back(SummaryOf(partition, i));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWritableFile> file,
                   fs_->NewFile(JoinPath(tmp, kManifestName)));
  ASSIGN_OR_RETURN(ManifestFile written, WriteManifestFile(file.get(), manifest));
  RETURN_IF_ERROR(file->Sync());
  RETURN_IF_ERROR(file->Close());
  *bytes += written.size;
  *manifest_digest = written.digest;
  // The files' names must be on the disk before the directory takes its
  // final name.
  return fs_->SyncDir(tmp);
}

absl::StatusOr<CheckpointWriteInfo> CheckpointStore::Write(
    const ShardCheckpoint& checkpoint) {
  const absl::Time start = absl::Now();
  absl::StatusOr<uint64_t> next = NextSequence();
  if (!next.ok()) return Annotate(next.status(), "checkpoint not written");
  const uint64_t sequence = *next;
  const std::string tmp =
      JoinPath(options_.dir, absl::StrFormat("%s%020u", kTempPrefix, sequence));
  const std::string final_path = PathOf(sequence);

  CheckpointHeader header = checkpoint.header;
  header.sequence = sequence;
  if (checkpoint.base && !fs_->IsDir(PathOf(checkpoint.base->sequence))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", sequence, " not written: its base ",
        PathOf(checkpoint.base->sequence), " is gone"));
  }
  CheckpointWriteInfo info;
  info.sequence = sequence;
  info.path = final_path;
  absl::Status status =
      WriteInto(tmp, checkpoint, header, &info.bytes, &info.manifest_digest);
  bool renamed = false;
  if (status.ok()) {
    status = fs_->Rename(tmp, final_path);
    renamed = status.ok();
  }
  // The rename is durable only once the parent directory is synced.
  if (status.ok()) status = fs_->SyncDir(options_.dir);
  if (!status.ok()) {
    const std::string made = renamed ? final_path : tmp;
    spdlog::error("checkpoint {} of shard {} failed (errno {}): {}; removing {}",
                  sequence, header.shard_index, ErrnoOf(status), std::string(status.message()), made);
    if (fs_->IsDir(made)) {
      absl::Status removed = RemoveTree(*fs_, made);
      if (removed.ok()) removed = fs_->SyncDir(options_.dir);
      if (!removed.ok()) {
        spdlog::error("checkpoint: could not remove {}: {}", made, std::string(removed.message()));
      }
    }
    return Annotate(status, absl::StrCat("checkpoint ", sequence, " not written"));
  }
  info.prune_error = Prune(&info.deleted);
  if (!info.prune_error.ok()) {
    spdlog::warn("checkpoint: pruning old checkpoints failed (errno {}): {}",
                 ErrnoOf(info.prune_error), std::string(info.prune_error.message()));
  }
  info.took = absl::Now() - start;
  spdlog::info("checkpoint {} of shard {} written: {} partitions, {} bytes in {}",
               sequence, header.shard_index, checkpoint.partitions.size(), info.bytes,
               absl::FormatDuration(info.took));
  return info;
}

absl::StatusOr<CheckpointManifest> CheckpointStore::ReadManifest(uint64_t sequence,
                                                                 uint32_t* digest) {
  const std::string path = JoinPath(PathOf(sequence), kManifestName);
  ASSIGN_OR_RETURN(uint64_t size, fs_->FileSize(path));
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReadableFile> file, fs_->OpenFile(path));
  return ReadManifestFile(file.get(), path, size, digest);
}

absl::Status CheckpointStore::Prune(std::vector<uint64_t>* deleted) {
  ASSIGN_OR_RETURN(std::vector<uint64_t> sequences, List());
  if (sequences.size() <= options_.keep) return absl::OkStatus();
  // The newest `keep`, and the bases their chains need. A manifest that
  // cannot be read keeps everything older than it: pruning never decides
  // on a guess.
  std::vector<uint64_t> needed(sequences.end() - options_.keep, sequences.end());
  for (size_t i = 0; i < needed.size(); ++i) {
    uint32_t digest = 0;
    absl::StatusOr<CheckpointManifest> manifest = ReadManifest(needed[i], &digest);
    if (!manifest.ok()) {
      for (uint64_t s : sequences) {
        if (s < needed[i]) needed.push_back(s);
      }
      break;
    }
    if (manifest->base && std::find(needed.begin(), needed.end(),
                                    manifest->base->sequence) == needed.end()) {
      needed.push_back(manifest->base->sequence);
    }
  }
  for (size_t i = 0; i < sequences.size(); ++i) {
    if (std::find(needed.begin(), needed.end(), sequences[i]) != needed.end()) continue;
    // Out of the loader's sight in one step, then removed: a crash midway
    // leaves a tmp-* that the next Open removes, never a half-deleted ckpt.
    const std::string doomed =
        JoinPath(options_.dir, absl::StrFormat("%s%020u", kTempPrefix, sequences[i]));
    RETURN_IF_ERROR(fs_->Rename(PathOf(sequences[i]), doomed));
    deleted->push_back(sequences[i]);
    RETURN_IF_ERROR(RemoveTree(*fs_, doomed));
  }
  return fs_->SyncDir(options_.dir);
}

absl::StatusOr<LoadedCheckpoint> CheckpointStore::Load(uint64_t sequence) {
  LoadedCheckpoint out;
  out.path = PathOf(sequence);
  const std::string manifest_path = JoinPath(out.path, kManifestName);
  ASSIGN_OR_RETURN(uint64_t manifest_size, fs_->FileSize(manifest_path));
  {
    ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReadableFile> file,
                     fs_->OpenFile(manifest_path));
    ASSIGN_OR_RETURN(out.manifest,
                     ReadManifestFile(file.get(), manifest_path, manifest_size));
  }
  out.bytes = manifest_size;
  if (out.manifest.header.sequence != sequence) {
    return absl::DataLossError(absl::StrCat(manifest_path, " names checkpoint ",
                                            out.manifest.header.sequence));
  }
  for (size_t i = 0; i < out.manifest.files.size(); ++i) {
    const ManifestFile& listed = out.manifest.files[i];
    const std::string path = JoinPath(out.path, listed.name);
    ASSIGN_OR_RETURN(uint64_t size, fs_->FileSize(path));
    if (size != listed.size) {
      return absl::DataLossError(absl::StrCat(path, " has ", size,
                                              " bytes, the manifest says ", listed.size));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReadableFile> file, fs_->OpenFile(path));
    uint32_t digest = 0;
    ASSIGN_OR_RETURN(PartitionCheckpoint partition,
                     ReadPartitionFile(file.get(), path, size, &digest));
    if (digest != listed.digest) {
      return absl::DataLossError(absl::StrFormat(
          "%s: digest %08x, the manifest says %08x", path, digest, listed.digest));
    }
    const PartitionSummary summary = SummaryOf(partition, i);
    if (!(summary == out.manifest.partitions[i])) {
      return absl::DataLossError(
          absl::StrCat(path, " does not match the manifest's summary of it"));
    }
    out.bytes += size;
    out.partitions.push_back(std::move(partition));
  }
  return out;
}

absl::StatusOr<LoadedCheckpoint> CheckpointStore::LoadChain(uint64_t sequence,
                                                            uint64_t* damaged) {
  // Newest first, down to the full checkpoint.
  std::vector<LoadedCheckpoint> links;
  uint64_t at = sequence;
  std::optional<CheckpointBase> expected;  // what the newer link recorded
  while (true) {
    *damaged = at;
    if (!fs_->IsDir(PathOf(at))) {
      return absl::DataLossError(absl::StrCat(
          links.empty() ? PathOf(at) : links.back().path, " needs ", PathOf(at),
          ", which is gone"));
    }
    ASSIGN_OR_RETURN(LoadedCheckpoint link, Load(at));
    if (expected) {
      uint32_t digest = 0;
      RETURN_IF_ERROR(ReadManifest(at, &digest).status());
      const CheckpointHeader& newer = links.back().manifest.header;
      const CheckpointHeader& here = link.manifest.header;
      if (digest != expected->manifest_digest || here.shard_index != newer.shard_index ||
          here.shard_count != newer.shard_count) {
        return absl::DataLossError(absl::StrFormat(
            "%s is not the base %s was written on (manifest digest %08x, recorded %08x)",
            link.path, links.back().path, digest, expected->manifest_digest));
      }
    }
    expected = link.manifest.base;
    links.push_back(std::move(link));
    if (!expected) break;
    at = expected->sequence;
  }
  // Fold from the full checkpoint up.
  std::vector<PartitionCheckpoint> folded = std::move(links.back().partitions);
  uint64_t bytes = links.back().bytes;
  std::vector<uint64_t> chain = {links.back().manifest.header.sequence};
  for (size_t i = links.size() - 1; i-- > 0;) {
    *damaged = links[i].manifest.header.sequence;
    ASSIGN_OR_RETURN(folded, FoldDelta(std::move(folded), std::move(links[i].partitions),
                                       links[i].path));
    bytes += links[i].bytes;
    chain.push_back(links[i].manifest.header.sequence);
  }
  LoadedCheckpoint out = std::move(links.front());
  out.partitions = std::move(folded);
  out.bytes = bytes;
  out.chain = std::move(chain);
  return out;
}

absl::Status CheckpointStore::MarkBroken(uint64_t sequence, std::string* renamed_to) {
  const std::string from = PathOf(sequence);
  std::string to = absl::StrCat(from, kBrokenSuffix);
  for (int attempt = 2; fs_->IsDir(to) && attempt < 100; ++attempt) {
    to = absl::StrCat(from, kBrokenSuffix, "-", attempt);
  }
  RETURN_IF_ERROR(fs_->Rename(from, to));
  RETURN_IF_ERROR(fs_->SyncDir(options_.dir));
  *renamed_to = to;
  return absl::OkStatus();
}

absl::StatusOr<LoadedCheckpoint> CheckpointStore::LoadNewest(
    std::optional<uint64_t> step) {
  ASSIGN_OR_RETURN(std::vector<uint64_t> sequences, List());
  std::vector<std::string> broken;
  for (auto it = sequences.rbegin(); it != sequences.rend(); ++it) {
    if (!fs_->IsDir(PathOf(*it))) continue;  // renamed with a newer one's link
    if (step) {
      uint32_t digest = 0;
      absl::StatusOr<CheckpointManifest> manifest = ReadManifest(*it, &digest);
      // An unreadable manifest is left to LoadChain, which names the damage.
      if (manifest.ok() && manifest->header.sync_step != step) continue;
    }
    uint64_t damaged = *it;
    absl::StatusOr<LoadedCheckpoint> loaded = LoadChain(*it, &damaged);
    if (loaded.ok()) {
      loaded->broken = std::move(broken);
      spdlog::info("checkpoint: loaded {} ({} partitions, {} bytes{})", loaded->path,
                   loaded->partitions.size(), loaded->bytes,
                   loaded->broken.empty()
                       ? ""
                       : absl::StrCat("; ", loaded->broken.size(), " newer ones broken"));
      return loaded;
    }
    if (!IsDamage(loaded.status())) {
      return Annotate(loaded.status(),
                      absl::StrCat("checkpoint ", PathOf(*it), " unreadable"));
    }
    // The damaged link, then the checkpoint that needed it.
    for (uint64_t doomed : {damaged, *it}) {
      if (!fs_->IsDir(PathOf(doomed))) continue;
      std::string renamed_to;
      RETURN_IF_ERROR(Annotate(MarkBroken(doomed, &renamed_to),
                               absl::StrCat("marking ", PathOf(doomed), " broken")));
      spdlog::error("checkpoint: {} is {} ({}); renamed {}, trying an older one",
                    PathOf(doomed), doomed == damaged ? "damaged" : "built on a damaged one",
                    std::string(loaded.status().message()), renamed_to);
      broken.push_back(renamed_to);
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "no valid checkpoint", step ? absl::StrCat(" of sync step ", *step) : "", " in ",
      options_.dir,
      broken.empty() ? "" : absl::StrCat(" (", broken.size(), " broken: ",
                                         absl::StrJoin(broken, ", "), ")")));
}

}  // namespace taups

// What process tests read of a shard's checkpoint directory.
//
// StepsIn: the sync steps of its complete checkpoints, read from the
// manifests alone, since opening a CheckpointStore would remove a checkpoint
// a live shard is writing (tmp-*). Unreadable manifests are skipped.
//
// ValuesOfStep: the values of the one table part in the newest checkpoint
// of a sync step (its chain folded). It opens a CheckpointStore, so point
// it at a copy or at a shard that is not writing one.
#ifndef TAUPS_TESTS_CHECKPOINT_STEPS_H_
#define TAUPS_TESTS_CHECKPOINT_STEPS_H_

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/checkpoint_format.h"
#include "server/checkpoint_fs.h"
#include "server/checkpoint_store.h"

namespace taups {

inline std::set<uint64_t> StepsIn(const std::string& dir) {
  std::set<uint64_t> steps;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    uint64_t sequence = 0;
    if (!ParseCheckpointDirName(entry.path().filename().string(), &sequence)) continue;
    const std::string path = entry.path().string() + "/MANIFEST";
    CheckpointFs* fs = PosixCheckpointFs();
    auto size = fs->FileSize(path);
    if (!size.ok()) continue;
    auto file = fs->OpenFile(path);
    if (!file.ok()) continue;
    auto manifest = ReadManifestFile(file->get(), path, *size);
    if (manifest.ok() && manifest->header.sync_step) steps.insert(*manifest->header.sync_step);
  }
  return steps;
}

// NOT_FOUND when no checkpoint of `step` is there; FAILED_PRECONDITION when
// it holds other than one part; the store's error when one will not load.
inline absl::StatusOr<std::vector<float>> ValuesOfStep(const std::string& dir,
                                                       uint64_t step) {
  CheckpointStoreOptions options;
  options.dir = dir;
  options.keep = 1000;
  auto store = CheckpointStore::Open(PosixCheckpointFs(), options);
  if (!store.ok()) return store.status();
  auto sequences = (*store)->List();
  if (!sequences.ok()) return sequences.status();
  for (auto it = sequences->rbegin(); it != sequences->rend(); ++it) {
    uint64_t damaged = 0;
    auto loaded = (*store)->LoadChain(*it, &damaged);
    if (!loaded.ok()) return loaded.status();
    if (loaded->manifest.header.sync_step != step) continue;
    if (loaded->partitions.size() != 1) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, ": the checkpoint of step ", step, " holds ",
                       loaded->partitions.size(), " parts, not 1"));
    }
    return std::move(loaded->partitions[0].snapshot.table.values);
  }
  return absl::NotFoundError(absl::StrCat("no checkpoint of step ", step, " in ", dir));
}

}  // namespace taups

#endif  // TAUPS_TESTS_CHECKPOINT_STEPS_H_

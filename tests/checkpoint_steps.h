// The sync steps of the complete checkpoints in a shard's checkpoint
// directory, for process tests that kill shards: read from the manifests
// alone, since opening a CheckpointStore would remove a checkpoint a live
// shard is writing (tmp-*). Unreadable manifests are skipped.
#ifndef TAUPS_TESTS_CHECKPOINT_STEPS_H_
#define TAUPS_TESTS_CHECKPOINT_STEPS_H_

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

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

}  // namespace taups

#endif  // TAUPS_TESTS_CHECKPOINT_STEPS_H_

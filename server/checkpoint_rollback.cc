#include "server/checkpoint_rollback.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/checkpoint_format.h"
#include "server/shard_checkpointer.h"

namespace taups {
namespace {

// The manifest of complete checkpoint `sequence` (NOT_FOUND once pruned).
absl::StatusOr<CheckpointManifest> ManifestOf(CheckpointStore& files,
                                              uint64_t sequence) {
  const std::string path = files.PathOf(sequence) + "/" + kManifestName;
  ASSIGN_OR_RETURN(uint64_t size, files.fs()->FileSize(path));
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReadableFile> file,
                   files.fs()->OpenFile(path));
  return ReadManifestFile(file.get(), path, size);
}

// The table's configuration with the settings a restore brings back
// (consistency, staleness) taken from `from`: what must match.
TableConfig ShapeOf(TableConfig config, const TableConfig& from) {
  config.consistency = from.consistency;
  config.staleness = from.staleness;
  return config;
}

}  // namespace

void ShardCheckpointer::ForgetStepIndex() {
  absl::MutexLock lock(&step_index_mu_);
  step_index_.reset();
}

absl::StatusOr<std::map<uint64_t, uint64_t>> ShardCheckpointer::StepCheckpoints() {
  absl::MutexLock lock(&step_index_mu_);
  if (step_index_.has_value()) return *step_index_;
  ASSIGN_OR_RETURN(std::vector<uint64_t> sequences, files_->List());
  std::map<uint64_t, uint64_t> steps;
  for (uint64_t sequence : sequences) {
    absl::StatusOr<CheckpointManifest> manifest = ManifestOf(*files_, sequence);
    if (absl::IsNotFound(manifest.status())) continue;  // pruned meanwhile
    if (!manifest.ok()) return manifest.status();
    if (manifest->header.sync_step) steps[sequence] = *manifest->header.sync_step;
  }
  step_index_ = steps;
  return steps;
}

absl::StatusOr<LoadedCheckpoint> ShardCheckpointer::LoadStep(uint64_t step) {
  absl::MutexLock lock(&write_mu_);
  ASSIGN_OR_RETURN(std::vector<uint64_t> sequences, files_->List());
  for (auto it = sequences.rbegin(); it != sequences.rend(); ++it) {
    ASSIGN_OR_RETURN(CheckpointManifest manifest, ManifestOf(*files_, *it));
    if (manifest.header.sync_step != step) continue;
    uint64_t damaged = 0;
    absl::StatusOr<LoadedCheckpoint> loaded = files_->LoadChain(*it, &damaged);
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrCat("checkpoint ", files_->PathOf(*it), " of step ",
                                       step, " does not load (link ", damaged,
                                       "): ", loaded.status().message()));
    }
    return loaded;
  }
  return absl::NotFoundError(absl::StrCat("shard ", store_->shard_index(),
                                          " holds no complete checkpoint of step ",
                                          step, " in ", files_->dir()));
}

absl::StatusOr<uint64_t> ShardCheckpointer::StepFileBytes(uint64_t step) {
  absl::MutexLock lock(&write_mu_);
  ASSIGN_OR_RETURN(std::vector<uint64_t> sequences, files_->List());
  for (auto it = sequences.rbegin(); it != sequences.rend(); ++it) {
    ASSIGN_OR_RETURN(CheckpointManifest manifest, ManifestOf(*files_, *it));
    if (manifest.header.sync_step != step) continue;
    uint64_t bytes = 0;
    uint64_t sequence = *it;
    // The chain back to its full checkpoint (bounded: a cycle is damage).
    for (size_t links = 0;; ++links) {
      ASSIGN_OR_RETURN(const uint64_t manifest_bytes,
                       files_->fs()->FileSize(files_->PathOf(sequence) + "/" +
                                              kManifestName));
      bytes += manifest_bytes;
      for (const ManifestFile& file : manifest.files) bytes += file.size;
      if (!manifest.base.has_value()) return bytes;
      if (links > sequences.size()) {
        return absl::DataLossError(absl::StrCat(
            "checkpoint ", files_->PathOf(*it), " of step ", step,
            " follows a chain that does not end in a full checkpoint"));
      }
      sequence = manifest.base->sequence;
      ASSIGN_OR_RETURN(manifest, ManifestOf(*files_, sequence));
    }
  }
  return absl::NotFoundError(absl::StrCat("shard ", store_->shard_index(),
                                          " holds no complete checkpoint of step ",
                                          step, " in ", files_->dir()));
}

absl::Status ShardCheckpointer::RestoreInPlace(
    absl::FunctionRef<absl::StatusOr<uint64_t>()> restore) {
  absl::MutexLock lock(&write_mu_);
  ASSIGN_OR_RETURN(incarnation_, restore());
  ForgetStepIndex();
  // The tables no longer hold what the last checkpoint's deltas follow.
  chain_.reset();
  tracks_.clear();
  updates_at_last_ = store_->updates().total();
  absl::MutexLock steps(&steps_mu_);
  step_copies_.clear();
  return absl::OkStatus();
}

absl::Status CheckFitsTables(const ParameterStore& store,
                             const LoadedCheckpoint& loaded) {
  const CheckpointHeader& header = loaded.manifest.header;
  if (header.shard_index != store.shard_index() ||
      header.shard_count != store.num_shards()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", loaded.path, " belongs to shard ", header.shard_index, " of ",
        header.shard_count, "; this is shard ", store.shard_index(), " of ",
        store.num_shards()));
  }
  std::map<std::string, TableInfo> held;
  for (const TableInfo& info : store.ListTables()) held[info.config.name] = info;
  for (const PartitionCheckpoint& part : loaded.partitions) {
    auto it = held.find(part.config.name);
    if (it == held.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", loaded.path, " holds table '", part.config.name,
          "', which this shard no longer has; create it first (nothing rolled back)"));
    }
    if (!(ShapeOf(it->second.config, part.config) == part.config)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table '", part.config.name, "' is configured otherwise than in checkpoint ",
          loaded.path, " (kind, size, optimizer or initializer); nothing rolled back"));
    }
    if (it->second.range.begin != part.range.begin ||
        it->second.range.end != part.range.end) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table '", part.config.name, "' of checkpoint ", loaded.path,
          " holds elements [", part.range.begin, ", ", part.range.end,
          ") but this shard owns [", it->second.range.begin, ", ",
          it->second.range.end, ") now; nothing rolled back"));
    }
    held.erase(it);
  }
  if (!held.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", held.begin()->first, "' was created after checkpoint ", loaded.path,
        " of step ", header.sync_step.value_or(0),
        "; drop it first to roll back to that step (nothing rolled back)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TableRolledBack>> RestoreTablesInPlace(
    ParameterStore& store, const LoadedCheckpoint& loaded) {
  RETURN_IF_ERROR(CheckFitsTables(store, loaded));
  std::vector<std::shared_ptr<Partition>> parts;
  for (const PartitionCheckpoint& part : loaded.partitions) {
    ASSIGN_OR_RETURN(std::shared_ptr<Partition> partition,
                     store.PartitionOf(part.config.name));
    parts.push_back(std::move(partition));
  }
  std::vector<TableRolledBack> rolled;
  std::vector<PartitionSnapshot> before;  // of the parts restored so far
  for (size_t i = 0; i < parts.size(); ++i) {
    TableRolledBack table;
    table.name = loaded.partitions[i].config.name;
    table.version_before = parts[i]->version();
    table.open_step_before = parts[i]->open_step();
    before.push_back(parts[i]->Snapshot());
    absl::Status restored = parts[i]->Restore(loaded.partitions[i].snapshot);
    if (!restored.ok()) {
      // Put back what was restored already: each snapshot was exported by
      // its own part, so it fits.
      for (size_t j = 0; j < i; ++j) parts[j]->Restore(before[j]).IgnoreError();
      return absl::Status(restored.code(),
                          absl::StrCat("table '", table.name, "' refused checkpoint ",
                                       loaded.path, " (nothing rolled back): ",
                                       restored.message()));
    }
    table.version = parts[i]->version();
    table.open_step = parts[i]->open_step();
    rolled.push_back(std::move(table));
  }
  return rolled;
}

}  // namespace taups

#include "server/restore_losses.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace taups {

void RestoreLosses::Restored(const std::string& table, uint64_t version,
                             uint64_t open_step) {
  absl::MutexLock lock(&mu_);
  tables_[table] = Table{version, open_step, version, {}};
}

void RestoreLosses::ExpectWorkers(absl::Span<const uint32_t> workers) {
  absl::MutexLock lock(&mu_);
  expected_.insert(workers.begin(), workers.end());
}

bool RestoreLosses::Report(uint32_t worker, absl::string_view table,
                           uint64_t version) {
  absl::MutexLock lock(&mu_);
  if (!expected_.contains(worker)) return false;
  auto it = tables_.find(table);
  if (it == tables_.end()) return false;
  Table& t = it->second;
  if (!t.reported.insert(worker).second) return false;
  if (version <= t.seen) return true;
  t.seen = version;
  spdlog::warn(
      "shard {} restored table '{}' at version {}{}; workers saw version {} "
      "before the restart: {} updates after the checkpoint are lost",
      shard_index_, it->first, t.restored_version,
      t.open_step > 0 ? fmt::format(" (step {})", t.open_step) : std::string(),
      version, version - t.restored_version);
  return true;
}

std::vector<std::pair<std::string, uint64_t>> RestoreLosses::Snapshot() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  {
    absl::MutexLock lock(&mu_);
    out.reserve(tables_.size());
    for (const auto& [name, t] : tables_) {
      out.emplace_back(name, t.seen - t.restored_version);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace taups

#include "worker/src/lost_updates.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace taups {

LostUpdates::LostUpdates(size_t shards) : shards_(shards) {}

void LostUpdates::Saw(uint32_t shard, const std::string& table,
                      uint64_t version) {
  if (version == 0) return;
  absl::MutexLock lock(&mu_);
  PerShard& s = shards_[shard];
  auto before = s.before.find(table);
  if (before != s.before.end()) {
    const uint64_t lost = before->second > version ? before->second - version : 0;
    s.lost += lost;
    if (lost > 0) {
      spdlog::warn(
          "shard {} restarted: table '{}' went back from version {} to {}; {} "
          "updates this worker saw are lost",
          shard, table, before->second, version, lost);
    } else {  // other workers' pushes reached the restored shard first
      spdlog::info(
          "shard {} restarted: table '{}' is at version {}, at or past version "
          "{} this worker last saw; no update it saw is lost",
          shard, table, version, before->second);
    }
    s.before.erase(before);
  }
  uint64_t& last = s.last[table];
  last = std::max(last, version);
}

void LostUpdates::Restarted(uint32_t shard) {
  absl::MutexLock lock(&mu_);
  PerShard& s = shards_[shard];
  // A table still awaiting its first answer from an earlier incarnation
  // keeps the version it had then.
  for (const auto& [table, version] : s.last) {
    s.before.try_emplace(table, version);
    uint64_t& told = s.report[table];
    told = std::max(told, version);
  }
  s.last.clear();
}

std::vector<std::pair<std::string, uint64_t>> LostUpdates::TakeReport(
    uint32_t shard) {
  absl::MutexLock lock(&mu_);
  PerShard& s = shards_[shard];
  std::vector<std::pair<std::string, uint64_t>> out(s.report.begin(),
                                                    s.report.end());
  s.report.clear();
  return out;
}

std::vector<uint64_t> LostUpdates::ByShard() const {
  absl::MutexLock lock(&mu_);
  std::vector<uint64_t> out;
  out.reserve(shards_.size());
  for (const PerShard& s : shards_) out.push_back(s.lost);
  return out;
}

}  // namespace taups

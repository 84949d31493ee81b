#include "worker/src/shard_parts.h"

#include <algorithm>

namespace taups {
namespace {

// Lanes of a large one-shard call: as many as the pool has threads, a power
// of two (LaneOf), 1 (no lanes) on a single core.
uint32_t LaneCount(int threads) {
  uint32_t lanes = 1;
  while (lanes * 2 <= static_cast<uint32_t>(std::max(threads, 1))) lanes *= 2;
  return lanes;
}

}  // namespace

TaskPool& ShardPartsPool() {
  static TaskPool* const pool = new TaskPool(TaskPool::AutoThreads());
  return *pool;
}

ShardParts::ShardParts(absl::Span<const uint64_t> keys, const OwnershipMap& map,
                       bool may_build_at_once)
    : keys_(keys) {
  const uint32_t shards = map.num_shards();
  const uint32_t lanes = LaneCount(ShardPartsPool().threads());
  if (may_build_at_once && keys.size() >= kAtOnceMinKeys && lanes > 1) {
    mode_ = shards == 1 ? Mode::kLanes : Mode::kShardsAtOnce;
  }
  switch (mode_) {
    case Mode::kInOrder:
      groups_ = GroupKeysByShard(keys, map);
      for (const ShardKeys& g : groups_) calls_ += g.keys.empty() ? 0 : 1;
      break;
    case Mode::kShardsAtOnce:
      positions_ = PositionsByShard(keys, map);
      groups_.resize(positions_.size());
      for (const auto& p : positions_) calls_ += p.empty() ? 0 : 1;
      break;
    case Mode::kLanes:
      groups_.resize(1);
      lane_count_ = lanes;
      calls_ = 1;
      break;
  }
}

void ShardParts::JoinLanes() {
  lane_groups_.resize(lane_count_);
  TaskPool& pool = ShardPartsPool();
  pool.Run(lane_count_, [&](size_t lane) {
    lane_groups_[lane] = GroupLane(keys_, static_cast<uint32_t>(lane),
                                   lane_count_);
  });
  ShardKeys& joined = groups_[0];
  std::vector<size_t> position_offsets(lane_count_);
  lanes_.resize(lane_count_);
  size_t keys = 0, positions = 0;
  for (uint32_t lane = 0; lane < lane_count_; ++lane) {
    lanes_[lane] = Lane{&lane_groups_[lane], static_cast<uint32_t>(keys)};
    position_offsets[lane] = positions;
    keys += lane_groups_[lane].keys.size();
    positions += lane_groups_[lane].positions.size();
  }
  joined.keys.resize(keys);
  joined.positions.resize(positions);
  pool.Run(lane_count_, [&](size_t lane) {
    PlaceLane(lane_groups_[lane], lanes_[lane].key_offset,
              position_offsets[lane], &joined);
  });
}

}  // namespace taups

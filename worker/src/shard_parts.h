// ShardParts: one sparse call's keys grouped by shard, the way the call's
// size asks for.
//
// - Small calls (under kAtOnceMinKeys keys), and calls the caller wants
//   built in order: GroupKeysByShard on the caller's thread, then each
//   shard's part is built one after another.
// - Large calls to several shards: the keys are split by owner in one pass
//   (PositionsByShard), then one task of ShardPartsPool per shard groups
//   that shard's keys (GroupShardKeys) and builds its part, the shards'
//   parts at the same time.
// - Large calls to one shard: the keys are split into lanes by a hash
//   (shard_router.h), each lane grouped by a task of its own, and the lanes
//   joined into the shard's group; the part is then built on the caller's
//   thread, which may share its own work among the lanes (lanes()).
//
// Thread-compatible; Build runs its callback as it describes.
#ifndef TAUPS_WORKER_SRC_SHARD_PARTS_H_
#define TAUPS_WORKER_SRC_SHARD_PARTS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/ownership_map.h"
#include "common/task_pool.h"
#include "worker/src/shard_router.h"

namespace taups {

// Calls of fewer keys build one shard after another on the caller's
// thread: waking a helper costs more than grouping a few thousand keys.
inline constexpr size_t kAtOnceMinKeys = size_t{1} << 13;

// The pool the process's clients build large sparse calls on: min(cores,
// 4) threads, the caller one of them, made on first use. One per process,
// not per client, so that a process with hundreds of clients (the load
// generator) does not start threads for each; it is not the shards' pool
// (TaskPool::Shared), so building a call never waits on a shard's apply.
TaskPool& ShardPartsPool();

class ShardParts {
 public:
  // One lane of a large one-shard call: its own group, whose keys are
  // joined group's keys [key_offset, key_offset + group->keys.size()).
  struct Lane {
    const ShardKeys* group = nullptr;
    uint32_t key_offset = 0;
  };

  // `keys` must outlive this object. `may_build_at_once`: false keeps the
  // call in order on the caller's thread whatever its size.
  ShardParts(absl::Span<const uint64_t> keys, const OwnershipMap& map,
             bool may_build_at_once);

  // Shards the call has keys for: one request each.
  size_t calls() const { return calls_; }
  // Indexed by shard. Built at once, a shard's group is empty until Build
  // has grouped it (just before build(s) runs); otherwise final already.
  const std::vector<ShardKeys>& groups() const { return groups_; }
  // A large one-shard call's lanes, valid during Build's build(0); empty
  // for every other call.
  absl::Span<const Lane> lanes() const { return lanes_; }

  // Runs build(s) once for each shard with keys, with groups()[s] final:
  // for several shards built at once, on tasks of ShardPartsPool, for
  // different shards at the same time (task s writes only groups()[s]),
  // so build must not use the pool itself; otherwise in shard order on
  // this thread, where build may use the pool (with lanes(), say).
  template <typename BuildFn>
  void Build(BuildFn build) {
    switch (mode_) {
      case Mode::kInOrder:
        for (uint32_t s = 0; s < groups_.size(); ++s) {
          if (!groups_[s].keys.empty()) build(s);
        }
        return;
      case Mode::kShardsAtOnce:
        ShardPartsPool().Run(groups_.size(), [&](size_t task) {
          const uint32_t s = static_cast<uint32_t>(task);
          if (positions_[s].empty()) return;
          groups_[s] = GroupShardKeys(keys_, positions_[s]);
          build(s);
        });
        return;
      case Mode::kLanes:
        JoinLanes();
        build(0);
        return;
    }
  }

 private:
  enum class Mode { kInOrder, kShardsAtOnce, kLanes };
  // Groups every lane at once and joins them into groups_[0].
  void JoinLanes();

  absl::Span<const uint64_t> keys_;
  Mode mode_ = Mode::kInOrder;
  std::vector<ShardKeys> groups_;
  std::vector<std::vector<uint32_t>> positions_;  // kShardsAtOnce
  std::vector<ShardKeys> lane_groups_;            // kLanes
  std::vector<Lane> lanes_;                       // kLanes, once joined
  uint32_t lane_count_ = 0;                       // kLanes
  size_t calls_ = 0;
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_SHARD_PARTS_H_

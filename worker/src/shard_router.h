// ShardRouter: how one client request is cut into per-shard pieces.
//
// Who owns what comes from an OwnershipMap (common/ownership_map.h), the same
// map the shards check requests against. Dense: each shard's range of the
// table is cut into slices of at most `slice_elements`, so that large tensors
// travel as several concurrent messages. Sparse: keys are grouped by owning
// shard, duplicates collapsed (for pulls: fetched once and copied to every
// position; for pushes: gradients summed).
//
// Pure functions of their inputs; thread-compatible.
#ifndef TAUPS_WORKER_SRC_SHARD_ROUTER_H_
#define TAUPS_WORKER_SRC_SHARD_ROUTER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "common/ownership_map.h"

namespace taups {

struct DenseSlice {
  uint32_t shard = 0;
  uint64_t offset = 0;  // global element offset
  uint64_t count = 0;
  uint32_t slices_in_shard = 1;  // slices the shard's part was cut into
  uint32_t index_in_shard = 0;   // this slice's place among them
};

// Slices covering [0, size), each inside one shard's range of `map`, in
// shard order.
std::vector<DenseSlice> PlanDenseSlices(const OwnershipMap& map, uint64_t size,
                                        uint64_t slice_elements);
// The same for the epoch-1 layout of `num_shards` shards.
inline std::vector<DenseSlice> PlanDenseSlices(uint64_t size,
                                               uint32_t num_shards,
                                               uint64_t slice_elements) {
  return PlanDenseSlices(OwnershipMap::Initial(num_shards), size,
                         slice_elements);
}

// Keys of one request for one shard.
struct ShardKeys {
  std::vector<uint64_t> keys;  // unique, in first-seen order
  // For pulls: for each key position i of the request routed here, the
  // index into `keys` it reads (positions[j] = {request index, key index}).
  std::vector<std::pair<uint32_t, uint32_t>> positions;
};

// Groups `keys` by their owner in `map` (result indexed by shard), in one
// pass that finds each key's owner (none for one shard) and its duplicates,
// by an open-addressing table that each thread reuses from call to call (no
// hash map built per call; calls of over 2^20 keys use one of their own).
std::vector<ShardKeys> GroupKeysByShard(absl::Span<const uint64_t> keys,
                                        const OwnershipMap& map);

// The same grouping in two steps, so that each shard's keys can be grouped
// apart, on a thread of its own: PositionsByShard gives, for each shard,
// the request positions of the keys it owns, ascending; GroupShardKeys of
// one shard's positions gives exactly the ShardKeys GroupKeysByShard gives
// that shard. GroupShardKeys uses the calling thread's key table (as
// GroupKeysByShard does), so calls on different threads do not interact.
std::vector<std::vector<uint32_t>> PositionsByShard(
    absl::Span<const uint64_t> keys, const OwnershipMap& map);
// PositionsByShard of the keys at positions [begin, end) only (the
// positions are still the request's): a large call splits its keys into
// such ranges on several threads, and a shard's positions are then the
// ranges' lists one after another.
std::vector<std::vector<uint32_t>> PositionsByShard(
    absl::Span<const uint64_t> keys, const OwnershipMap& map, size_t begin,
    size_t end);
ShardKeys GroupShardKeys(absl::Span<const uint64_t> keys,
                         absl::Span<const uint32_t> positions);

// Per-shard gradients for a push: gradients[i * dim ...] of request key i is
// added into the row of its unique key. Returns one float vector per shard,
// keys[s].keys.size() * dim long.
std::vector<std::vector<float>> MergeSparseGradients(
    const std::vector<ShardKeys>& groups, absl::Span<const float> gradients,
    uint32_t dim);

// The same for one shard, written into `out` (group.keys.size() * dim
// floats, whose old contents are ignored): each unique key's row is
// ((0.0f + g1) + g2) + ... over its gradients in request order, bit for bit
// what adding them into zeros gives. `group` must be as GroupKeysByShard made it (a
// key's first position is where its index first appears, in index order).
void MergeShardGradients(const ShardKeys& group,
                         absl::Span<const float> gradients, uint32_t dim,
                         absl::Span<float> out);

// The keys of one large call to one shard grouped on one thread while a
// second merges the rows of a push as positions come out of the grouping:
// Group() gives group() exactly what GroupKeysByShard gives a one-shard
// map, publishing every few thousand positions how far it got; Merge(bytes)
// follows it and leaves in *bytes the unique keys' rows, exactly as
// MergeShardGradients writes them (the same sums in the same order, bit for
// bit), without zero-filling a buffer of every key's rows first.
//
// Thread-safety: call Group() and Merge() once each, at the same time on two
// threads, or on one thread with Group() first (Merge waits, yielding, for
// positions Group has not published: on one thread after an unfinished
// Group it would wait forever). group() only after both returned. `keys` and
// `gradients` (keys.size() * dim floats) must outlive the object.
class OneShardGroupMerge {
 public:
  OneShardGroupMerge(absl::Span<const uint64_t> keys,
                     absl::Span<const float> gradients, uint32_t dim);
  OneShardGroupMerge(const OneShardGroupMerge&) = delete;
  OneShardGroupMerge& operator=(const OneShardGroupMerge&) = delete;

  void Group();
  void Merge(std::string* bytes);
  ShardKeys& group() { return group_; }

 private:
  const absl::Span<const uint64_t> keys_;
  const absl::Span<const float> gradients_;
  const uint32_t dim_;
  ShardKeys group_;
  // group_.positions.data(), fixed by reserving a position for every key.
  const std::pair<uint32_t, uint32_t>* positions_ = nullptr;
  std::atomic<size_t> grouped_{0};  // positions final so far (release)
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_SHARD_ROUTER_H_

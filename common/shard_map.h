// Where parameters live: dense tables are cut into contiguous ranges, one per
// shard; sparse keys are hashed to shards.
//
// Pure functions; thread-compatible.
#ifndef TAUPS_COMMON_SHARD_MAP_H_
#define TAUPS_COMMON_SHARD_MAP_H_

#include <cstdint>

namespace taups {

// Half-open element range [begin, end).
struct Range {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
  bool Contains(uint64_t offset, uint64_t count) const {
    return offset >= begin && count <= end - begin && offset - begin <= end - begin - count;
  }
};

// Shard `shard` of `num_shards` holds this part of a dense table of `size`
// elements. The first size % num_shards shards get one extra element, so the
// ranges tile [0, size) and differ in length by at most one.
Range DenseShardRange(uint64_t size, uint32_t num_shards, uint32_t shard);

// A well-mixed 64-bit hash (splitmix64 finalizer); stable across builds.
// Inline: a large sparse call hashes every key (its owner, its stripe).
inline uint64_t MixKey(uint64_t key) {
  key += 0x9e3779b97f4a7c15ULL;
  key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
  key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
  return key ^ (key >> 31);
}

// The shard that owns sparse key `key`.
inline uint32_t SparseShardOf(uint64_t key, uint32_t num_shards) {
  return static_cast<uint32_t>(MixKey(key) % num_shards);
}

}  // namespace taups

#endif  // TAUPS_COMMON_SHARD_MAP_H_

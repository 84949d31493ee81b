#include "common/shard_map.h"

namespace taups {

Range DenseShardRange(uint64_t size, uint32_t num_shards, uint32_t shard) {
  const uint64_t base = size / num_shards;
  const uint64_t extra = size % num_shards;
  const uint64_t begin = shard * base + (shard < extra ? shard : extra);
  const uint64_t length = base + (shard < extra ? 1 : 0);
  return Range{begin, begin + length};
}

uint64_t MixKey(uint64_t key) {
  key += 0x9e3779b97f4a7c15ULL;
  key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
  key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
  return key ^ (key >> 31);
}

}  // namespace taups

#include "common/shard_map.h"

namespace taups {

Range DenseShardRange(uint64_t size, uint32_t num_shards, uint32_t shard) {
  const uint64_t base = size / num_shards;
  const uint64_t extra = size % num_shards;
  const uint64_t begin = shard * base + (shard < extra ? shard : extra);
  const uint64_t length = base + (shard < extra ? 1 : 0);
  return Range{begin, begin + length};
}

}  // namespace taups

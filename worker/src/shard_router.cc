#include "worker/src/shard_router.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace taups {

std::vector<DenseSlice> PlanDenseSlices(const OwnershipMap& map, uint64_t size,
                                        uint64_t slice_elements) {
  std::vector<DenseSlice> slices;
  slice_elements = std::max<uint64_t>(slice_elements, 1);
  for (uint32_t shard = 0; shard < map.num_shards(); ++shard) {
    const Range range = map.DenseRangeOf(size, shard);
    if (range.size() == 0) continue;
    const uint64_t pieces = (range.size() + slice_elements - 1) / slice_elements;
    // Even pieces: no tiny tail slice.
    const uint64_t base = range.size() / pieces;
    const uint64_t extra = range.size() % pieces;
    uint64_t offset = range.begin;
    for (uint64_t p = 0; p < pieces; ++p) {
      const uint64_t count = base + (p < extra ? 1 : 0);
      slices.push_back(DenseSlice{shard, offset, count,
                                  static_cast<uint32_t>(pieces),
                                  static_cast<uint32_t>(p)});
      offset += count;
    }
  }
  return slices;
}

std::vector<ShardKeys> GroupKeysByShard(absl::Span<const uint64_t> keys,
                                        const OwnershipMap& map) {
  std::vector<ShardKeys> groups(map.num_shards());
  std::vector<absl::flat_hash_map<uint64_t, uint32_t>> index(map.num_shards());
  for (uint32_t i = 0; i < keys.size(); ++i) {
    const uint32_t shard = map.SparseOwnerOf(keys[i]);
    ShardKeys& group = groups[shard];
    auto [it, inserted] = index[shard].try_emplace(
        keys[i], static_cast<uint32_t>(group.keys.size()));
    if (inserted) group.keys.push_back(keys[i]);
    group.positions.emplace_back(i, it->second);
  }
  return groups;
}

std::vector<std::vector<float>> MergeSparseGradients(
    const std::vector<ShardKeys>& groups, absl::Span<const float> gradients,
    uint32_t dim) {
  std::vector<std::vector<float>> merged(groups.size());
  for (size_t s = 0; s < groups.size(); ++s) {
    merged[s].assign(groups[s].keys.size() * dim, 0.0f);
    for (const auto& [request_index, key_index] : groups[s].positions) {
      const float* src = gradients.data() + size_t{request_index} * dim;
      float* dst = merged[s].data() + size_t{key_index} * dim;
      for (uint32_t j = 0; j < dim; ++j) dst[j] += src[j];
    }
  }
  return merged;
}

}  // namespace taups

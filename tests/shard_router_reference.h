// The client's key grouping and gradient merge as they were before the
// fast path (commit 6655831): a flat_hash_map per shard built on every
// call, and sums added into zero-filled rows. The reference that
// shard_router_equivalence_test and bench/key_grouping_bench compare
// worker/src/shard_router against. Pure functions; thread-compatible.
#ifndef TAUPS_TESTS_SHARD_ROUTER_REFERENCE_H_
#define TAUPS_TESTS_SHARD_ROUTER_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "common/ownership_map.h"
#include "worker/src/shard_router.h"

namespace taups::reference {

inline std::vector<ShardKeys> GroupKeysByShard(absl::Span<const uint64_t> keys,
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

inline std::vector<std::vector<float>> MergeSparseGradients(
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

}  // namespace taups::reference

#endif  // TAUPS_TESTS_SHARD_ROUTER_REFERENCE_H_

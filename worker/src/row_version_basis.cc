#include "worker/src/row_version_basis.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "taups/table_config.h"

namespace taups {

std::vector<std::vector<uint64_t>> RowBasesByShard(
    const std::vector<ShardKeys>& groups, absl::Span<const uint64_t> push_keys,
    absl::Span<const uint64_t> pulled_keys,
    absl::Span<const uint64_t> pulled_versions) {
  std::vector<std::vector<uint64_t>> bases(groups.size());
  for (size_t s = 0; s < groups.size(); ++s) {
    bases[s].assign(groups[s].keys.size(), kUnknownRowVersion);
  }
  if (push_keys == pulled_keys) {
    // The usual step: push exactly the keys pulled, in the same order.
    for (size_t s = 0; s < groups.size(); ++s) {
      for (const auto& [request_index, key_index] : groups[s].positions) {
        bases[s][key_index] = pulled_versions[request_index];
      }
    }
    return bases;
  }
  absl::flat_hash_map<uint64_t, uint64_t> version_of;
  version_of.reserve(pulled_keys.size());
  for (size_t i = 0; i < pulled_keys.size(); ++i) {
    version_of.emplace(pulled_keys[i], pulled_versions[i]);
  }
  for (size_t s = 0; s < groups.size(); ++s) {
    for (size_t k = 0; k < groups[s].keys.size(); ++k) {
      auto it = version_of.find(groups[s].keys[k]);
      if (it != version_of.end()) bases[s][k] = it->second;
    }
  }
  return bases;
}

}  // namespace taups

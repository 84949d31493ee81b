#include "worker/src/row_version_basis.h"

#include <algorithm>

#include "taups/table_config.h"

namespace taups {

RowBasisLookup::RowBasisLookup(absl::Span<const uint64_t> push_keys,
                               absl::Span<const uint64_t> pulled_keys,
                               absl::Span<const uint64_t> pulled_versions)
    : same_keys_(push_keys == pulled_keys), pulled_versions_(pulled_versions) {
  if (same_keys_) return;
  version_of_.reserve(pulled_keys.size());
  for (size_t i = 0; i < pulled_keys.size(); ++i) {
    version_of_.emplace(pulled_keys[i], pulled_versions[i]);
  }
}

std::vector<uint64_t> RowBasisLookup::BasesOf(const ShardKeys& group) const {
  std::vector<uint64_t> bases(group.keys.size(), kUnknownRowVersion);
  if (same_keys_) {
    for (const auto& [request_index, key_index] : group.positions) {
      bases[key_index] = pulled_versions_[request_index];
    }
    return bases;
  }
  for (size_t k = 0; k < group.keys.size(); ++k) {
    auto it = version_of_.find(group.keys[k]);
    if (it != version_of_.end()) bases[k] = it->second;
  }
  return bases;
}

}  // namespace taups

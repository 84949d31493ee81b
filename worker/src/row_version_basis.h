// The row versions a sparse push sends back: taken from the pull it was
// computed on (its basis), per shard, in the order the push sends its keys.
//
// Pure functions of their inputs; thread-compatible.
#ifndef TAUPS_WORKER_SRC_ROW_VERSION_BASIS_H_
#define TAUPS_WORKER_SRC_ROW_VERSION_BASIS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "worker/src/shard_router.h"

namespace taups {

// What a pull with row versions read, kept for the pushes made against it.
struct RowVersionBasis {
  std::vector<uint64_t> keys;
  std::vector<uint64_t> versions;  // versions[i] is the row of keys[i]
};

// For each shard s, the base version of every key in groups[s].keys (the
// push's keys as GroupKeysByShard grouped them), read from the pull's
// `pulled_keys` / `pulled_versions`; kUnknownRowVersion for a key the pull
// did not read. `push_keys` are the push's keys in the caller's order.
std::vector<std::vector<uint64_t>> RowBasesByShard(
    const std::vector<ShardKeys>& groups, absl::Span<const uint64_t> push_keys,
    absl::Span<const uint64_t> pulled_keys,
    absl::Span<const uint64_t> pulled_versions);

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_ROW_VERSION_BASIS_H_

// The row versions a sparse push sends back: taken from the pull it was
// computed on (its basis), per shard, in the order the push sends its keys.
//
// Pure functions of their inputs; thread-compatible.
#ifndef TAUPS_WORKER_SRC_ROW_VERSION_BASIS_H_
#define TAUPS_WORKER_SRC_ROW_VERSION_BASIS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "worker/src/shard_router.h"

namespace taups {

// What a pull with row versions read, kept for the pushes made against it.
struct RowVersionBasis {
  std::vector<uint64_t> keys;
  std::vector<uint64_t> versions;  // versions[i] is the row of keys[i]
};

// The base version of every key a push sends, read from the pull it was
// computed on (`pulled_keys` / `pulled_versions`, which must outlive this
// object): kUnknownRowVersion for a key the pull did not read. Built once
// per push; BasesOf may then be called for different shards on different
// threads (it only reads).
class RowBasisLookup {
 public:
  // `push_keys` are the push's keys in the caller's order (kept by
  // reference, as the pulled ones).
  RowBasisLookup(absl::Span<const uint64_t> push_keys,
                 absl::Span<const uint64_t> pulled_keys,
                 absl::Span<const uint64_t> pulled_versions);

  // The bases of `group.keys` (one shard's keys of the push, as
  // GroupKeysByShard or GroupShardKeys grouped them), in that order.
  std::vector<uint64_t> BasesOf(const ShardKeys& group) const;

 private:
  // The usual step pushes exactly the keys pulled, in the same order: a
  // key's base is then read at its request position, with no map.
  bool same_keys_;
  absl::Span<const uint64_t> pulled_versions_;
  absl::flat_hash_map<uint64_t, uint64_t> version_of_;  // otherwise
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_ROW_VERSION_BASIS_H_

// RowMapReference: the floor under a sparse table's cost, for the sparse
// benchmark. A plain absl::flat_hash_map<uint64_t, row> in this process (row
// = dim floats stored inline in the map), single-threaded, no locks, no
// versions, no network, doing what a pull or push does to the same keys:
//   Pull         find each key's row, creating it from the table's
//                initializer when missing, and copy it out;
//   Push         row -= lr * gradient for each key (SGD);
//   PullBounded  Pull with at most `max_rows` rows, evicting in insertion
//                order (FIFO: the cheapest eviction there is) to make room.
//
// Thread-compatible.
#ifndef TAUPS_BENCH_ROW_MAP_REFERENCE_H_
#define TAUPS_BENCH_ROW_MAP_REFERENCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/types/span.h"
#include "common/initializer.h"

namespace taups::bench {

class RowMapReference {
 public:
  // One for rows of `dim` floats; null when no instantiation has that dim
  // (powers of two 1..256 are built in).
  static std::unique_ptr<RowMapReference> Create(uint32_t dim);
  virtual ~RowMapReference() = default;

  virtual void Clear() = 0;
  virtual size_t size() const = 0;
  // out holds keys.size() * dim floats.
  virtual void Pull(absl::Span<const uint64_t> keys, absl::Span<float> out,
                    const Initializer& init) = 0;
  virtual void Push(absl::Span<const uint64_t> keys,
                    absl::Span<const float> gradients, float lr) = 0;
  virtual void PullBounded(absl::Span<const uint64_t> keys,
                           absl::Span<float> out, const Initializer& init,
                           size_t max_rows) = 0;
  // Rows evicted by PullBounded so far.
  virtual uint64_t evictions() const = 0;
};

}  // namespace taups::bench

#endif  // TAUPS_BENCH_ROW_MAP_REFERENCE_H_

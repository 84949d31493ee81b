// One shard's part of a dense table: the float range [range.begin, range.end)
// of a flat tensor, its optimizer state and its version clock.
//
// Thread-safe. The range is cut into fixed blocks, each with its own mutex, so
// pulls and pushes that touch different blocks run in parallel and concurrent
// slices of one large push never wait on each other. A pull sees each block
// atomically; across blocks it may mix in a push that is being applied (the
// usual asynchronous-SGD read), and reports the version read before copying.
//
// Callers validate requests (ranges, sizes, finite values) before calling;
// methods here assume valid input (see TableRegistry).
#ifndef TAUPS_SERVER_DENSE_TABLE_H_
#define TAUPS_SERVER_DENSE_TABLE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/shard_map.h"
#include "server/optimizer.h"
#include "server/version_clock.h"
#include "taups/table_config.h"

namespace taups {

class DenseTable {
 public:
  // Elements per lock block.
  static constexpr uint64_t kBlockSize = 64 * 1024;

  DenseTable(const TableConfig& config, Range range);
  DenseTable(const DenseTable&) = delete;
  DenseTable& operator=(const DenseTable&) = delete;

  const TableConfig& config() const { return config_; }
  Range range() const { return range_; }
  VersionClock& clock() { return clock_; }
  const VersionClock& clock() const { return clock_; }

  // Copies [offset, offset + out.size()) (global offsets, inside range()) and
  // returns the version read.
  uint64_t Pull(uint64_t offset, absl::Span<float> out) const;

  // Applies `gradient` to [offset, offset + gradient.size()) with the
  // learning rate scaled by lr_factor.
  void Apply(uint64_t offset, absl::Span<const float> gradient,
             float lr_factor);

 private:
  struct Block {
    mutable absl::Mutex mu;
  };
  // Calls fn(local_begin, local_end, block) for each block overlapping the
  // local element range [begin, end).
  template <typename Fn>
  void ForEachBlock(uint64_t begin, uint64_t end, Fn&& fn) const;

  const TableConfig config_;
  const Range range_;
  const std::unique_ptr<Optimizer> optimizer_;
  const int state_width_;
  std::unique_ptr<Block[]> blocks_;
  // values_[i] is global element range_.begin + i; guarded by blocks_[i / kBlockSize].mu.
  std::vector<float> values_;
  // state_[i * state_width_ + k]: optimizer slot k of element i; same guard.
  std::vector<float> state_;
  VersionClock clock_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_DENSE_TABLE_H_

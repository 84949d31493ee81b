// One shard's part of a sparse (embedding) table: uint64 key -> row of `dim`
// floats plus the optimizer's per-row state.
//
// Rows are created lazily, on first pull or push, by the table's
// deterministic initializer, so a key reads the same on any shard layout.
//
// Thread-safe. Keys are spread over kStripes stripes by hash; each stripe has
// its own mutex, hash map and row arena, so requests for different keys
// mostly run in parallel; a request locks each stripe it touches once.
// Callers validate requests before calling.
#ifndef TAUPS_SERVER_SPARSE_TABLE_H_
#define TAUPS_SERVER_SPARSE_TABLE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/initializer.h"
#include "server/optimizer.h"
#include "server/stripe_rows.h"
#include "server/table.h"
#include "taups/table_config.h"

namespace taups {

class SparseTable final : public Table {
 public:
  static constexpr int kStripes = 64;

  explicit SparseTable(const TableConfig& config);
  SparseTable(const SparseTable&) = delete;
  SparseTable& operator=(const SparseTable&) = delete;

  const TableConfig& config() const override { return config_; }
  uint32_t dim() const { return dim_; }
  uint64_t num_rows() const;
  uint64_t evictions() const;
  uint64_t refused() const;  // touches of keys not admitted yet

  // Copies row keys[i] into out[i * dim, (i + 1) * dim), creating missing
  // rows (a key not admitted yet reads its initial values).
  void Pull(absl::Span<const uint64_t> keys, absl::Span<float> out);

  // Applies part.values[i * dim ...] to row part.keys[i] (created if
  // missing; dropped for a key not admitted yet). Keys must be unique.
  void Apply(const GradientPart& part, float lr_factor,
             uint32_t worker) override;
  std::unique_ptr<StepBuffer> NewBuffer() const override;
  void ApplyBuffer(const StepBuffer& buffer, float scale,
                   float lr_factor) override;

 private:
  // Rows of one stripe; each row is dim values then dim*state_width state
  // floats.
  struct Stripe {
    Stripe(size_t row_stride, size_t max_rows, uint32_t admit_after)
        : rows(row_stride, max_rows, admit_after) {}
    mutable absl::Mutex mu;
    StripeRows rows ABSL_GUARDED_BY(mu);
  };
  static int StripeIndexOf(uint64_t key);
  // Calls fn(stripe, i) for every i in [0, keys.size()), grouped by the
  // stripe of keys[i] and holding that stripe's lock.
  template <typename Fn>
  void ForEachKeyByStripe(absl::Span<const uint64_t> keys, Fn&& fn) const;
  // Row storage for `key`, created if absent; nullptr if not admitted.
  float* FindOrCreateLocked(Stripe& stripe, uint64_t key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(stripe.mu);

  const TableConfig config_;
  const uint32_t dim_;
  const std::unique_ptr<Optimizer> optimizer_;
  const size_t row_stride_;
  const Initializer initializer_;
  std::vector<std::unique_ptr<Stripe>> stripes_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_SPARSE_TABLE_H_

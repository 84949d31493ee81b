#include "server/sparse_table.h"

#include <cstring>

#include "common/shard_map.h"

namespace taups {

SparseTable::SparseTable(const TableConfig& config)
    : config_(config),
      dim_(config.dim),
      optimizer_(MakeOptimizer(config.optimizer)),
      row_stride_(static_cast<size_t>(dim_) * (1 + optimizer_->state_width())),
      initializer_(config.initializer, config.name),
      stripes_(new Stripe[kStripes]) {}

SparseTable::Stripe& SparseTable::StripeOf(uint64_t key) const {
  // High bits: the low bits of the same hash choose the shard.
  return stripes_[(MixKey(key) >> 40) % kStripes];
}

uint64_t SparseTable::num_rows() const {
  uint64_t rows = 0;
  for (int s = 0; s < kStripes; ++s) {
    absl::MutexLock lock(&stripes_[s].mu);
    rows += stripes_[s].row_of.size();
  }
  return rows;
}

float* SparseTable::FindOrCreateLocked(Stripe& stripe, uint64_t key) {
  auto [it, inserted] = stripe.row_of.try_emplace(
      key, static_cast<uint32_t>(stripe.arena.size() / row_stride_));
  if (inserted) {
    stripe.arena.resize(stripe.arena.size() + row_stride_);
    float* row = stripe.arena.data() + it->second * row_stride_;
    initializer_.FillRow(key, absl::MakeSpan(row, dim_));
    optimizer_->InitState(row + dim_, dim_);
  }
  return stripe.arena.data() + it->second * row_stride_;
}

uint64_t SparseTable::Pull(absl::Span<const uint64_t> keys,
                           absl::Span<float> out) {
  const uint64_t version = clock_.version();
  for (size_t i = 0; i < keys.size(); ++i) {
    Stripe& stripe = StripeOf(keys[i]);
    absl::MutexLock lock(&stripe.mu);
    const float* row = FindOrCreateLocked(stripe, keys[i]);
    std::memcpy(out.data() + i * dim_, row, dim_ * sizeof(float));
  }
  return version;
}

void SparseTable::Apply(absl::Span<const uint64_t> keys,
                        absl::Span<const float> gradients, float lr_factor) {
  for (size_t i = 0; i < keys.size(); ++i) {
    Stripe& stripe = StripeOf(keys[i]);
    absl::MutexLock lock(&stripe.mu);
    float* row = FindOrCreateLocked(stripe, keys[i]);
    optimizer_->Apply(row, row + dim_, gradients.data() + i * dim_, dim_,
                      lr_factor);
  }
}

}  // namespace taups

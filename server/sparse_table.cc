#include "server/sparse_table.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/shard_map.h"

namespace taups {

SparseTable::SparseTable(const TableConfig& config)
    : config_(config),
      dim_(config.dim),
      optimizer_(MakeOptimizer(config.optimizer)),
      row_stride_(static_cast<size_t>(dim_) * (1 + optimizer_->state_width())),
      initializer_(config.initializer, config.name) {
  const size_t per_stripe = config.sparse_max_rows / kStripes;
  for (int s = 0; s < kStripes; ++s) {
    stripes_.push_back(std::make_unique<Stripe>(row_stride_, per_stripe,
                                                config.sparse_admit_after));
  }
}

int SparseTable::StripeIndexOf(uint64_t key) {
  // High bits: the low bits of the same hash choose the shard.
  return static_cast<int>((MixKey(key) >> 40) % kStripes);
}

template <typename Fn>
void SparseTable::ForEachKeyByStripe(absl::Span<const uint64_t> keys,
                                     Fn&& fn) const {
  // Counting sort of key positions by stripe, so each stripe is locked once
  // per request instead of once per key.
  std::vector<uint32_t> order(keys.size());
  std::vector<uint8_t> stripe_of(keys.size());
  uint32_t begin[kStripes + 1] = {};
  for (size_t i = 0; i < keys.size(); ++i) {
    stripe_of[i] = static_cast<uint8_t>(StripeIndexOf(keys[i]));
    ++begin[stripe_of[i] + 1];
  }
  for (int s = 0; s < kStripes; ++s) begin[s + 1] += begin[s];
  uint32_t next[kStripes];
  std::copy(begin, begin + kStripes, next);
  for (size_t i = 0; i < keys.size(); ++i) {
    order[next[stripe_of[i]]++] = static_cast<uint32_t>(i);
  }
  for (int s = 0; s < kStripes; ++s) {
    if (begin[s] == begin[s + 1]) continue;
    Stripe& stripe = *stripes_[s];
    absl::MutexLock lock(&stripe.mu);
    for (uint32_t k = begin[s]; k < begin[s + 1]; ++k) fn(stripe, order[k]);
  }
}

uint64_t SparseTable::num_rows() const {
  uint64_t rows = 0;
  for (const auto& stripe : stripes_) {
    absl::MutexLock lock(&stripe->mu);
    rows += stripe->rows.size();
  }
  return rows;
}

uint64_t SparseTable::evictions() const {
  uint64_t evictions = 0;
  for (const auto& stripe : stripes_) {
    absl::MutexLock lock(&stripe->mu);
    evictions += stripe->rows.evictions();
  }
  return evictions;
}

uint64_t SparseTable::refused() const {
  uint64_t refused = 0;
  for (const auto& stripe : stripes_) {
    absl::MutexLock lock(&stripe->mu);
    refused += stripe->rows.refused();
  }
  return refused;
}

float* SparseTable::FindOrCreateLocked(Stripe& stripe, uint64_t key) {
  if (float* row = stripe.rows.Find(key)) return row;
  float* row = stripe.rows.Create(key);
  if (row != nullptr) {
    initializer_.FillRow(key, absl::MakeSpan(row, dim_));
    optimizer_->InitState(row + dim_, dim_);
  }
  return row;
}

void SparseTable::Pull(absl::Span<const uint64_t> keys,
                       absl::Span<float> out) {
  ForEachKeyByStripe(keys, [&](Stripe& stripe, uint32_t i)
                               ABSL_NO_THREAD_SAFETY_ANALYSIS {
    float* dst = out.data() + size_t{i} * dim_;
    if (const float* row = FindOrCreateLocked(stripe, keys[i])) {
      std::memcpy(dst, row, dim_ * sizeof(float));
    } else {
      initializer_.FillRow(keys[i], absl::MakeSpan(dst, dim_));
    }
  });
}

void SparseTable::Apply(const GradientPart& part, float lr_factor,
                        uint32_t /*worker*/) {
  ForEachKeyByStripe(part.keys, [&](Stripe& stripe, uint32_t i)
                                    ABSL_NO_THREAD_SAFETY_ANALYSIS {
    float* row = FindOrCreateLocked(stripe, part.keys[i]);
    if (row == nullptr) return;  // not admitted yet: the gradient is dropped
    optimizer_->Apply(row, row + dim_, part.values.data() + size_t{i} * dim_,
                      dim_, lr_factor);
  });
}

namespace {

// Per-key sums of row gradients.
class SparseStepBuffer final : public StepBuffer {
 public:
  explicit SparseStepBuffer(uint32_t dim) : dim_(dim) {}
  void Add(const GradientPart& part, float scale) override {
    for (size_t i = 0; i < part.keys.size(); ++i) {
      float* dst = RowFor(part.keys[i]);
      const float* src = part.values.data() + i * dim_;
      for (uint32_t j = 0; j < dim_; ++j) dst[j] += scale * src[j];
    }
  }
  void AddBuffer(const StepBuffer& other, float scale) override {
    const auto& o = static_cast<const SparseStepBuffer&>(other);
    for (size_t r = 0; r < o.keys_.size(); ++r) {
      float* dst = RowFor(o.keys_[r]);
      const float* src = o.sums_.data() + r * dim_;
      for (uint32_t j = 0; j < dim_; ++j) dst[j] += scale * src[j];
    }
  }
  bool empty() const override { return keys_.empty(); }
  void Clear() override {
    index_.clear();
    keys_.clear();
    sums_.clear();
  }
  const std::vector<uint64_t>& keys() const { return keys_; }
  const std::vector<float>& sums() const { return sums_; }

 private:
  float* RowFor(uint64_t key) {
    auto [it, inserted] = index_.try_emplace(key, keys_.size());
    if (inserted) {
      keys_.push_back(key);
      sums_.resize(sums_.size() + dim_, 0.0f);
    }
    return sums_.data() + it->second * dim_;
  }
  const uint32_t dim_;
  absl::flat_hash_map<uint64_t, size_t> index_;
  std::vector<uint64_t> keys_;
  std::vector<float> sums_;
};

}  // namespace

std::unique_ptr<StepBuffer> SparseTable::NewBuffer() const {
  return std::make_unique<SparseStepBuffer>(dim_);
}

void SparseTable::ApplyBuffer(const StepBuffer& buffer, float scale,
                              float lr_factor) {
  const auto& b = static_cast<const SparseStepBuffer&>(buffer);
  if (b.empty()) return;
  std::vector<float> mean = b.sums();
  for (float& v : mean) v *= scale;
  GradientPart part;
  part.keys = b.keys();
  part.values = mean;
  Apply(part, lr_factor, 0);
}

}  // namespace taups

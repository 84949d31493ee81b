#include "server/dense_table.h"

#include <algorithm>
#include <cstring>

#include "common/initializer.h"

namespace taups {

DenseTable::DenseTable(const TableConfig& config, Range range)
    : config_(config),
      range_(range),
      optimizer_(MakeOptimizer(config.optimizer)),
      state_width_(optimizer_->state_width()),
      blocks_(new Block[(range.size() + kBlockSize - 1) / kBlockSize + 1]),
      values_(range.size()),
      state_(range.size() * state_width_) {
  Initializer(config.initializer, config.name)
      .FillDense(range.begin, absl::MakeSpan(values_));
  optimizer_->InitState(state_.data(), range.size());
}

template <typename Fn>
void DenseTable::ForEachBlock(uint64_t begin, uint64_t end, Fn&& fn) const {
  while (begin < end) {
    const uint64_t block = begin / kBlockSize;
    const uint64_t stop = std::min(end, (block + 1) * kBlockSize);
    fn(begin, stop, blocks_[block]);
    begin = stop;
  }
}

uint64_t DenseTable::Pull(uint64_t offset, absl::Span<float> out) const {
  const uint64_t version = clock_.version();
  const uint64_t local = offset - range_.begin;
  ForEachBlock(local, local + out.size(),
               [&](uint64_t b, uint64_t e, const Block& block) {
                 absl::MutexLock lock(&block.mu);
                 std::memcpy(out.data() + (b - local), values_.data() + b,
                             (e - b) * sizeof(float));
               });
  return version;
}

void DenseTable::Apply(uint64_t offset, absl::Span<const float> gradient,
                       float lr_factor) {
  const uint64_t local = offset - range_.begin;
  ForEachBlock(local, local + gradient.size(),
               [&](uint64_t b, uint64_t e, const Block& block) {
                 absl::MutexLock lock(&block.mu);
                 float* state = state_.data() + b * state_width_;
                 optimizer_->Apply(values_.data() + b, state,
                                   gradient.data() + (b - local), e - b,
                                   lr_factor);
               });
}

}  // namespace taups

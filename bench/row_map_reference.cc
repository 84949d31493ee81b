#include "bench/row_map_reference.h"

#include <array>
#include <cstring>
#include <deque>

#include "absl/container/flat_hash_map.h"

namespace taups::bench {
namespace {

template <size_t kDim>
class RowMap final : public RowMapReference {
 public:
  using Row = std::array<float, kDim>;

  void Clear() override {
    map_.clear();
    order_.clear();
  }
  size_t size() const override { return map_.size(); }

  void Pull(absl::Span<const uint64_t> keys, absl::Span<float> out,
            const Initializer& init) override {
    for (size_t i = 0; i < keys.size(); ++i) {
      auto [it, inserted] = map_.try_emplace(keys[i]);
      if (inserted) init.FillRow(keys[i], absl::MakeSpan(it->second));
      std::memcpy(out.data() + i * kDim, it->second.data(), sizeof(Row));
    }
  }

  void Push(absl::Span<const uint64_t> keys, absl::Span<const float> gradients,
            float lr) override {
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = map_.find(keys[i]);
      if (it == map_.end()) continue;
      const float* g = gradients.data() + i * kDim;
      for (size_t j = 0; j < kDim; ++j) it->second[j] -= lr * g[j];
    }
  }

  void PullBounded(absl::Span<const uint64_t> keys, absl::Span<float> out,
                   const Initializer& init, size_t max_rows) override {
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = map_.find(keys[i]);
      if (it == map_.end()) {
        if (map_.size() >= max_rows) {
          map_.erase(order_.front());
          order_.pop_front();
          ++evictions_;
        }
        it = map_.try_emplace(keys[i]).first;
        init.FillRow(keys[i], absl::MakeSpan(it->second));
        order_.push_back(keys[i]);
      }
      std::memcpy(out.data() + i * kDim, it->second.data(), sizeof(Row));
    }
  }

  uint64_t evictions() const override { return evictions_; }

 private:
  absl::flat_hash_map<uint64_t, Row> map_;
  std::deque<uint64_t> order_;  // PullBounded: keys in insertion order
  uint64_t evictions_ = 0;
};

}  // namespace

std::unique_ptr<RowMapReference> RowMapReference::Create(uint32_t dim) {
  switch (dim) {
    case 1: return std::make_unique<RowMap<1>>();
    case 2: return std::make_unique<RowMap<2>>();
    case 4: return std::make_unique<RowMap<4>>();
    case 8: return std::make_unique<RowMap<8>>();
    case 16: return std::make_unique<RowMap<16>>();
    case 32: return std::make_unique<RowMap<32>>();
    case 64: return std::make_unique<RowMap<64>>();
    case 128: return std::make_unique<RowMap<128>>();
    case 256: return std::make_unique<RowMap<256>>();
    default: return nullptr;
  }
}

}  // namespace taups::bench

#include "server/stripe_rows.h"

#include <algorithm>

#include "common/shard_map.h"

namespace taups {

StripeRows::StripeRows(size_t row_stride, size_t max_rows, uint32_t admit_after)
    : row_stride_(row_stride), max_rows_(max_rows), admit_after_(admit_after) {
  if (admit_after_ > 1) {
    sketch_.assign(kSketchDepth, std::array<uint16_t, kSketchWidth>{});
  }
}

void StripeRows::Unlink(uint32_t slot) {
  const uint32_t p = prev_[slot], n = next_[slot];
  (p == kNil ? head_ : next_[p]) = n;
  (n == kNil ? tail_ : prev_[n]) = p;
}

void StripeRows::PushFront(uint32_t slot) {
  prev_[slot] = kNil;
  next_[slot] = head_;
  (head_ == kNil ? tail_ : prev_[head_]) = slot;
  head_ = slot;
}

float* StripeRows::Find(uint64_t key) {
  auto it = slot_of_.find(key);
  if (it == slot_of_.end()) return nullptr;
  if (max_rows_ > 0 && head_ != it->second) {
    Unlink(it->second);
    PushFront(it->second);
  }
  return arena_.data() + size_t{it->second} * row_stride_;
}

uint32_t StripeRows::Sight(uint64_t key) {
  uint32_t estimate = UINT16_MAX;
  for (int d = 0; d < kSketchDepth; ++d) {
    uint16_t& cell = sketch_[d][MixKey(key ^ (0x9e3779b97f4a7c15ULL * (d + 1))) %
                                kSketchWidth];
    if (cell < UINT16_MAX) ++cell;
    estimate = std::min<uint32_t>(estimate, cell);
  }
  return estimate;
}

float* StripeRows::Create(uint64_t key) {
  if (!sketch_.empty() && Sight(key) < admit_after_) {
    ++refused_;
    return nullptr;
  }
  uint32_t slot;
  if (max_rows_ > 0 && slot_of_.size() >= max_rows_) {
    slot = tail_;  // evict the least recently used row, reuse its slot
    Unlink(slot);
    slot_of_.erase(key_of_[slot]);
    ++evictions_;
  } else {
    slot = static_cast<uint32_t>(key_of_.size());
    key_of_.push_back(0);
    prev_.push_back(kNil);
    next_.push_back(kNil);
    arena_.resize(arena_.size() + row_stride_);
  }
  key_of_[slot] = key;
  slot_of_.emplace(key, slot);
  if (max_rows_ > 0) PushFront(slot);
  return arena_.data() + size_t{slot} * row_stride_;
}

}  // namespace taups

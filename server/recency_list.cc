#include "server/recency_list.h"

#include "server/capped_growth.h"

namespace taups {

void RecencyList::EnsureSlot(uint32_t slot) {
  if (slot < prev_.size()) return;
  GrowCapped(prev_, size_t{slot} + 1, max_slots_);
  GrowCapped(next_, size_t{slot} + 1, max_slots_);
}

void RecencyList::PushFront(uint32_t slot) {
  EnsureSlot(slot);
  prev_[slot] = kNil;
  next_[slot] = head_;
  (head_ == kNil ? tail_ : prev_[head_]) = slot;
  head_ = slot;
}

void RecencyList::Unlink(uint32_t slot) {
  const uint32_t p = prev_[slot], n = next_[slot];
  (p == kNil ? head_ : next_[p]) = n;
  (n == kNil ? tail_ : prev_[n]) = p;
}

void RecencyList::MoveToFront(uint32_t slot) {
  if (head_ == slot) return;
  Unlink(slot);
  PushFront(slot);
}

}  // namespace taups

#include "server/stripe_rows.h"

#include <utility>

#include "server/capped_growth.h"

namespace taups {

StripeRows::StripeRows(size_t row_stride, const StripeOptions& options)
    : row_stride_(row_stride),
      max_rows_(options.max_rows),
      eviction_(options.eviction),
      ttl_ns_(options.ttl_ns),
      tracks_use_(options.max_rows > 0 || options.ttl_ns > 0),
      recency_(options.max_rows),
      lfu_(options.max_rows),
      admission_(options.admit_after, options.admit_probability,
                 options.admission_seed) {}

void StripeRows::Touch(uint32_t slot, int64_t now_ns) {
  if (ttl_ns_ > 0) touched_ns_[slot] = now_ns;
  if (uses_recency()) recency_.MoveToFront(slot);
  if (uses_lfu()) lfu_.Touch(slot);
}

void StripeRows::RecordRemoved(uint64_t key) {
  if (removed_.size() >= kMaxRemovedKeys) {
    removed_.clear();
    removals_lost_through_ = epoch_;
  }
  removed_[key] = epoch_;
}

void StripeRows::Detach(uint32_t slot) {
  if (tracking_) RecordRemoved(key_of_[slot]);
  slot_of_.Erase(key_of_[slot]);
  if (uses_recency()) recency_.Unlink(slot);
  if (uses_lfu()) lfu_.Remove(slot);
}

uint32_t StripeRows::FindTracked(uint32_t slot, int64_t now_ns) {
  if (Expired(slot, now_ns)) {
    Detach(slot);
    GrowCapped(free_slots_, free_slots_.size() + 1, max_rows_);
    free_slots_.back() = slot;
    ++ttl_expired_;
    return kNoSlot;
  }
  Touch(slot, now_ns);
  return slot;
}

std::optional<uint64_t> StripeRows::PeekVersion(uint64_t key,
                                                int64_t now_ns) const {
  const uint32_t slot = slot_of_.Find(key);
  if (slot == kNoSlot || Expired(slot, now_ns)) return std::nullopt;
  return version_of_[slot];
}

uint32_t StripeRows::TakeSlot(int64_t now_ns) {
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  if (max_rows_ == 0 || key_of_.size() < max_rows_) {
    const size_t slot = key_of_.size();
    GrowCapped(key_of_, slot + 1, max_rows_);
    GrowCapped(version_of_, slot + 1, max_rows_);
    if (tracking_) GrowCapped(changed_epoch_, slot + 1, max_rows_);
    if (ttl_ns_ > 0) GrowCapped(touched_ns_, slot + 1, max_rows_);
    GrowCapped(arena_, (slot + 1) * row_stride_, max_rows_ * row_stride_);
    return static_cast<uint32_t>(slot);
  }
  // Full. An idle row goes before any live one.
  if (ttl_ns_ > 0) {
    const uint32_t oldest = recency_.oldest();
    if (oldest != RecencyList::kNil && Expired(oldest, now_ns)) {
      Detach(oldest);
      ++ttl_expired_;
      return oldest;
    }
  }
  const uint32_t victim = uses_lfu() ? lfu_.victim() : recency_.oldest();
  Detach(victim);
  ++evictions_;
  return victim;
}

uint32_t StripeRows::Create(uint64_t key, int64_t now_ns) {
  if (admission_.enabled() && !admission_.Sight(key)) {
    ++refused_;
    return kNoSlot;
  }
  return CreateAdmitted(key, now_ns);
}

uint32_t StripeRows::CreateAdmitted(uint64_t key, int64_t now_ns) {
  const uint32_t slot = TakeSlot(now_ns);
  key_of_[slot] = key;
  version_of_[slot] = 0;
  slot_of_.Insert(key, slot);
  if (tracking_) {
    changed_epoch_[slot] = epoch_;
    removed_.erase(key);
  }
  if (ttl_ns_ > 0) touched_ns_[slot] = now_ns;
  if (uses_recency()) recency_.PushFront(slot);
  if (uses_lfu()) lfu_.Add(slot);
  return slot;
}

size_t StripeRows::ExpireIdle(int64_t now_ns, size_t limit) {
  if (ttl_ns_ == 0) return 0;
  size_t expired = 0;
  for (uint32_t slot = recency_.oldest();
       expired < limit && slot != RecencyList::kNil && Expired(slot, now_ns);
       slot = recency_.oldest()) {
    Detach(slot);
    GrowCapped(free_slots_, free_slots_.size() + 1, max_rows_);
    free_slots_.back() = slot;
    ++ttl_expired_;
    ++expired;
  }
  return expired;
}

size_t StripeRows::memory_bytes() const {
  return slot_of_.memory_bytes() + arena_.capacity() * sizeof(float) +
         (key_of_.capacity() + version_of_.capacity()) * sizeof(uint64_t) +
         touched_ns_.capacity() * sizeof(int64_t) +
         changed_epoch_.capacity() * sizeof(uint32_t) +
         removed_.capacity() * (sizeof(std::pair<const uint64_t, uint32_t>) + 1) +
         free_slots_.capacity() * sizeof(uint32_t) + recency_.memory_bytes() +
         lfu_.memory_bytes() + admission_.memory_bytes() + sizeof(*this);
}

}  // namespace taups

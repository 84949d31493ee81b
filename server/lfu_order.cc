#include "server/lfu_order.h"

#include "server/capped_growth.h"

namespace taups {

size_t LfuOrder::memory_bytes() const {
  return (bucket_of_.capacity() + prev_.capacity() + next_.capacity() +
          free_buckets_.capacity()) * sizeof(uint32_t) +
         buckets_.capacity() * sizeof(Bucket);
}

uint32_t LfuOrder::NewBucket(uint32_t count, uint32_t after) {
  uint32_t b;
  if (!free_buckets_.empty()) {
    b = free_buckets_.back();
    free_buckets_.pop_back();
  } else {
    b = static_cast<uint32_t>(buckets_.size());
    // A move can create a bucket before freeing the one it leaves: at most
    // one more bucket than rows.
    GrowCapped(buckets_, buckets_.size() + 1,
               max_slots_ == 0 ? 0 : max_slots_ + 1);
  }
  Bucket& bucket = buckets_[b];
  bucket = Bucket{};
  bucket.count = count;
  bucket.prev = after;
  bucket.next = after == kNil ? first_ : buckets_[after].next;
  if (bucket.next != kNil) buckets_[bucket.next].prev = b;
  (after == kNil ? first_ : buckets_[after].next) = b;
  return b;
}

void LfuOrder::FreeBucket(uint32_t b) {
  const Bucket& bucket = buckets_[b];
  (bucket.prev == kNil ? first_ : buckets_[bucket.prev].next) = bucket.next;
  if (bucket.next != kNil) buckets_[bucket.next].prev = bucket.prev;
  GrowCapped(free_buckets_, free_buckets_.size() + 1,
             max_slots_ == 0 ? 0 : max_slots_ + 1);
  free_buckets_.back() = b;
}

void LfuOrder::PushRow(uint32_t b, uint32_t slot) {
  Bucket& bucket = buckets_[b];
  bucket_of_[slot] = b;
  prev_[slot] = kNil;
  next_[slot] = bucket.head;
  (bucket.head == kNil ? bucket.tail : prev_[bucket.head]) = slot;
  bucket.head = slot;
}

void LfuOrder::UnlinkRow(uint32_t slot) {
  const uint32_t b = bucket_of_[slot];
  Bucket& bucket = buckets_[b];
  const uint32_t p = prev_[slot], n = next_[slot];
  (p == kNil ? bucket.head : next_[p]) = n;
  (n == kNil ? bucket.tail : prev_[n]) = p;
  if (bucket.head == kNil) FreeBucket(b);
}

void LfuOrder::Add(uint32_t slot) {
  if (slot >= bucket_of_.size()) {
    GrowCapped(bucket_of_, size_t{slot} + 1, max_slots_);
    GrowCapped(prev_, size_t{slot} + 1, max_slots_);
    GrowCapped(next_, size_t{slot} + 1, max_slots_);
  }
  uint32_t b = first_;
  if (b == kNil || buckets_[b].count != 1) b = NewBucket(1, kNil);
  PushRow(b, slot);
}

void LfuOrder::Touch(uint32_t slot) {
  const uint32_t b = bucket_of_[slot];
  const uint32_t count = buckets_[b].count;
  if (count == UINT32_MAX) {
    // Saturated: the count stays, the row becomes its bucket's newest. Not
    // the head, so the bucket holds another row and survives the unlink.
    if (buckets_[b].head != slot) {
      UnlinkRow(slot);
      PushRow(b, slot);
    }
    return;
  }
  uint32_t target = buckets_[b].next;
  if (target == kNil || buckets_[target].count != count + 1) {
    target = NewBucket(count + 1, b);
  }
  UnlinkRow(slot);  // may free b; target is already linked after it
  PushRow(target, slot);
}

void LfuOrder::Remove(uint32_t slot) { UnlinkRow(slot); }

}  // namespace taups

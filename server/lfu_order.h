// LfuOrder: the rows of one stripe ordered for least-frequently-used
// eviction, in O(1) per operation (the bucket scheme of Shah, Mitra and
// Matani, "An O(1) algorithm for implementing the LFU cache eviction
// scheme", 2010).
//
// Each row has a touch count: 1 when added, +1 per Touch (saturating at
// 2^32 - 1). Rows with the same count share a bucket; buckets form a list in
// increasing count, and each bucket lists its rows newest first. A row
// enters a bucket when it reaches that count, i.e. at its last touch, so the
// back of the lowest bucket is the victim: the fewest touches, and among
// those the least recently touched.
//
// Thread-compatible: the stripe's mutex guards it.
#ifndef TAUPS_SERVER_LFU_ORDER_H_
#define TAUPS_SERVER_LFU_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taups {

class LfuOrder {
 public:
  static constexpr uint32_t kNil = UINT32_MAX;

  // `max_slots` caps slot and bucket storage (0 = uncapped).
  explicit LfuOrder(size_t max_slots) : max_slots_(max_slots) {}

  // Adds `slot` (not present) with count 1.
  void Add(uint32_t slot);
  // Counts one more touch of `slot` (present).
  void Touch(uint32_t slot);
  // Removes `slot` (present).
  void Remove(uint32_t slot);
  // The row to evict (fewest touches, then least recent), or kNil if empty.
  uint32_t victim() const {
    return first_ == kNil ? kNil : buckets_[first_].tail;
  }
  // Touches of `slot` (present) since it was added.
  uint32_t count(uint32_t slot) const { return buckets_[bucket_of_[slot]].count; }

  size_t memory_bytes() const;

 private:
  struct Bucket {
    uint32_t count = 0;
    uint32_t head = kNil, tail = kNil;  // rows, newest first
    uint32_t prev = kNil, next = kNil;  // neighbouring buckets by count
  };

  // A new empty bucket for `count`, linked after `after` (kNil: first).
  uint32_t NewBucket(uint32_t count, uint32_t after);
  void FreeBucket(uint32_t bucket);
  void PushRow(uint32_t bucket, uint32_t slot);
  // Unlinks `slot` from its bucket; frees the bucket if it empties.
  void UnlinkRow(uint32_t slot);

  const size_t max_slots_;
  std::vector<uint32_t> bucket_of_, prev_, next_;  // per slot
  std::vector<Bucket> buckets_;
  std::vector<uint32_t> free_buckets_;
  uint32_t first_ = kNil;  // bucket with the lowest count
};

}  // namespace taups

#endif  // TAUPS_SERVER_LFU_ORDER_H_

// RecencyList: the rows of one stripe ordered by their last touch, as an
// intrusive doubly linked list over slot numbers (two uint32 links per slot,
// no allocation per touch). Newest at the front, oldest at the back; every
// operation is O(1).
//
// Thread-compatible: the stripe's mutex guards it.
#ifndef TAUPS_SERVER_RECENCY_LIST_H_
#define TAUPS_SERVER_RECENCY_LIST_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taups {

class RecencyList {
 public:
  static constexpr uint32_t kNil = UINT32_MAX;

  // `max_slots` caps the link storage (0 = uncapped).
  explicit RecencyList(size_t max_slots) : max_slots_(max_slots) {}

  // Adds `slot` (not in the list) as the newest.
  void PushFront(uint32_t slot);
  // Removes `slot` (in the list).
  void Unlink(uint32_t slot);
  // Makes `slot` (in the list) the newest.
  void MoveToFront(uint32_t slot);
  // The least recently touched slot, or kNil when empty.
  uint32_t oldest() const { return tail_; }

  size_t memory_bytes() const {
    return (prev_.capacity() + next_.capacity()) * sizeof(uint32_t);
  }

 private:
  void EnsureSlot(uint32_t slot);

  const size_t max_slots_;
  std::vector<uint32_t> prev_, next_;
  uint32_t head_ = kNil, tail_ = kNil;
};

}  // namespace taups

#endif  // TAUPS_SERVER_RECENCY_LIST_H_

// StampedKeyTable: uint64 key -> uint32 value for one round of lookups,
// reused from round to round without clearing.
//
// Open addressing with linear probing over a power-of-two array of slots,
// at most half full. A slot belongs to the current round only when it
// carries the round's stamp, so Reset costs nothing once the array is big
// enough (no clearing, no allocation). Keys are placed by Fibonacci hashing
// (the high bits of key * 2^64/phi), which spreads strided and clustered
// keys evenly; the caller's keys are not adversarial. A thread typically
// keeps one (thread_local) for calls of up to some size.
//
// Used for de-duplicating a sparse request's keys: on the client
// (worker/src/shard_router) and on the shard (SparseTable::FirstRepeatedKey).
// Thread-compatible.
#ifndef TAUPS_COMMON_STAMPED_KEY_TABLE_H_
#define TAUPS_COMMON_STAMPED_KEY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taups {

class StampedKeyTable {
 public:
  // Forgets every key and makes room for `n` distinct ones.
  void Reset(size_t n) {
    uint32_t bits = 4;
    while ((size_t{1} << bits) < 2 * n) ++bits;
    if (slots_.size() < (size_t{1} << bits)) {
      slots_.assign(size_t{1} << bits, Slot{});
      stamp_ = 0;
    }
    mask_ = (size_t{1} << bits) - 1;
    shift_ = 64 - bits;
    if (++stamp_ == 0) {  // wrapped: old stamps could match again
      for (Slot& slot : slots_) slot.stamp = 0;
      stamp_ = 1;
    }
  }
  // Brings `key`'s first slot into the cache ahead of FindOrAdd.
  void Prefetch(uint64_t key) const {
    __builtin_prefetch(&slots_[Home(key)], 1);
  }
  // `key`'s value if it was added since Reset (*added = false); else adds
  // it with `value`, sets *added and returns `value`.
  uint32_t FindOrAdd(uint64_t key, uint32_t value, bool* added) {
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.stamp != stamp_) {
        slot = Slot{key, value, stamp_};
        *added = true;
        return value;
      }
      if (slot.key == key) {
        *added = false;
        return slot.value;
      }
    }
  }
  // Slots held (16 bytes each).
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t value = 0;
    uint32_t stamp = 0;
  };
  size_t Home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  uint32_t shift_ = 64;
  uint32_t stamp_ = 0;
};

}  // namespace taups

#endif  // TAUPS_COMMON_STAMPED_KEY_TABLE_H_

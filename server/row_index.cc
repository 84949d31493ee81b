#include "server/row_index.h"

#include "absl/hash/hash.h"

namespace taups {

uint64_t RowIndex::ProcessSeed() {
  // absl::Hash is seeded from an address, which address-space layout
  // randomisation moves from process to process.
  static const uint64_t seed = absl::Hash<uint64_t>{}(0x726f77696e646578ULL);
  return seed;
}

void RowIndex::Place(uint64_t key, uint32_t slot) {
  size_t i = Home(key);
  while (entries_[i].slot != kEmpty) i = (i + 1) & mask_;
  entries_[i].key = key;
  entries_[i].slot = slot;
}

void RowIndex::Grow() {
  const size_t capacity =
      entries_.empty() ? kMinCapacity : 2 * entries_.size();
  std::vector<Entry> old(capacity);
  old.swap(entries_);
  mask_ = capacity - 1;
  uint32_t bits = 0;
  while ((size_t{1} << bits) < capacity) ++bits;
  shift_ = 64 - bits;
  for (const Entry& entry : old) {
    if (entry.slot != kEmpty) Place(entry.key, entry.slot);
  }
}

void RowIndex::Insert(uint64_t key, uint32_t slot) {
  // At most 3/4 full after the insert: probes stay short and a free entry
  // always ends them.
  if (4 * (size_ + 1) > 3 * entries_.size()) Grow();
  Place(key, slot);
  ++size_;
}

bool RowIndex::Erase(uint64_t key) {
  if (size_ == 0) return false;
  size_t hole = Home(key);
  for (;; hole = (hole + 1) & mask_) {
    if (entries_[hole].slot == kEmpty) return false;
    if (entries_[hole].key == key) break;
  }
  // Backward shift: an entry after the hole moves into it when the hole
  // lies between that entry's home and where it sits, so every key stays
  // reachable from its home without passing a free entry.
  for (size_t next = (hole + 1) & mask_; entries_[next].slot != kEmpty;
       next = (next + 1) & mask_) {
    const size_t home = Home(entries_[next].key);
    if (((next - home) & mask_) >= ((next - hole) & mask_)) {
      entries_[hole] = entries_[next];
      hole = next;
    }
  }
  entries_[hole] = Entry{};
  --size_;
  return true;
}

}  // namespace taups

// RowIndex: a sparse stripe's map from key to row slot, built so that a
// lookup announced a few keys ahead (Prefetch) finds its entry in cache.
//
// Open addressing with linear probing over a power-of-two array of 16-byte
// entries (key, slot), at most 3/4 full; an entry whose slot is kEmpty is
// free. A key's entry is at its home position or shortly after it, so
// Prefetch loads the home entry's cache line and the next one, and Find then
// rarely waits on memory. (absl's flat_hash_map, which this replaces, had
// its prefetch compiled away (see PrefetchLine), and even working it loads
// one of the four lines of entries a probe group spans: the lookups of a
// large sparse push waited on memory, docs/BENCHMARKS.md.)
//
// Homes mix each key with a seed that differs from process to process, so
// the keys a client sends cannot be chosen to pile up in one place. Erase
// shifts the entries after the erased one back (no tombstones), so probes
// stay short under any mix of inserts and erases.
//
// Memory: capacity() * 16 bytes; right after growing, at most 2 * 4/3 of
// the entries are allocated per key, under 43 bytes a row
// (SparseTable::RowFootprintBytes counts 44).
//
// Thread-compatible.
#ifndef TAUPS_SERVER_ROW_INDEX_H_
#define TAUPS_SERVER_ROW_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taups {

class RowIndex {
 public:
  static constexpr uint32_t kEmpty = UINT32_MAX;

  // `key`'s slot, or kEmpty if it has none.
  uint32_t Find(uint64_t key) const {
    if (size_ == 0) return kEmpty;
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      const Entry& entry = entries_[i];
      if (entry.slot == kEmpty || entry.key == key) return entry.slot;
    }
  }
  // Starts loading the cache lines Find(key) will most likely read: the
  // home entry's and the next. Changes nothing.
  void Prefetch(uint64_t key) const {
    if (entries_.empty()) return;
    const size_t home = Home(key);
    PrefetchLine(&entries_[home]);
    PrefetchLine(&entries_[(home + kEntriesPerLine) & mask_]);
  }
  // Records `key` -> `slot`. `key` must have no slot yet; slot != kEmpty.
  void Insert(uint64_t key, uint32_t slot);
  // Forgets `key`'s slot; false if it had none.
  bool Erase(uint64_t key);
  // Calls fn(key, slot) for every key, in no particular order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (size_ == 0) return;
    for (const Entry& entry : entries_) {
      if (entry.slot != kEmpty) fn(entry.key, entry.slot);
    }
  }

  size_t size() const { return size_; }
  // Entries allocated.
  size_t capacity() const { return entries_.size(); }
  size_t memory_bytes() const { return entries_.capacity() * sizeof(Entry); }

 private:
  struct Entry {
    uint64_t key = 0;
    uint32_t slot = kEmpty;
  };
  static_assert(sizeof(Entry) == 16);
  static constexpr size_t kEntriesPerLine = 64 / sizeof(Entry);
  static constexpr size_t kMinCapacity = 16;

  // The high bits of a multiply-xorshift mix of the key and the process's
  // seed.
  size_t Home(uint64_t key) const {
    uint64_t h = (key ^ seed_) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    return static_cast<size_t>(h >> shift_);
  }
  // The same for every index of a process, different in the next
  // (see row_index.cc).
  static uint64_t ProcessSeed();
  // Starts loading `address`'s cache line. GCC 12 silently drops a
  // __builtin_prefetch whose address went through an xor with a shifted
  // copy of itself (as in Home, or absl::Hash: absl's own
  // flat_hash_map::prefetch compiled to nothing in this project); an empty
  // asm statement that takes the address keeps it.
  static void PrefetchLine(const void* address) {
    asm volatile("" : : "r"(address));
    __builtin_prefetch(address);
  }
  // Doubles the array (or makes the first one) and re-homes every entry.
  void Grow();
  // Puts a key known to be absent into the first free entry of its probe.
  void Place(uint64_t key, uint32_t slot);

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  uint32_t shift_ = 63;
  size_t size_ = 0;
  uint64_t seed_ = ProcessSeed();
};

}  // namespace taups

#endif  // TAUPS_SERVER_ROW_INDEX_H_

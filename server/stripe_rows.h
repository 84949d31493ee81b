// StripeRows: the rows of one stripe of a sparse table, in bounded memory.
//
// Each row is `row_stride` floats in one arena slot, plus its key, its row
// version (updates applied to it since it was created) and the bookkeeping
// of the stripe's policies:
//   max_rows > 0   the stripe never holds more; making room evicts one row:
//                  lru, the least recently touched (RecencyList), or lfu,
//                  the fewest touches since admission and then the least
//                  recent (LfuOrder). A row idle for the ttl is expired
//                  before any live row is evicted.
//   ttl > 0        a row not touched for at least `ttl` is expired: by
//                  ExpireIdle (the shard's tick), or when next looked up;
//                  counted in ttl_expired, not in evictions. Its slot is
//                  reused.
//   admission      a key without a row gets one only when its
//                  AdmissionFilter says so; until then it is "refused".
// A row that comes back after eviction or expiry is new: the caller
// re-initializes it and its version restarts at 0.
//
// Slots are numbers; Find/Create return one (kNoSlot if none) and row() /
// version() give its storage, valid until the next Create or ExpireIdle.
// Times are nanoseconds of the shard's clock, passed in by the caller
// (ignored when ttl is 0).
//
// Change tracking (incremental checkpoints; off until the first
// CollectChanges): every row carries the epoch of its last change (created,
// updated through MarkChanged), and a row that goes (evicted, expired)
// leaves its key with the epoch it went in. CollectChanges(since, cut)
// reports the rows and removed keys of epochs > since and starts epoch
// cut + 1. Removed keys are held until a collection with since >= their
// epoch; past kMaxRemovedKeys they are dropped and any collection since an
// earlier epoch is reported incomplete. Tracking costs 4 bytes per row.
//
// Thread-compatible: SparseTable holds the stripe's mutex around every call.
#ifndef TAUPS_SERVER_STRIPE_ROWS_H_
#define TAUPS_SERVER_STRIPE_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "server/admission_filter.h"
#include "server/lfu_order.h"
#include "server/recency_list.h"
#include "server/row_index.h"
#include "taups/table_config.h"

namespace taups {

struct StripeOptions {
  size_t max_rows = 0;  // 0 = unbounded
  SparseEvictionKind eviction = SparseEvictionKind::kLru;
  int64_t ttl_ns = 0;   // 0 = rows never expire
  uint32_t admit_after = 0;
  float admit_probability = 1.0f;
  uint64_t admission_seed = 0;
};

class StripeRows {
 public:
  static constexpr uint32_t kNoSlot = RowIndex::kEmpty;

  StripeRows(size_t row_stride, const StripeOptions& options);

  // The slot of `key`'s row, counted as a touch at `now_ns`; kNoSlot if
  // the key has no row (an expired row is removed here and counted).
  uint32_t Find(uint64_t key, int64_t now_ns) {
    const uint32_t slot = slot_of_.Find(key);
    if (slot == kNoSlot) return kNoSlot;
    // An unbounded stripe without a ttl keeps no use records: done.
    return tracks_use_ ? FindTracked(slot, now_ns) : slot;
  }
  // Starts loading what Find(key) / Peek(key) read first (the index's
  // entries near `key`'s home), for a lookup a few keys ahead; changes
  // nothing.
  void Prefetch(uint64_t key) const { slot_of_.Prefetch(key); }
  // A new row for `key` (which has none), touched at `now_ns`, making room
  // if the stripe is full; kNoSlot if the key is not admitted yet. Its
  // version is 0; the caller fills row().
  uint32_t Create(uint64_t key, int64_t now_ns);
  // Like Create, but past the admission filter (a restored row was admitted
  // when it was first made).
  uint32_t CreateAdmitted(uint64_t key, int64_t now_ns);
  // The slot of `key`'s live row without touching it; kNoSlot if none.
  uint32_t Peek(uint64_t key, int64_t now_ns) const {
    const uint32_t slot = slot_of_.Find(key);
    if (slot == kNoSlot || Expired(slot, now_ns)) return kNoSlot;
    return slot;
  }
  // Calls fn(key, slot) for every row, in no particular order.
  template <typename Fn>
  void ForEachRow(Fn&& fn) const {
    slot_of_.ForEach(fn);
  }
  // Records that `slot`'s row changed (values, state or version).
  void MarkChanged(uint32_t slot) {
    if (tracking_) changed_epoch_[slot] = epoch_;
  }
  // Removed keys a stripe remembers between two collections.
  static constexpr size_t kMaxRemovedKeys = size_t{1} << 15;
  // Calls on_row(key, slot) for every row changed in an epoch > `since`,
  // appends the keys removed in such epochs (and without a row now) to
  // `removed`, forgets removals of epochs <= since, and stamps later changes
  // with cut + 1 (`cut` must exceed every cut before). Returns false when it
  // cannot tell every change since `since` (tracking started now with
  // since > 0, or removals were dropped after an epoch > since).
  template <typename Fn>
  bool CollectChanges(uint32_t since, uint32_t cut, Fn&& on_row,
                      std::vector<uint64_t>* removed) {
    bool complete = true;
    if (!tracking_) {
      tracking_ = true;
      changed_epoch_.assign(key_of_.size(), epoch_);
      complete = since == 0;
    }
    if (removals_lost_through_ > since) complete = false;
    slot_of_.ForEach([&](uint64_t key, uint32_t slot) {
      if (changed_epoch_[slot] > since) on_row(key, slot);
    });
    for (auto it = removed_.begin(); it != removed_.end();) {
      if (it->second <= since) {
        removed_.erase(it++);
        continue;
      }
      removed->push_back(it->first);
      ++it;
    }
    epoch_ = cut + 1;
    return complete;
  }
  // The version of `key`'s row without touching it; nullopt if the key has
  // no live row.
  std::optional<uint64_t> PeekVersion(uint64_t key, int64_t now_ns) const;
  // Expires up to `limit` rows idle for at least the ttl, oldest first.
  // Returns how many it expired.
  size_t ExpireIdle(int64_t now_ns, size_t limit);

  float* row(uint32_t slot) { return arena_.data() + size_t{slot} * row_stride_; }
  const float* row(uint32_t slot) const {
    return arena_.data() + size_t{slot} * row_stride_;
  }
  uint64_t& version(uint32_t slot) { return version_of_[slot]; }
  uint64_t version(uint32_t slot) const { return version_of_[slot]; }

  size_t size() const { return slot_of_.size(); }
  uint64_t evictions() const { return evictions_; }
  uint64_t ttl_expired() const { return ttl_expired_; }
  uint64_t refused() const { return refused_; }
  // Bytes this stripe's storage holds now (capacities, not sizes).
  size_t memory_bytes() const;

 private:
  bool uses_recency() const {
    return ttl_ns_ > 0 || (max_rows_ > 0 && eviction_ == SparseEvictionKind::kLru);
  }
  bool uses_lfu() const {
    return max_rows_ > 0 && eviction_ == SparseEvictionKind::kLfu;
  }
  bool Expired(uint32_t slot, int64_t now_ns) const {
    return ttl_ns_ > 0 && now_ns - touched_ns_[slot] >= ttl_ns_;
  }
  // Find's second half when tracks_use_: expiry, then the touch.
  uint32_t FindTracked(uint32_t slot, int64_t now_ns);
  void Touch(uint32_t slot, int64_t now_ns);
  // Takes `slot`'s row out of the index and the orders; the slot is free.
  void Detach(uint32_t slot);
  // Change tracking: remembers that `key`'s row went in this epoch.
  void RecordRemoved(uint64_t key);
  // A free slot: reused, new, or (stripe full) taken from an expired or
  // evicted row.
  uint32_t TakeSlot(int64_t now_ns);

  const size_t row_stride_;
  const size_t max_rows_;
  const SparseEvictionKind eviction_;
  const int64_t ttl_ns_;
  const bool tracks_use_;  // max_rows_ > 0 || ttl_ns_ > 0
  RowIndex slot_of_;
  std::vector<float> arena_;
  std::vector<uint64_t> key_of_;      // per slot
  std::vector<uint64_t> version_of_;  // per slot
  std::vector<int64_t> touched_ns_;   // per slot; empty without a ttl
  std::vector<uint32_t> free_slots_;
  RecencyList recency_;  // unused unless uses_recency()
  LfuOrder lfu_;         // unused unless uses_lfu()
  AdmissionFilter admission_;
  bool tracking_ = false;
  uint32_t epoch_ = 1;                  // stamp of changes made now
  uint32_t removals_lost_through_ = 0;  // removals of epochs <= it dropped
  std::vector<uint32_t> changed_epoch_;  // per slot, when tracking_
  absl::flat_hash_map<uint64_t, uint32_t> removed_;  // key -> epoch gone
  uint64_t evictions_ = 0;
  uint64_t ttl_expired_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace taups

#endif  // TAUPS_SERVER_STRIPE_ROWS_H_

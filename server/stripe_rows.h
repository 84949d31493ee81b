// StripeRows: the rows of one stripe of a sparse table, in bounded memory.
//
// Each row is `row_stride` floats in one arena. With max_rows > 0 the stripe
// never holds more: making room evicts the least recently used row (exact
// LRU; a row is "used" by every pull and push that touches it), and its slot
// is reused. With admit_after > 1 a key gets a row only once it has been
// seen that many times (a count-min sketch counts sightings, so one-off ids
// never take a row); until then it is "refused": pulls read its initial
// values and pushes to it are dropped.
//
// Thread-compatible: SparseTable holds the stripe's mutex around every call.
#ifndef TAUPS_SERVER_STRIPE_ROWS_H_
#define TAUPS_SERVER_STRIPE_ROWS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace taups {

class StripeRows {
 public:
  StripeRows(size_t row_stride, size_t max_rows, uint32_t admit_after);

  // The row of `key` (marked most recently used), or nullptr.
  float* Find(uint64_t key);
  // Storage for a new row of `key` (not present), evicting the least
  // recently used row if the stripe is full; nullptr if the key is not
  // admitted yet. The caller fills the returned row.
  float* Create(uint64_t key);

  size_t size() const { return slot_of_.size(); }
  uint64_t evictions() const { return evictions_; }
  uint64_t refused() const { return refused_; }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr int kSketchDepth = 4;
  static constexpr int kSketchWidth = 4096;

  void Unlink(uint32_t slot);
  void PushFront(uint32_t slot);
  // Counts one sighting; returns the key's estimated sightings so far.
  uint32_t Sight(uint64_t key);

  const size_t row_stride_;
  const size_t max_rows_;     // 0 = unbounded
  const uint32_t admit_after_;
  absl::flat_hash_map<uint64_t, uint32_t> slot_of_;
  std::vector<float> arena_;
  std::vector<uint64_t> key_of_;  // per slot
  std::vector<uint32_t> prev_, next_;  // LRU list, head = most recent
  uint32_t head_ = kNil, tail_ = kNil;
  std::vector<std::array<uint16_t, kSketchWidth>> sketch_;  // empty if unused
  uint64_t evictions_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace taups

#endif  // TAUPS_SERVER_STRIPE_ROWS_H_

// LiveClocks: a table part's worker clocks (steps completed) and which
// workers are live, kept with a count of live workers per clock, so the
// smallest live clock — what SSP asks on every pull and every join — is read
// in O(log W) instead of walking the W live workers.
//
// A live worker the clocks do not know counts as clock 0 (as a worker that
// has not completed a step), without being added to clocks().
//
// Thread-compatible: PolicyState holds one, under the controller's mutex.
#ifndef TAUPS_SERVER_LIVE_CLOCKS_H_
#define TAUPS_SERVER_LIVE_CLOCKS_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace taups {

class LiveClocks {
 public:
  const absl::flat_hash_set<uint32_t>& live() const { return live_; }
  const absl::flat_hash_map<uint32_t, uint64_t>& clocks() const {
    return clocks_;
  }
  // The worker's clock; 0 when the clocks do not know it.
  uint64_t ClockOf(uint32_t worker) const;

  // Membership changed: exactly `live` are live now (duplicates ignored).
  // O(W).
  void SetLive(const std::vector<uint32_t>& live);
  // Raises the worker's clock to at least `clock`, adding it to the clocks
  // if they did not know it; returns the clock now. O(log W).
  uint64_t Raise(uint32_t worker, uint64_t clock);
  // A restore: the clocks become exactly `clocks` (liveness is kept). O(W).
  void ReplaceClocks(const std::map<uint32_t, uint64_t>& clocks);

  // The smallest clock of a live worker other than `excluding` (-1: none
  // excluded); UINT64_MAX when there is none. O(log W).
  uint64_t MinLive(int64_t excluding) const;
  // The live workers at clock `clock`, in id order. O(W).
  std::vector<uint32_t> LiveAt(uint64_t clock) const;

 private:
  void Recount();
  void Uncount(uint64_t clock);

  absl::flat_hash_set<uint32_t> live_;
  absl::flat_hash_map<uint32_t, uint64_t> clocks_;
  // clock -> how many live workers are at it (no zero counts).
  absl::btree_map<uint64_t, uint32_t> live_per_clock_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_LIVE_CLOCKS_H_

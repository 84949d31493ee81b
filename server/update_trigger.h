// UpdateTrigger: a shard's running count of applied updates (the sum of
// its tables' version steps), with one armed threshold that wakes a
// listener as soon as the count reaches it.
//
// The apply path calls Add after each group of changes it applied: one
// relaxed atomic add and one atomic load, with no lock and no syscall,
// except on the call that carries the count across the armed threshold,
// which disarms it (so exactly one call fires per Arm) and calls the wake
// under the trigger's own mutex. The checkpointer arms it at the start of
// each checkpoint (--checkpoint_every_versions) and waits on its own
// condition, which the wake sets.
//
// Thread-safe. Lock order: the wake runs under mu_, so it may take only
// leaf locks (the checkpointer's steps_mu_); Add must not be called with a
// lock the wake takes. SetWake returns once no call of the previous wake
// runs, so a listener that sets nullptr before it goes is never called
// after.
#ifndef TAUPS_SERVER_UPDATE_TRIGGER_H_
#define TAUPS_SERVER_UPDATE_TRIGGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>

#include "absl/synchronization/mutex.h"

namespace taups {

class UpdateTrigger {
 public:
  static constexpr uint64_t kDisarmed = std::numeric_limits<uint64_t>::max();

  // `n` more updates were applied.
  void Add(uint64_t n) {
    if (n == 0) return;
    const uint64_t total = total_.fetch_add(n, std::memory_order_relaxed) + n;
    if (total >= threshold_.load(std::memory_order_relaxed)) Fire(total);
  }
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }
  // The wake is called once, by the Add that brings total() to `threshold`
  // or beyond (the next Add, if it is there already). Replaces an earlier
  // arm; kDisarmed: none.
  void Arm(uint64_t threshold) {
    threshold_.store(threshold, std::memory_order_relaxed);
  }
  uint64_t armed() const { return threshold_.load(std::memory_order_relaxed); }
  // Empty: no one is woken (the count and the arm go on).
  void SetWake(std::function<void()> wake) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Fire(uint64_t total) ABSL_LOCKS_EXCLUDED(mu_);

  std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> threshold_{kDisarmed};
  absl::Mutex mu_;
  std::function<void()> wake_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_UPDATE_TRIGGER_H_

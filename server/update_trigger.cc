#include "server/update_trigger.h"

#include <utility>

namespace taups {

void UpdateTrigger::SetWake(std::function<void()> wake) {
  absl::MutexLock lock(&mu_);
  wake_ = std::move(wake);
}

void UpdateTrigger::Fire(uint64_t total) {
  // Of the calls that crossed the threshold, the one that disarms it wakes.
  uint64_t threshold = threshold_.load(std::memory_order_relaxed);
  while (total >= threshold) {
    if (threshold_.compare_exchange_weak(threshold, kDisarmed,
                                         std::memory_order_relaxed)) {
      absl::MutexLock lock(&mu_);
      if (wake_) wake_();
      return;
    }
  }
}

}  // namespace taups

// Time as a dependency: the server core reads the time only through a Clock,
// so tests and the simulation harness can drive leases and step timeouts
// deterministically, with no sleeps.
#ifndef TAUPS_COMMON_CLOCK_H_
#define TAUPS_COMMON_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace taups {

// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// Wall time.
class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  static RealClock* Get() {
    static RealClock clock;
    return &clock;
  }
};

// Time that moves only when told. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::UnixEpoch())
      : nanos_(absl::ToUnixNanos(start)) {}
  absl::Time Now() const override { return absl::FromUnixNanos(nanos_.load()); }
  void Advance(absl::Duration d) { nanos_ += absl::ToInt64Nanoseconds(d); }
  void Set(absl::Time t) { nanos_ = absl::ToUnixNanos(t); }

 private:
  std::atomic<int64_t> nanos_;
};

}  // namespace taups

#endif  // TAUPS_COMMON_CLOCK_H_

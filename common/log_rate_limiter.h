// Rate limiting of repeated log lines (a flood of "push rejected" or
// "heartbeat failed" warnings), with a count of what was held back.
//
// Occurrences are grouped by a key the caller chooses (e.g. "reject:table").
// The first occurrence of a key is logged; later ones within `interval` of
// the last logged one are only counted; the first one after the interval is
// logged again, with the count:
//
//   push from worker 3 rejected: tau 9 > 8 (repeated 57 times in the last 10 s)
//
// Occurrences counted but never followed by a logged one are returned by
// TakeOverdue() once their interval has passed, for a periodic caller to
// report.
//
// Thread-safe. Time comes from the Clock given at construction.
#ifndef TAUPS_COMMON_LOG_RATE_LIMITER_H_
#define TAUPS_COMMON_LOG_RATE_LIMITER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "spdlog/spdlog.h"

namespace taups {

class LogRateLimiter {
 public:
  struct Verdict {
    bool log = false;         // log this occurrence
    uint64_t repeated = 0;    // occurrences held back since the last logged
    absl::Duration over;      // time since the last logged occurrence
  };
  struct Overdue {
    std::string key;
    uint64_t repeated = 0;
    absl::Duration over;
  };

  // `clock` must outlive the limiter. At most `max_keys` keys are tracked;
  // beyond that the oldest are forgotten (their next occurrence is logged as
  // a first one).
  explicit LogRateLimiter(const Clock* clock,
                          absl::Duration interval = absl::Seconds(10),
                          size_t max_keys = 1024);

  Verdict Admit(absl::string_view key);
  // Keys with held-back occurrences whose interval has passed without a
  // logged one (with `include_recent`, every key with held-back ones, for a
  // last report at exit); their counts restart at zero.
  std::vector<Overdue> TakeOverdue(bool include_recent = false);

  absl::Duration interval() const { return interval_; }

 private:
  struct KeyState {
    absl::Time last_logged;
    uint64_t repeated = 0;
  };
  void ForgetOldestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const absl::Duration interval_;
  const size_t max_keys_;
  absl::Mutex mu_;
  // Every key seen recently, guarded by mu_.
  absl::flat_hash_map<std::string, KeyState> keys_ ABSL_GUARDED_BY(mu_);
};

// The process-wide limiter (wall clock, 10 s) that warnings of the shard and
// worker go through unless a component keeps its own; ShardServer's ticker
// and the worker's progress lines report its overdue repeats.
LogRateLimiter& DefaultLogRateLimiter();

// " (repeated 57 times in the last 10 s)", or "" when nothing was held back.
std::string RepeatSuffix(uint64_t repeated, absl::Duration over);

// Logs `fmt` at `level` through spdlog's default logger when `limiter`
// admits `key`, with RepeatSuffix appended. The message is formatted only
// when it is logged.
template <typename... Args>
void LogRateLimited(LogRateLimiter& limiter, spdlog::level::level_enum level,
                    absl::string_view key,
                    spdlog::format_string_t<Args...> fmt, Args&&... args) {
  const LogRateLimiter::Verdict verdict = limiter.Admit(key);
  if (!verdict.log) return;
  spdlog::log(level, "{}{}", fmt::format(fmt, std::forward<Args>(args)...),
              RepeatSuffix(verdict.repeated, verdict.over));
}

// Logs one line per overdue key of `limiter` at `level` (see TakeOverdue):
//   "<key>: repeated 12 more times in the last 10 s"
void LogOverdueRepeats(LogRateLimiter& limiter,
                       spdlog::level::level_enum level,
                       bool include_recent = false);

}  // namespace taups

#endif  // TAUPS_COMMON_LOG_RATE_LIMITER_H_

#include "common/log_rate_limiter.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace taups {
namespace {

std::string Seconds(absl::Duration d) {
  return absl::StrCat(std::llround(absl::ToDoubleSeconds(d)), " s");
}

}  // namespace

LogRateLimiter::LogRateLimiter(const Clock* clock, absl::Duration interval,
                               size_t max_keys)
    : clock_(clock), interval_(interval), max_keys_(max_keys > 0 ? max_keys : 1) {}

LogRateLimiter::Verdict LogRateLimiter::Admit(absl::string_view key) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (keys_.size() >= max_keys_) ForgetOldestLocked();
    keys_.emplace(std::string(key), KeyState{now, 0});
    return Verdict{true, 0, absl::ZeroDuration()};
  }
  KeyState& state = it->second;
  if (now - state.last_logged < interval_) {
    ++state.repeated;
    return Verdict{false, state.repeated, now - state.last_logged};
  }
  Verdict verdict{true, state.repeated, now - state.last_logged};
  state = KeyState{now, 0};
  return verdict;
}

std::vector<LogRateLimiter::Overdue> LogRateLimiter::TakeOverdue(
    bool include_recent) {
  const absl::Time now = clock_->Now();
  std::vector<Overdue> overdue;
  absl::MutexLock lock(&mu_);
  for (auto& [key, state] : keys_) {
    if (state.repeated > 0 &&
        (include_recent || now - state.last_logged >= interval_)) {
      overdue.push_back(Overdue{key, state.repeated, now - state.last_logged});
      // The report stands for a logged occurrence: a new window opens.
      state = KeyState{now, 0};
    }
  }
  return overdue;
}

void LogRateLimiter::ForgetOldestLocked() {
  auto oldest = keys_.begin();
  for (auto it = keys_.begin(); it != keys_.end(); ++it) {
    if (it->second.last_logged < oldest->second.last_logged) oldest = it;
  }
  if (oldest != keys_.end()) keys_.erase(oldest);
}

LogRateLimiter& DefaultLogRateLimiter() {
  static LogRateLimiter* const limiter = new LogRateLimiter(RealClock::Get());
  return *limiter;
}

std::string RepeatSuffix(uint64_t repeated, absl::Duration over) {
  if (repeated == 0) return "";
  return absl::StrCat(" (repeated ", repeated,
                      repeated == 1 ? " time" : " times", " in the last ",
                      Seconds(over), ")");
}

void LogOverdueRepeats(LogRateLimiter& limiter,
                       spdlog::level::level_enum level, bool include_recent) {
  for (const LogRateLimiter::Overdue& o : limiter.TakeOverdue(include_recent)) {
    spdlog::log(level, "{}: repeated {} more {} in the last {}", o.key,
                o.repeated, o.repeated == 1 ? "time" : "times",
                Seconds(o.over));
  }
}

}  // namespace taups

#include "server/version_clock.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace taups {
namespace {
// A multi-slice push whose remaining slices have not come within this time is
// forgotten (its sender died or gave up); its applied slices stay applied.
constexpr absl::Duration kAbandonedPushAge = absl::Minutes(2);
}  // namespace

uint64_t VersionClock::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

StalenessStats VersionClock::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::StatusOr<PushOutcome> VersionClock::StampSlice(const PushOrigin& origin,
                                                     uint64_t base_version,
                                                     uint32_t slices_in_push) {
  absl::MutexLock lock(&mu_);
  if (slices_in_push > 1) {
    auto it = pending_.find(KeyOf(origin));
    if (it != pending_.end()) return it->second.stamp;
  }
  if (base_version > version_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "base_version ", base_version, " is ahead of this shard's version ",
        version_, " (the shard restarted?); pull again before pushing"));
  }
  PushOutcome stamp;
  stamp.tau = version_ - base_version;
  stamp.new_version = version_;
  ++stats_.pushes;
  stats_.tau_sum += stamp.tau;
  stats_.tau_max = std::max(stats_.tau_max, stamp.tau);
  if (slices_in_push > 1) {
    const absl::Time now = absl::Now();
    ForgetAbandonedLocked(now);
    pending_[KeyOf(origin)] = PendingPush{stamp, slices_in_push, now};
  }
  return stamp;
}

uint64_t VersionClock::FinishSlice(const PushOrigin& origin,
                                   uint32_t slices_in_push) {
  absl::MutexLock lock(&mu_);
  if (slices_in_push > 1) {
    auto it = pending_.find(KeyOf(origin));
    if (it == pending_.end() || --it->second.slices_left > 0) return version_;
    pending_.erase(it);
  }
  return ++version_;
}

void VersionClock::ForgetAbandonedLocked(absl::Time now) {
  if (pending_.size() < 64) return;
  absl::erase_if(pending_, [now](const auto& entry) {
    return now - entry.second.first_seen > kAbandonedPushAge;
  });
}

}  // namespace taups

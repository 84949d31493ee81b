#include "server/pull_waiters.h"

namespace taups {

void PullWaiters::RunAll(std::vector<Woken>& woken) {
  for (Woken& w : woken) std::move(w.wake)(std::move(w.status));
  woken.clear();
}

uint64_t PullWaiters::Add(uint32_t worker, uint64_t clock, absl::Time deadline,
                          Wake wake) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  parked_.emplace(id, Parked{worker, clock, deadline, std::move(wake)});
  by_deadline_.emplace(deadline, id);
  size_.store(parked_.size(), std::memory_order_release);
  return id;
}

PullWaiters::Woken PullWaiters::TakeLocked(
    std::map<uint64_t, Parked>::iterator it, absl::Status status) {
  by_deadline_.erase({it->second.deadline, it->first});
  Woken woken{std::move(it->second.wake), std::move(status)};
  parked_.erase(it);
  size_.store(parked_.size(), std::memory_order_release);
  return woken;
}

std::vector<PullWaiters::Woken> PullWaiters::TakeReady(
    absl::FunctionRef<bool(uint32_t, uint64_t)> ready) {
  std::vector<Woken> woken;
  absl::MutexLock lock(&mu_);
  for (auto it = parked_.begin(); it != parked_.end();) {
    auto next = std::next(it);
    if (ready(it->second.worker, it->second.clock)) {
      woken.push_back(TakeLocked(it, absl::OkStatus()));
    }
    it = next;
  }
  return woken;
}

std::vector<PullWaiters::Woken> PullWaiters::TakeExpired(
    absl::Time now, absl::FunctionRef<absl::Status(uint32_t, uint64_t)> why) {
  std::vector<Woken> woken;
  absl::MutexLock lock(&mu_);
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    auto it = parked_.find(by_deadline_.begin()->second);
    woken.push_back(
        TakeLocked(it, why(it->second.worker, it->second.clock)));
  }
  return woken;
}

std::optional<PullWaiters::Woken> PullWaiters::Take(uint64_t id,
                                                    absl::Status status) {
  absl::MutexLock lock(&mu_);
  auto it = parked_.find(id);
  if (it == parked_.end()) return std::nullopt;
  return TakeLocked(it, std::move(status));
}

std::vector<PullWaiters::Woken> PullWaiters::TakeAll(const absl::Status& status) {
  std::vector<Woken> woken;
  absl::MutexLock lock(&mu_);
  while (!parked_.empty()) woken.push_back(TakeLocked(parked_.begin(), status));
  return woken;
}

void ParkedPull::Cancel() const {
  const std::shared_ptr<PullWaiters> waiters = waiters_.lock();
  if (waiters == nullptr || id_ == 0) return;
  std::optional<PullWaiters::Woken> woken = waiters->Take(
      id_, absl::CancelledError("the call was cancelled while its pull waited"));
  if (woken) std::move(woken->wake)(std::move(woken->status));
}

}  // namespace taups

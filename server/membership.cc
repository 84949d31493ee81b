#include "server/membership.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace taups {

Membership::Membership(const Clock* clock, absl::Duration default_lease,
                       absl::Duration max_lease)
    : clock_(clock), default_lease_(default_lease), max_lease_(max_lease) {}

Membership::Registration Membership::Register(uint32_t worker,
                                              uint64_t incarnation,
                                              absl::Duration lease) {
  Registration result;
  result.lease = std::min(
      lease > absl::ZeroDuration() ? lease : default_lease_, max_lease_);
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = workers_.try_emplace(worker);
  WorkerStatus& w = it->second;
  result.rejoined = !inserted;
  if (!inserted && w.live && w.incarnation != incarnation) {
    spdlog::warn("worker {} re-registered with a new incarnation {:016x}; "
                 "the old one ({:016x}) is gone",
                 worker, incarnation, w.incarnation);
  } else if (!inserted && w.awaited) {
    spdlog::info("worker {} registered again after the shard's restore",
                 worker);
  } else if (!inserted && !w.live) {
    spdlog::info("worker {} rejoined after {}", worker,
                 w.left ? "leaving" : "being declared dead");
  }
  w.awaited = false;
  w.registered = true;
  w.left = false;
  w.evicted = false;
  w.worker_id = worker;
  w.incarnation = incarnation;
  w.live = true;
  w.last_seen = clock_->Now();
  w.lease = result.lease;
  return result;
}

bool Membership::Heartbeat(uint32_t worker, uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(worker);
  if (it == workers_.end() || !it->second.live ||
      it->second.incarnation != incarnation) {
    return false;
  }
  it->second.last_seen = clock_->Now();
  return true;
}

bool Membership::Leave(uint32_t worker, uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.incarnation != incarnation) {
    return false;
  }
  if (it->second.live) {
    spdlog::info("worker {} (incarnation {:016x}) left", worker, incarnation);
  }
  it->second.live = false;
  it->second.left = true;
  it->second.last_seen = clock_->Now();
  return true;
}

Membership::Eviction Membership::Evict(uint32_t worker) {
  Eviction result;
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(worker);
  if (it == workers_.end()) return result;
  WorkerStatus& w = it->second;
  result.known = true;
  result.was_live = w.live;
  if (w.live) {
    spdlog::warn("worker {} (incarnation {:016x}) evicted by an admin; it leaves "
                 "every barrier and quorum until it registers again",
                 worker, w.incarnation);
  }
  w.live = false;
  w.awaited = false;
  w.evicted = !w.left;  // one that left stays recorded as having left
  return result;
}

void Membership::AwaitReturning(const std::vector<uint32_t>& workers,
                                absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  for (uint32_t id : workers) {
    auto [it, inserted] = workers_.try_emplace(id);
    if (!inserted) continue;
    WorkerStatus& w = it->second;
    w.worker_id = id;
    w.awaited = true;
    w.last_seen = clock_->Now();
    w.lease = grace;
  }
}

std::vector<uint32_t> Membership::Expire() {
  const absl::Time now = clock_->Now();
  std::vector<uint32_t> died;
  absl::MutexLock lock(&mu_);
  for (auto& [id, w] : workers_) {
    if (w.awaited && now - w.last_seen > w.lease) {
      w.awaited = false;
      died.push_back(id);
      spdlog::warn(
          "worker {} did not register again within {} of the shard's restore; "
          "steps no longer wait for it", id, absl::FormatDuration(w.lease));
      continue;
    }
    if (w.live && now - w.last_seen > w.lease) {
      w.live = false;
      ++lease_expirations_;
      died.push_back(id);
      spdlog::warn(
          "worker {} declared DEAD: no heartbeat for {} (lease {}, last seen "
          "{}); it leaves every barrier and quorum until it registers again",
          id, absl::FormatDuration(now - w.last_seen),
          absl::FormatDuration(w.lease),
          absl::FormatTime("%Y-%m-%d %H:%M:%E3S", w.last_seen,
                           absl::UTCTimeZone()));
    }
  }
  std::sort(died.begin(), died.end());
  return died;
}

bool Membership::IsLive(uint32_t worker) const {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(worker);
  return it != workers_.end() && it->second.live;
}

MembershipView Membership::View() const {
  MembershipView view;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, w] : workers_) {
      if (w.live) view.live.push_back(id);
      if (w.awaited) view.awaited.push_back(id);
      view.ever_registered += w.registered ? 1 : 0;
    }
  }
  std::sort(view.live.begin(), view.live.end());
  std::sort(view.awaited.begin(), view.awaited.end());
  return view;
}

std::vector<WorkerStatus> Membership::Workers() const {
  std::vector<WorkerStatus> all;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, w] : workers_) all.push_back(w);
  std::sort(all.begin(), all.end(),
            [](const WorkerStatus& a, const WorkerStatus& b) {
              return a.worker_id < b.worker_id;
            });
  return all;
}

uint64_t Membership::lease_expirations() const {
  absl::MutexLock lock(&mu_);
  return lease_expirations_;
}

}  // namespace taups

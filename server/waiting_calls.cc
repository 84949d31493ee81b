#include "server/waiting_calls.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/limits.h"
#include "taups/table_config.h"

namespace taups {

WaitingCalls::Seat::Seat(Seat&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), worker_(other.worker_) {}

WaitingCalls::Seat& WaitingCalls::Seat::operator=(Seat&& other) noexcept {
  if (this != &other) {
    Leave();
    owner_ = std::exchange(other.owner_, nullptr);
    worker_ = other.worker_;
  }
  return *this;
}

void WaitingCalls::Seat::Leave() {
  if (owner_ != nullptr) owner_->Leave(worker_);
  owner_ = nullptr;
}

absl::StatusOr<WaitingCalls::Seat> WaitingCalls::Enter(uint32_t worker,
                                                       absl::string_view table) {
  absl::MutexLock lock(&mu_);
  if (counts_.waiting >= max_total_) {
    ++counts_.refused_total;
    return absl::ResourceExhaustedError(absl::StrCat(
        "table ", QuotedName(table), ": a pull by worker ", worker,
        " would wait beside ", WithThousands(counts_.waiting),
        " waiting pulls, the most this shard holds (--max_waiting_calls); ",
        "retry later or give the pull a shorter deadline"));
  }
  auto it = per_worker_.find(worker);
  const uint64_t mine = it == per_worker_.end() ? 0 : it->second;
  if (mine >= max_per_worker_) {
    ++counts_.refused_per_worker;
    return absl::ResourceExhaustedError(absl::StrCat(
        "table ", QuotedName(table), ": worker ", worker, " already has ", mine,
        " pulls waiting on this shard, the most one worker may have ",
        "(--max_waiting_per_worker)"));
  }
  ++per_worker_[worker];
  ++counts_.waiting;
  return Seat(this, worker);
}

void WaitingCalls::Leave(uint32_t worker) {
  absl::MutexLock lock(&mu_);
  auto it = per_worker_.find(worker);
  if (it == per_worker_.end()) return;
  if (--it->second == 0) per_worker_.erase(it);
  --counts_.waiting;
}

WaitingCalls::Counts WaitingCalls::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

}  // namespace taups

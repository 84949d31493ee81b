#include "server/worker_drains.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace taups {

bool WorkerDrains::Closed(const Pending& pending) {
  std::shared_ptr<Partition> partition = pending.partition.lock();
  if (partition == nullptr) return true;  // dropped
  const ConsistencyKind kind = partition->consistency().kind;
  if (kind != ConsistencyKind::kSync && kind != ConsistencyKind::kSemiSync) {
    return true;  // switched to a policy without steps
  }
  return partition->open_step() > pending.step;
}

void WorkerDrains::Start(uint32_t worker, std::vector<Pending> tables) {
  absl::MutexLock lock(&mu_);
  Drain& drain = drains_[worker];
  if (drain.out) return;  // already drained: stays out
  if (drain.tables.empty()) draining_.fetch_add(1);
  drain.tables = std::move(tables);
  if (drain.tables.empty()) {
    // Nothing to finish: out at the next Finish().
    drain.tables.push_back(Pending{});
  }
}

bool WorkerDrains::Contains(uint32_t worker) const {
  absl::MutexLock lock(&mu_);
  return drains_.contains(worker);
}

absl::Status WorkerDrains::CheckRegistration(uint32_t worker) const {
  if (!Contains(worker)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "worker ", worker, " was drained from shard ", shard_index_,
      " by an admin (psctl evict --drain); it may not register again until "
      "the shard restarts"));
}

absl::Status WorkerDrains::CheckPush(uint32_t worker, absl::string_view table,
                                     uint64_t clock) const {
  absl::MutexLock lock(&mu_);
  auto it = drains_.find(worker);
  if (it == drains_.end()) return absl::OkStatus();
  if (it->second.out) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", worker, " was drained from shard ", shard_index_,
        " by an admin; its pushes are refused"));
  }
  for (const Pending& pending : it->second.tables) {
    if (pending.table == table && clock > pending.step) {
      return absl::FailedPreconditionError(absl::StrCat(
          "worker ", worker, " is being drained from shard ", shard_index_,
          ": step ", pending.step, " of table '", table,
          "' was its last; this push for step ", clock, " is refused"));
    }
  }
  return absl::OkStatus();
}

std::vector<uint32_t> WorkerDrains::Finish() {
  std::vector<uint32_t> finished;
  if (draining_.load() == 0) return finished;
  absl::MutexLock lock(&mu_);
  for (auto& [worker, drain] : drains_) {
    if (drain.out) continue;
    bool all_closed = true;
    for (const Pending& pending : drain.tables) all_closed &= Closed(pending);
    if (!all_closed) continue;
    drain.out = true;
    drain.tables.clear();
    draining_.fetch_sub(1);
    finished.push_back(worker);
  }
  return finished;
}

std::vector<uint32_t> WorkerDrains::Draining() const {
  std::vector<uint32_t> draining;
  absl::MutexLock lock(&mu_);
  for (const auto& [worker, drain] : drains_) {
    if (!drain.out) draining.push_back(worker);
  }
  return draining;
}

std::vector<std::string> WorkerDrains::TablesOf(uint32_t worker) const {
  std::vector<std::string> tables;
  absl::MutexLock lock(&mu_);
  auto it = drains_.find(worker);
  if (it == drains_.end() || it->second.out) return tables;
  for (const Pending& pending : it->second.tables) {
    if (!pending.table.empty() && !Closed(pending)) tables.push_back(pending.table);
  }
  return tables;
}

}  // namespace taups

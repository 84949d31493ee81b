#include "server/table_workers.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "taups/table_config.h"

namespace taups {

TableWorkers::TableWorkers(std::string table, MemoryBudget* budget,
                           const ServerLimits& limits)
    : table_(std::move(table)), budget_(budget), limits_(limits) {}

absl::Status TableWorkers::OverBudget(uint32_t worker, uint64_t bytes,
                                      uint64_t copy_bytes) const {
  return absl::ResourceExhaustedError(absl::StrCat(
      "table ", QuotedName(table_), ": worker ", worker, "'s state needs ",
      HumanBytes(bytes),
      copy_bytes > 0
          ? absl::StrCat(" (delay compensation's copy of ",
                         WithThousands(copy_bytes / 4), " floats)")
          : "",
      "; ", BudgetInUse(*budget_)));
}

absl::Status TableWorkers::Admit(uint32_t worker, uint64_t copy_bytes) {
  absl::MutexLock lock(&mu_);
  if (closed_) {
    return absl::NotFoundError(
        absl::StrCat("table ", QuotedName(table_), " was dropped"));
  }
  auto it = seats_.find(worker);
  if (it != seats_.end()) {
    if (copy_bytes == 0 || it->second) return absl::OkStatus();
    if (!budget_->TryReserve(BudgetUse::kWorkerState, copy_bytes)) {
      return OverBudget(worker, copy_bytes, copy_bytes);
    }
    it->second = true;
    charged_ += copy_bytes;
    return absl::OkStatus();
  }
  if (absl::Status s = CheckTableWorkers(table_, worker, seats_.size(), limits_);
      !s.ok()) {
    return s;
  }
  const uint64_t bytes = ServerLimits::kWorkerSeatBytes + copy_bytes;
  if (!budget_->TryReserve(BudgetUse::kWorkerState, bytes)) {
    return OverBudget(worker, bytes, copy_bytes);
  }
  seats_.emplace(worker, copy_bytes > 0);
  charged_ += bytes;
  return absl::OkStatus();
}

uint64_t TableWorkers::Close() {
  absl::MutexLock lock(&mu_);
  const uint64_t freed = charged_;
  budget_->Release(BudgetUse::kWorkerState, charged_);
  charged_ = 0;
  closed_ = true;
  seats_.clear();
  return freed;
}

uint64_t TableWorkers::workers() const {
  absl::MutexLock lock(&mu_);
  return seats_.size();
}

uint64_t TableWorkers::charged_bytes() const {
  absl::MutexLock lock(&mu_);
  return charged_;
}

}  // namespace taups

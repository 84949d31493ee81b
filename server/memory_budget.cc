#include "server/memory_budget.h"

#include <utility>

namespace taups {
namespace {

// Subtracts `bytes` from `counter`, stopping at 0.
void SaturatingSub(std::atomic<uint64_t>& counter, uint64_t bytes) {
  uint64_t now = counter.load(std::memory_order_relaxed);
  while (!counter.compare_exchange_weak(now, now > bytes ? now - bytes : 0,
                                        std::memory_order_relaxed)) {
  }
}

}  // namespace

const char* BudgetUseName(BudgetUse use) {
  switch (use) {
    case BudgetUse::kTables:
      return "tables";
    case BudgetUse::kWorkerState:
      return "worker_state";
    case BudgetUse::kStaged:
      return "staged";
    case BudgetUse::kRollback:
      return "rollback";
  }
  return "unknown";
}

uint64_t MemoryBudget::available() const {
  const uint64_t taken = used();
  return taken < limit_ ? limit_ - taken : 0;
}

namespace {

// Adds `bytes` to `counter` if the sum stays <= `limit`.
bool AddWithin(std::atomic<uint64_t>& counter, uint64_t bytes, uint64_t limit) {
  uint64_t now = counter.load(std::memory_order_relaxed);
  do {
    if (now > limit || bytes > limit - now) return false;
  } while (!counter.compare_exchange_weak(now, now + bytes,
                                          std::memory_order_relaxed));
  return true;
}

}  // namespace

bool MemoryBudget::TryReserve(BudgetUse use, uint64_t bytes) {
  std::atomic<uint64_t>& mine = by_use_[static_cast<int>(use)];
  // The use's share first, then the total; the share is given back if the
  // total has no room (a concurrent reserver of the same use may then see
  // it full for an instant and be refused: never the other way round).
  if (AddWithin(mine, bytes, caps_[static_cast<int>(use)])) {
    if (AddWithin(used_, bytes, limit_)) return true;
    SaturatingSub(mine, bytes);
  }
  refusals_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void MemoryBudget::Release(BudgetUse use, uint64_t bytes) {
  SaturatingSub(by_use_[static_cast<int>(use)], bytes);
  SaturatingSub(used_, bytes);
}

Reservation::Reservation(MemoryBudget* budget, BudgetUse use, uint64_t bytes)
    : use_(use), bytes_(bytes) {
  if (budget->TryReserve(use, bytes)) {
    budget_ = budget;
  } else {
    bytes_ = 0;
  }
}

Reservation::Reservation(Reservation&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      use_(other.use_),
      bytes_(std::exchange(other.bytes_, 0)) {}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    use_ = other.use_;
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Reservation::Release() {
  if (budget_ != nullptr) budget_->Release(use_, bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

}  // namespace taups

// MemoryBudget: the bytes one shard may hold for what clients make it
// allocate, and how many of them are taken, by use.
//
// Every charge is made before the memory it stands for is allocated:
// TryReserve takes the bytes only if they fit beside what is already taken
// and within their use's cap (all or nothing), so a refused caller allocates
// nothing and the total never passes the limit. A cap keeps part of the
// budget for the other uses: ParameterStore lets tables take at most 7/8 of
// it, so workers can always get their state in tables that filled the rest. Release gives bytes back when
// what they stood for is freed. Reservation is the RAII form: it holds its
// bytes until it is destroyed (or Released).
//
// What is charged, by use (ParameterStore makes the charges):
//   kTables       each table part's cost at creation (limits.h CostOf:
//                 dense values + optimizer state; sparse rows at their row
//                 limit x measured bytes per row, plus fixed per-table bytes)
//   kWorkerState  per (table, worker) bookkeeping, and delay compensation's
//                 copy of the shard's range for each worker that pulls a DC
//                 table
//   kStaged       slices of multi-slice pushes waiting for their other
//                 slices (StagedPushes), while they wait
//   kRollback     an admin Rollback's loaded checkpoint and the undo copies
//                 of the parts it restores, from before the checkpoint is
//                 read until the call returns (ShardCalls::Rollback)
//
// Thread-safe and lock-free: the counters are atomics, TryReserve is a
// compare-and-swap loop on the total.
#ifndef TAUPS_SERVER_MEMORY_BUDGET_H_
#define TAUPS_SERVER_MEMORY_BUDGET_H_

#include <array>
#include <atomic>
#include <cstdint>

namespace taups {

enum class BudgetUse { kTables = 0, kWorkerState = 1, kStaged = 2, kRollback = 3 };
inline constexpr int kBudgetUses = 4;
// "tables", "worker_state", "staged", "rollback"
const char* BudgetUseName(BudgetUse use);

class MemoryBudget {
 public:
  // Each use may take up to `limit_bytes`; caps lower that per use.
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {
    caps_.fill(limit_bytes);
  }
  MemoryBudget(uint64_t limit_bytes, std::array<uint64_t, kBudgetUses> caps)
      : limit_(limit_bytes), caps_(caps) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  uint64_t limit() const { return limit_; }
  uint64_t cap(BudgetUse use) const { return caps_[static_cast<int>(use)]; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t used(BudgetUse use) const {
    return by_use_[static_cast<int>(use)].load(std::memory_order_relaxed);
  }
  uint64_t available() const;
  // Charges refused so far (TryReserve returning false).
  uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

  // Takes `bytes` for `use` if used() + bytes <= limit() and used(use) +
  // bytes <= cap(use); otherwise takes nothing, counts a refusal and
  // returns false. Zero bytes always fit.
  bool TryReserve(BudgetUse use, uint64_t bytes);
  // Gives back bytes taken for `use`. Releasing more than was taken is a
  // caller bug: the counters saturate at 0 instead of wrapping.
  void Release(BudgetUse use, uint64_t bytes);

 private:
  const uint64_t limit_;
  std::array<uint64_t, kBudgetUses> caps_;  // set once, at construction
  std::atomic<uint64_t> used_{0};
  std::array<std::atomic<uint64_t>, kBudgetUses> by_use_{};
  std::atomic<uint64_t> refusals_{0};
};

// Bytes held on a MemoryBudget until destruction or Release(). Movable.
class Reservation {
 public:
  Reservation() = default;
  // Reserves on `budget`; ok() says whether it fit (if not, holds nothing).
  Reservation(MemoryBudget* budget, BudgetUse use, uint64_t bytes);
  Reservation(Reservation&& other) noexcept;
  Reservation& operator=(Reservation&& other) noexcept;
  ~Reservation() { Release(); }

  bool ok() const { return budget_ != nullptr; }
  uint64_t bytes() const { return bytes_; }
  void Release();

 private:
  MemoryBudget* budget_ = nullptr;
  BudgetUse use_ = BudgetUse::kTables;
  uint64_t bytes_ = 0;
};

}  // namespace taups

#endif  // TAUPS_SERVER_MEMORY_BUDGET_H_

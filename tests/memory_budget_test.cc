// MemoryBudget: all-or-nothing charges, releases, per-use figures, and a
// total that concurrent reservers never push past the limit.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "server/memory_budget.h"

namespace taups {
namespace {

TEST_CASE("a charge is taken whole or not at all") {
  MemoryBudget budget(1000);
  REQUIRE(budget.TryReserve(BudgetUse::kTables, 600));
  REQUIRE_FALSE(budget.TryReserve(BudgetUse::kTables, 401));
  REQUIRE(budget.used() == 600);
  REQUIRE(budget.refusals() == 1);
  REQUIRE(budget.TryReserve(BudgetUse::kWorkerState, 400));  // exactly full
  REQUIRE(budget.available() == 0);
  REQUIRE(budget.TryReserve(BudgetUse::kWorkerState, 0));
  REQUIRE_FALSE(budget.TryReserve(BudgetUse::kWorkerState, 1));
  REQUIRE(budget.used(BudgetUse::kTables) == 600);
  REQUIRE(budget.used(BudgetUse::kWorkerState) == 400);
  budget.Release(BudgetUse::kTables, 600);
  REQUIRE(budget.used() == 400);
  REQUIRE(budget.available() == 600);
  REQUIRE(budget.used(BudgetUse::kTables) == 0);
}

TEST_CASE("a use's cap keeps the rest of the budget for the other uses") {
  MemoryBudget budget(1000, {700, 1000});
  REQUIRE(budget.cap(BudgetUse::kTables) == 700);
  REQUIRE(budget.TryReserve(BudgetUse::kTables, 700));
  REQUIRE_FALSE(budget.TryReserve(BudgetUse::kTables, 1));  // its cap
  REQUIRE(budget.TryReserve(BudgetUse::kWorkerState, 300));  // the rest
  REQUIRE(budget.used() == 1000);
  budget.Release(BudgetUse::kTables, 100);
  // Room in the total, and within the cap.
  REQUIRE(budget.TryReserve(BudgetUse::kTables, 100));
  budget.Release(BudgetUse::kWorkerState, 300);
  // Room in the total but not in the cap: refused, nothing taken.
  REQUIRE_FALSE(budget.TryReserve(BudgetUse::kTables, 1));
  REQUIRE(budget.used() == 700);
  REQUIRE(budget.used(BudgetUse::kTables) == 700);
  // A use whose total has no room gives its share back.
  REQUIRE(budget.TryReserve(BudgetUse::kWorkerState, 300));
  budget.Release(BudgetUse::kTables, 50);
  REQUIRE(budget.TryReserve(BudgetUse::kWorkerState, 50));
  REQUIRE_FALSE(budget.TryReserve(BudgetUse::kTables, 10));
  REQUIRE(budget.used(BudgetUse::kTables) == 650);
  REQUIRE(budget.used() == 1000);
}

TEST_CASE("a charge larger than any budget is refused without wrapping") {
  MemoryBudget budget(1000);
  REQUIRE(budget.TryReserve(BudgetUse::kTables, 10));
  REQUIRE_FALSE(budget.TryReserve(BudgetUse::kTables, UINT64_MAX));
  REQUIRE_FALSE(budget.TryReserve(BudgetUse::kTables, UINT64_MAX - 5));
  REQUIRE(budget.used() == 10);
}

TEST_CASE("releasing more than was taken stops at zero") {
  MemoryBudget budget(1000);
  REQUIRE(budget.TryReserve(BudgetUse::kTables, 10));
  budget.Release(BudgetUse::kTables, 50);
  REQUIRE(budget.used() == 0);
  REQUIRE(budget.used(BudgetUse::kTables) == 0);
}

TEST_CASE("a Reservation gives its bytes back when destroyed or moved over") {
  MemoryBudget budget(100);
  {
    Reservation a(&budget, BudgetUse::kWorkerState, 70);
    REQUIRE(a.ok());
    Reservation refused(&budget, BudgetUse::kWorkerState, 31);
    REQUIRE_FALSE(refused.ok());
    REQUIRE(refused.bytes() == 0);
    REQUIRE(budget.used() == 70);
    Reservation b = std::move(a);
    REQUIRE_FALSE(a.ok());
    REQUIRE(b.bytes() == 70);
    REQUIRE(budget.used() == 70);
    Reservation c(&budget, BudgetUse::kTables, 30);
    c = std::move(b);  // c's 30 go back, b's 70 move in
    REQUIRE(budget.used() == 70);
    REQUIRE(budget.used(BudgetUse::kTables) == 0);
  }
  REQUIRE(budget.used() == 0);
}

TEST_CASE("concurrent reservers never take more than the limit") {
  constexpr uint64_t kLimit = 10'000;
  constexpr int kThreads = 8;
  constexpr int kTries = 20'000;
  MemoryBudget budget(kLimit);
  std::atomic<uint64_t> granted{0};
  std::atomic<uint64_t> peak_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const uint64_t bytes = 7 + t;  // uneven sizes
      for (int i = 0; i < kTries; ++i) {
        if (!budget.TryReserve(BudgetUse::kTables, bytes)) continue;
        granted.fetch_add(1);
        const uint64_t now = budget.used();
        uint64_t peak = peak_seen.load();
        while (now > peak && !peak_seen.compare_exchange_weak(peak, now)) {
        }
        if (i % 3 != 0) budget.Release(BudgetUse::kTables, bytes);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(peak_seen.load() <= kLimit);
  REQUIRE(budget.used() <= kLimit);
  REQUIRE(budget.used() == budget.used(BudgetUse::kTables));
  REQUIRE(granted.load() > 0);
  REQUIRE(budget.refusals() > 0);  // the kept thirds fill it
}

}  // namespace
}  // namespace taups

// TableWorkers: the workers that hold state in one table part (a worker
// clock, statistics, with delay compensation a copy of the shard's range),
// counted against ServerLimits::max_workers_per_table and charged to the
// shard's MemoryBudget (limits.h: kWorkerSeatBytes per worker, plus the
// delay-compensation copy once the worker pulls while the table uses it).
//
// Admit() is called before a pull or push does anything for its worker; a
// worker already admitted costs a hash lookup. Seats last as long as the
// table part (its per-worker state is never dropped before), and Close()
// gives every byte back when the table is dropped; a request that still
// holds the dropped part is then refused NOT_FOUND.
//
// Thread-safe: one mutex guards the seats.
#ifndef TAUPS_SERVER_TABLE_WORKERS_H_
#define TAUPS_SERVER_TABLE_WORKERS_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/limits.h"
#include "server/memory_budget.h"

namespace taups {

class TableWorkers {
 public:
  // `budget` must outlive this; `limits` is copied.
  TableWorkers(std::string table, MemoryBudget* budget,
               const ServerLimits& limits);
  TableWorkers(const TableWorkers&) = delete;
  TableWorkers& operator=(const TableWorkers&) = delete;
  ~TableWorkers() { Close(); }

  // Makes sure `worker` has a seat, and, when `copy_bytes` > 0 (the table
  // uses delay compensation and this is a dense pull), that its copy is
  // charged. RESOURCE_EXHAUSTED with the numbers past max_workers_per_table
  // or the budget (nothing charged); NOT_FOUND once closed.
  absl::Status Admit(uint32_t worker, uint64_t copy_bytes);

  // Gives back every byte charged and refuses later Admits. Returns the
  // bytes given back.
  uint64_t Close();

  uint64_t workers() const;
  uint64_t charged_bytes() const;

 private:
  absl::Status OverBudget(uint32_t worker, uint64_t bytes,
                          uint64_t copy_bytes) const;

  const std::string table_;
  MemoryBudget* const budget_;
  const ServerLimits limits_;
  mutable absl::Mutex mu_;
  // worker -> whether its delay-compensation copy is charged.
  absl::flat_hash_map<uint32_t, bool> seats_ ABSL_GUARDED_BY(mu_);
  uint64_t charged_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace taups

#endif  // TAUPS_SERVER_TABLE_WORKERS_H_

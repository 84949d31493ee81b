// ServerLimits: the sizes a shard checks every table and request against
// before it allocates anything for them, so that no request, however small
// on the wire, can make the shard allocate more than these allow.
//
//   what is bounded                         limit (flag of ps_server)
//   one table's part on this shard          max_table_bytes   (--max_table_mb)
//   everything charged to the shard's       memory_budget_bytes
//     MemoryBudget: every table's part, and           (--memory_budget_mb)
//     per-worker state (memory_budget.h)
//   rows of a sparse table with no bound    default_sparse_rows
//                                                   (--sparse_default_max_rows)
//   tables on this shard                    max_tables        (--max_tables)
//   keys in one sparse pull or push         max_keys_per_request
//                                                   (--max_keys_per_request)
//   bytes of one pull's answer              max_pull_bytes    (--max_pull_mb)
//   bytes of all pull answers made and not  max_pull_in_flight_bytes
//     yet read by their callers                  (--max_pull_in_flight_mb)
//     (server/answers_in_flight.h; refused UNAVAILABLE, as it passes)
//   values one encoded block decodes to     max_block_values  (--max_block_values)
//   characters of a table name              max_name_length   (--max_table_name_length)
//   worker ids a request may carry          max_workers       (--max_workers)
//     (each id seen gets a lease and per-table statistics)
//   distinct workers with state in one      max_workers_per_table
//     table part (pulled or pushed it)                (--max_workers_per_table)
//   pulls waiting for their policy at once  max_waiting_per_worker
//     per worker id, and in all              max_waiting_calls
//                                   (--max_waiting_per_worker, --max_waiting_calls)
//   seconds a worker's lease may last       max_lease_s       (--max_lease_s)
//     (a worker silent that long is declared dead and leaves every barrier:
//     a Register asking for more is refused, not clamped, and heartbeats
//     renew the lease granted, never more)
//   slices of unfinished multi-slice pushes max_staged_bytes  (--max_staged_mb)
//     held by one table part (PartitionLimits; the shard's worst case is
//     max_tables x this, held only until the push completes or times out)
//
// A table's part costs, on this shard:
//   dense:  4 × elements × (1 + optimizer state floats per parameter)
//   sparse: row limit × SparseTable::RowFootprintBytes(config), plus the
//           stripes' fixed bytes (and admission sketches when admission is on)
//   both:   + kTableFixedBytes (the partition, its policy and directory entry)
// (state floats: sgd 0, adagrad 1, momentum 1, ftrl 2, adam 3). The cost is
// charged to the budget when the table is created and given back by
// DropTable. Tables together may take 7/8 of the budget (TablesShareOf):
// the last eighth stays for per-worker state, so tables that filled their
// share still take new workers. A sparse table's rows are charged up front at its row limit, so
// row growth never needs more budget: at the limit a table evicts
// (sparse_eviction lru/lfu) or, with sparse_eviction none, refuses new rows
// (counted in sparse_refused) — the budget itself is never passed by growth.
// A sparse table created with neither sparse_max_rows nor sparse_max_bytes
// is not unbounded here: it gets the row limit default_sparse_rows, lowered
// to what max_table_bytes buys, and evicts beyond it like any bounded table;
// its config as the shard reports it carries that limit in sparse_max_rows.
// Each worker that first pulls or pushes a table part is charged
// kWorkerSeatBytes, plus, while the table uses delay compensation, a copy of
// the shard's dense range (4 bytes per element) — refused past the budget or
// past max_workers_per_table. The slices of pushes staged until their last
// slice are charged while they wait (and bounded per table part by
// max_staged_bytes); each worker incarnation's dedup window is charged its
// bound (DedupWindow::WindowBytes, about 40 KiB) at its first push to a
// table part, refused past the budget.
//
// A size over one of these limits is refused with RESOURCE_EXHAUSTED; a
// malformed request (a size the table cannot hold at all) with
// INVALID_ARGUMENT. Messages carry the numbers and name the flag.
//
// Plain value type with pure check functions; thread-compatible.
#ifndef TAUPS_SERVER_LIMITS_H_
#define TAUPS_SERVER_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/wire_tensor.h"
#include "server/memory_budget.h"
#include "taups/table_config.h"

namespace taups {

struct ServerLimits {
  // Allowed ranges (Validate; ps_server's flags, in their units).
  static constexpr uint64_t kMaxMb = uint64_t{1} << 24;  // 16 TiB
  static constexpr uint64_t kMinSparseRows = 64;         // one per stripe
  static constexpr uint64_t kMaxSparseRows = uint64_t{1} << 32;
  static constexpr uint64_t kMaxTables = 1 << 16;
  static constexpr uint64_t kMaxKeys = uint64_t{1} << 28;
  // gRPC holds a message size in an int: 2047 MiB is the most it sends.
  static constexpr uint64_t kMaxPullMb = 2047;
  static constexpr uint64_t kMaxBlockValues = uint64_t{1} << 30;
  static constexpr uint64_t kMaxWorkers = uint64_t{1} << 20;
  static constexpr uint64_t kMaxWaitingCalls = uint64_t{1} << 20;
  static constexpr double kMaxLeaseS = 3600;
  // Measured, not guessed (budget_store_test "[.measure]" prints them:
  // resident bytes of 2,000 empty tables and of 20,000 workers' first pull
  // and push of one table): a dense table of 8 floats took 46.3 KB (its
  // partition, policy, dedup window and directory entry), an empty sparse
  // table 132.5 KB (counted as its stripes' 128 KiB + this), a worker
  // 20.8 KB (its clock, statistics and dedup entries); rounded up.
  static constexpr uint64_t kTableFixedBytes = 48 << 10;
  static constexpr uint64_t kWorkerSeatBytes = 24 << 10;

  uint64_t max_table_bytes = uint64_t{2} << 30;   // 2 GiB
  // ps_server's default is DefaultMemoryBudget(); 16 GiB here.
  uint64_t memory_budget_bytes = uint64_t{16} << 30;
  uint64_t default_sparse_rows = uint64_t{1} << 22;  // 4,194,304 rows
  uint64_t max_tables = 1024;
  uint64_t max_keys_per_request = uint64_t{1} << 22;
  uint64_t max_pull_bytes = uint64_t{256} << 20;  // 256 MiB
  // Not below max_pull_bytes.
  uint64_t max_pull_in_flight_bytes = uint64_t{4} << 30;  // 4 GiB
  uint64_t max_block_values = kMaxDecodedElements;  // 2^26
  uint64_t max_name_length = kMaxTableNameLength;   // 128
  uint64_t max_staged_bytes = uint64_t{1} << 30;    // 1 GiB
  uint64_t max_workers = 65536;  // worker ids [0, max_workers), as ps_worker
  uint64_t max_workers_per_table = 1024;
  uint64_t max_waiting_per_worker = 16;
  uint64_t max_waiting_calls = 256;
  // In (0, kMaxLeaseS]; ps_server's --lease_s (the default lease) must not
  // exceed it.
  double max_lease_s = 60;

  // INVALID_ARGUMENT naming the first limit outside its range (or a table
  // limit above the shard's).
  absl::Status Validate() const;
};

// What one table's part costs on this shard, and why (for messages).
struct TableCost {
  uint64_t bytes = 0;
  uint64_t elements = 0;     // dense: this shard's floats; sparse: rows
  uint64_t state_floats = 0;  // per parameter
  uint64_t row_bytes = 0;    // sparse: RowFootprintBytes
  uint64_t rows = 0;         // sparse: the row limit the table gets here
};

// The config a table is created with on this shard: a sparse table with no
// bound of its own gets the default row limit (see above). Dense configs,
// and sparse ones with a bound, come back unchanged. `config` must be valid.
TableConfig WithShardBounds(const TableConfig& config, const ServerLimits& limits);

// The cost of `config` (as WithShardBounds returned it) holding
// `dense_elements` floats of a dense table on this shard. INVALID_ARGUMENT
// when its sparse byte budget is too small (SparseTable::RowLimit).
absl::StatusOr<TableCost> CostOf(const TableConfig& config,
                                 uint64_t dense_elements);

// RESOURCE_EXHAUSTED when a table of `cost` does not fit the per-table
// limit, or when `tables` already reach max_tables.
absl::Status CheckTableFits(const TableConfig& config, const TableCost& cost,
                            uint64_t tables, const ServerLimits& limits);
// Tables may take at most this share of the budget; the rest is kept for
// per-worker state, so workers still get their seats (kWorkerSeatBytes) in
// tables that filled the tables' share.
inline constexpr uint64_t TablesShareOf(uint64_t budget) {
  return budget - budget / 8;
}
// The RESOURCE_EXHAUSTED for a table of `cost` that `budget` refused: what
// it needs, the budget, the tables' share, and what is in use by whom.
absl::Status TableOverBudget(const TableConfig& config, const TableCost& cost,
                             const MemoryBudget& budget, uint64_t tables);
// "memory budget 64.0 MiB, 60.2 MiB in use (48.1 MiB by tables, 12.1 MiB
// by per-worker state, 0 B by staged pushes) (--memory_budget_mb)"
std::string BudgetInUse(const MemoryBudget& budget);

// The budget ps_server gets without --memory_budget_mb: three quarters of
// the memory this process may use (the smaller of MemTotal and the cgroup's
// memory.max), at most 16 GiB, at least 64 MiB; 16 GiB if neither is
// readable.
uint64_t DefaultMemoryBudget();
// RESOURCE_EXHAUSTED for a name longer than max_name_length.
absl::Status CheckNameLength(absl::string_view name, const ServerLimits& limits);
// RESOURCE_EXHAUSTED for more than max_keys_per_request keys.
absl::Status CheckKeyCount(absl::string_view table, uint64_t keys,
                           const ServerLimits& limits);
// RESOURCE_EXHAUSTED when a pull answer of `floats` values (plus `extra`
// bytes, e.g. row versions) passes max_pull_bytes. A compressed pull's
// scratch holds the same floats, so this bounds it too.
absl::Status CheckPullBytes(absl::string_view table, uint64_t floats,
                            uint64_t extra, const ServerLimits& limits);

// RESOURCE_EXHAUSTED for a worker that would be the (workers + 1)-th with
// state in `table`, past max_workers_per_table.
absl::Status CheckTableWorkers(absl::string_view table, uint32_t worker,
                               uint64_t workers, const ServerLimits& limits);

// RESOURCE_EXHAUSTED for a worker id >= max_workers.
absl::Status CheckWorkerId(uint32_t worker, const ServerLimits& limits);

// INVALID_ARGUMENT for a lease a Register may not ask for: not finite,
// negative, or above max_lease_s (naming --max_lease_s). 0 (the shard's
// default lease) is fine.
absl::Status CheckLease(double lease_s, const ServerLimits& limits);

// 1,234,567
std::string WithThousands(uint64_t n);
// 3.7 GiB, 512.0 MiB, 12.0 KiB, 100 B
std::string HumanBytes(uint64_t bytes);

}  // namespace taups

#endif  // TAUPS_SERVER_LIMITS_H_

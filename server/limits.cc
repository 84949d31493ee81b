#include "server/limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "server/optimizer.h"
#include "server/sparse_table.h"

namespace taups {
namespace {

absl::Status OutOfRange(absl::string_view what, uint64_t value, uint64_t min,
                        uint64_t max) {
  return absl::InvalidArgumentError(absl::StrCat(
      "limit ", what, " = ", value, " is outside [", min, ", ", max, "]"));
}

uint64_t Mb(uint64_t bytes) { return bytes >> 20; }

// A sparse table's bytes before any row: its stripes' fixed structures and,
// with admission, their sketches (SparseTable::RowLimit counts the same).
uint64_t SparseFixedBytes(const TableConfig& config) {
  const bool admission = config.sparse_admit_after > 1 ||
                         config.sparse_admit_probability < 1.0f;
  return SparseTable::kStripes *
         (SparseTable::kStripeFixedBytes +
          (admission ? AdmissionFilter::kSketchBytes : 0));
}

}  // namespace

absl::Status ServerLimits::Validate() const {
  struct Check {
    const char* what;
    uint64_t value, min, max;
  };
  const Check checks[] = {
      {"max_table_bytes", max_table_bytes, uint64_t{1} << 20, kMaxMb << 20},
      {"memory_budget_bytes", memory_budget_bytes, uint64_t{1} << 20,
       kMaxMb << 20},
      {"default_sparse_rows", default_sparse_rows, kMinSparseRows,
       kMaxSparseRows},
      {"max_tables", max_tables, 1, kMaxTables},
      {"max_keys_per_request", max_keys_per_request, 1, kMaxKeys},
      {"max_pull_bytes", max_pull_bytes, uint64_t{1} << 20, kMaxPullMb << 20},
      {"max_pull_in_flight_bytes", max_pull_in_flight_bytes, uint64_t{1} << 20,
       kMaxMb << 20},
      {"max_block_values", max_block_values, 1, kMaxBlockValues},
      {"max_name_length", max_name_length, 1, kMaxTableNameLength},
      {"max_staged_bytes", max_staged_bytes, uint64_t{1} << 20, kMaxMb << 20},
      {"max_workers", max_workers, 1, kMaxWorkers},
      {"max_workers_per_table", max_workers_per_table, 1, kMaxWorkers},
      {"max_waiting_per_worker", max_waiting_per_worker, 1, kMaxWaitingCalls},
      {"max_waiting_calls", max_waiting_calls, 1, kMaxWaitingCalls},
  };
  for (const Check& c : checks) {
    if (c.value < c.min || c.value > c.max) {
      return OutOfRange(c.what, c.value, c.min, c.max);
    }
  }
  if (!(max_lease_s > 0 && max_lease_s <= kMaxLeaseS)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limit max_lease_s = ", max_lease_s, " is outside (0, ", kMaxLeaseS,
        "]"));
  }
  if (max_table_bytes > memory_budget_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the per-table limit (", Mb(max_table_bytes),
        " MiB, --max_table_mb) is above the shard's memory budget (",
        Mb(memory_budget_bytes), " MiB, --memory_budget_mb)"));
  }
  if (max_pull_in_flight_bytes < max_pull_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the bound on pull answers in flight (", Mb(max_pull_in_flight_bytes),
        " MiB, --max_pull_in_flight_mb) is below one pull's answer (",
        Mb(max_pull_bytes), " MiB, --max_pull_mb)"));
  }
  return absl::OkStatus();
}

TableConfig WithShardBounds(const TableConfig& config,
                            const ServerLimits& limits) {
  if (config.kind != TableKind::kSparse || config.sparse_max_rows != 0 ||
      config.sparse_max_bytes != 0) {
    return config;
  }
  TableConfig bounded = config;
  const uint64_t row_bytes = SparseTable::RowFootprintBytes(config);
  // What the per-table limit buys, in whole stripes of rows (at least one
  // row a stripe: a table that cannot have that is refused by its cost).
  const uint64_t fixed = SparseFixedBytes(config) + ServerLimits::kTableFixedBytes;
  const uint64_t affordable =
      limits.max_table_bytes > fixed ? (limits.max_table_bytes - fixed) / row_bytes
                                     : 0;
  uint64_t rows = std::min(limits.default_sparse_rows, affordable);
  rows = std::max<uint64_t>(rows / SparseTable::kStripes * SparseTable::kStripes,
                            SparseTable::kStripes);
  bounded.sparse_max_rows = rows;
  return bounded;
}

absl::StatusOr<TableCost> CostOf(const TableConfig& config,
                                 uint64_t dense_elements) {
  TableCost cost;
  cost.state_floats =
      static_cast<uint64_t>(MakeOptimizer(config.optimizer)->state_width());
  if (config.kind == TableKind::kDense) {
    cost.elements = dense_elements;
    // At most 2^34 elements (Validate) times at most 4 floats: no overflow.
    cost.bytes = 4 * dense_elements * (1 + cost.state_floats) +
                 ServerLimits::kTableFixedBytes;
    return cost;
  }
  absl::StatusOr<uint64_t> rows = SparseTable::RowLimit(config);
  if (!rows.ok()) return rows.status();
  cost.rows = *rows;
  cost.elements = *rows;
  cost.row_bytes = SparseTable::RowFootprintBytes(config);
  const uint64_t fixed = SparseFixedBytes(config) + ServerLimits::kTableFixedBytes;
  // rows <= 2^64 / row_bytes is not guaranteed for a huge max_rows:
  // saturate instead of wrapping.
  if (cost.rows > (UINT64_MAX - fixed) / cost.row_bytes) {
    cost.bytes = UINT64_MAX;
  } else {
    cost.bytes = cost.rows * cost.row_bytes + fixed;
  }
  return cost;
}

namespace {

// "1,234 rows of 96 bytes: dim 8 + 1 state floats each with adagrad"
std::string CostDetail(const TableConfig& config, const TableCost& cost) {
  if (config.kind == TableKind::kDense) {
    return absl::StrCat(WithThousands(cost.elements), " floats + ",
                        cost.state_floats, " state floats each with ",
                        OptimizerKindName(config.optimizer.kind));
  }
  return absl::StrCat(WithThousands(cost.rows), " rows of ",
                      WithThousands(cost.row_bytes), " bytes: dim ", config.dim,
                      " + ", cost.state_floats, " state floats each with ",
                      OptimizerKindName(config.optimizer.kind));
}

}  // namespace

absl::Status CheckTableFits(const TableConfig& config, const TableCost& cost,
                            uint64_t tables, const ServerLimits& limits) {
  if (tables >= limits.max_tables) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "table ", QuotedName(config.name), " would be table ", tables + 1,
        " on this shard, which allows ", limits.max_tables,
        " tables (--max_tables)"));
  }
  if (cost.bytes > limits.max_table_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "table ", QuotedName(config.name), " needs ", HumanBytes(cost.bytes),
        " on this shard (", CostDetail(config, cost), "); this shard allows ",
        HumanBytes(limits.max_table_bytes), " per table (--max_table_mb)"));
  }
  return absl::OkStatus();
}

absl::Status TableOverBudget(const TableConfig& config, const TableCost& cost,
                             const MemoryBudget& budget, uint64_t tables) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "table ", QuotedName(config.name), " needs ", HumanBytes(cost.bytes),
      " on this shard (", CostDetail(config, cost), "); memory budget ",
      HumanBytes(budget.limit()), ", ", HumanBytes(budget.used()), " in use (",
      HumanBytes(budget.used(BudgetUse::kTables)), " by ", tables,
      tables == 1 ? " table" : " tables", ", ",
      HumanBytes(budget.used(BudgetUse::kWorkerState)),
      " by per-worker state, ", HumanBytes(budget.used(BudgetUse::kStaged)),
      " by staged pushes); tables may take ",
      HumanBytes(budget.cap(BudgetUse::kTables)),
      " of it (--memory_budget_mb; DropTable frees a table)"));
}

std::string BudgetInUse(const MemoryBudget& budget) {
  return absl::StrCat(
      "memory budget ", HumanBytes(budget.limit()), ", ",
      HumanBytes(budget.used()), " in use (",
      HumanBytes(budget.used(BudgetUse::kTables)), " by tables, ",
      HumanBytes(budget.used(BudgetUse::kWorkerState)), " by per-worker state, ",
      HumanBytes(budget.used(BudgetUse::kStaged)),
      " by staged pushes) (--memory_budget_mb)");
}

uint64_t DefaultMemoryBudget() {
  constexpr uint64_t kCeiling = uint64_t{16} << 30;
  constexpr uint64_t kFloor = uint64_t{64} << 20;
  uint64_t usable = 0;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    unsigned long long kib = 0;
    if (std::fscanf(f, "MemTotal: %llu kB", &kib) == 1) usable = kib << 10;
    std::fclose(f);
  }
  // cgroup v2 ("max" when unlimited, which fscanf does not read).
  if (std::FILE* f = std::fopen("/sys/fs/cgroup/memory.max", "r")) {
    unsigned long long bytes = 0;
    if (std::fscanf(f, "%llu", &bytes) == 1 && bytes > 0) {
      usable = usable == 0 ? bytes : std::min<uint64_t>(usable, bytes);
    }
    std::fclose(f);
  }
  if (usable == 0) return kCeiling;
  return std::clamp<uint64_t>(usable / 4 * 3 >> 20 << 20, kFloor, kCeiling);
}

absl::Status CheckNameLength(absl::string_view name,
                             const ServerLimits& limits) {
  if (name.size() <= limits.max_name_length) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "table name ", QuotedName(name), " has ", name.size(),
      " characters; this shard allows ", limits.max_name_length,
      " (--max_table_name_length)"));
}

absl::Status CheckKeyCount(absl::string_view table, uint64_t keys,
                           const ServerLimits& limits) {
  if (keys <= limits.max_keys_per_request) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "table ", QuotedName(table), ": ", WithThousands(keys),
      " keys in one request; this shard allows ",
      WithThousands(limits.max_keys_per_request),
      " (--max_keys_per_request)"));
}

absl::Status CheckPullBytes(absl::string_view table, uint64_t floats,
                            uint64_t extra, const ServerLimits& limits) {
  // floats <= 2^34 (a dense range) or keys (<= 2^28) x dim (<= 4096).
  const uint64_t bytes = 4 * floats + extra;
  if (bytes <= limits.max_pull_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "table ", QuotedName(table), ": the pull's answer would hold ",
      HumanBytes(bytes), " (", WithThousands(floats), " floats",
      extra > 0 ? absl::StrCat(" + ", WithThousands(extra), " bytes") : "",
      "); this shard answers at most ", HumanBytes(limits.max_pull_bytes),
      " per pull (--max_pull_mb)"));
}

absl::Status CheckTableWorkers(absl::string_view table, uint32_t worker,
                               uint64_t workers, const ServerLimits& limits) {
  if (workers < limits.max_workers_per_table) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "table ", QuotedName(table), " already holds state for ",
      WithThousands(workers), " workers on this shard, the most it allows",
      " (--max_workers_per_table = ", WithThousands(limits.max_workers_per_table),
      "); worker ", worker, " is refused; DropTable frees them"));
}

absl::Status CheckWorkerId(uint32_t worker, const ServerLimits& limits) {
  if (worker < limits.max_workers) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "worker ", worker, " is outside the ", limits.max_workers,
      " worker ids this shard serves, 0..", limits.max_workers - 1,
      " (--max_workers)"));
}

absl::Status CheckLease(double lease_s, const ServerLimits& limits) {
  if (!std::isfinite(lease_s) || lease_s < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Register: lease_s ", lease_s,
        " must be a finite number of seconds >= 0 (0 = the shard's default)"));
  }
  if (lease_s > limits.max_lease_s) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Register: lease_s ", lease_s, " is above this shard's longest lease, ",
        limits.max_lease_s, " s (--max_lease_s); ask for at most that, or 0 for "
        "the default"));
  }
  return absl::OkStatus();
}

std::string WithThousands(uint64_t n) {
  std::string digits = absl::StrCat(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB",
                                           "EiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace taups

// The shard core's budget and limits beyond table sizes (limits_test covers
// those): DropTable gives a table's budget back and frees its name; pulls
// that must wait are counted per worker and in all and refused past either
// limit, without disturbing the pulls already waiting.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "server/parameter_store.h"

namespace taups {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;


absl::Status Create(ParameterStore& store, const TableConfig& config) {
  bool created = false;
  return store.CreateTable(config, /*exist_ok=*/false, &created).status();
}

// "3.0 MiB": bytes in MiB with one decimal.
std::string Mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / kMiB);
  return text;
}

ServerLimits Budget(uint64_t bytes) {
  ServerLimits limits;
  limits.memory_budget_bytes = bytes;
  limits.max_table_bytes = bytes;
  return limits;
}

void CheckRefused(const absl::Status& status, const std::string& says,
                  const std::string& flag) {
  INFO(status.ToString());
  CHECK(status.code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(status.message(), says));
  CHECK(absl::StrContains(status.message(), flag));
}

TEST_CASE("DropTable gives the table's budget back and frees its name") {
  ParameterStore store(0, 1, RealClock::Get(), absl::Seconds(10), Budget(4 * kMiB));
  // 3 MiB of values + fixed bytes: a second one does not fit beside it.
  const TableConfig big = TableConfig::Dense("big", 3 * kMiB / 4);
  REQUIRE(Create(store, big).ok());
  const uint64_t cost = 3 * kMiB + ServerLimits::kTableFixedBytes;
  REQUIRE(store.reserved_bytes() == cost);
  const absl::Status refused = Create(store, TableConfig::Dense("other", 3 * kMiB / 4));
  INFO(refused.ToString());
  REQUIRE(refused.code() == absl::StatusCode::kResourceExhausted);
  const std::string needs = Mib(cost);
  CHECK(absl::StrContains(refused.message(), "table 'other' needs " + needs));
  CHECK(absl::StrContains(refused.message(), "memory budget 4.0 MiB, " + needs +
                                                 " in use (" + needs + " by 1 table"));
  CHECK(absl::StrContains(refused.message(), "tables may take 3.5 MiB of it"));
  CHECK(absl::StrContains(refused.message(), "--memory_budget_mb"));
  CHECK(store.ListTables().size() == 1);

  // A worker's state is given back with the table.
  std::vector<float> out(16);
  PullContext ctx;
  ctx.worker = 3;
  REQUIRE(store.PullDense("big", 0, absl::MakeSpan(out), ctx).ok());
  CHECK(store.budget().used(BudgetUse::kWorkerState) == ServerLimits::kWorkerSeatBytes);

  auto freed = store.DropTable("big");
  REQUIRE(freed.ok());
  CHECK(*freed == cost + ServerLimits::kWorkerSeatBytes);
  CHECK(store.budget().used() == 0);
  CHECK(store.ListTables().empty());
  CHECK(store.GetTable("big").status().code() == absl::StatusCode::kNotFound);
  CHECK(store.PullDense("big", 0, absl::MakeSpan(out), ctx).status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(store.DropTable("big").status().code() == absl::StatusCode::kNotFound);
  CHECK(store.Resources().tables_dropped == 1);

  // The name and the bytes are free again: the refused table now fits.
  REQUIRE(Create(store, TableConfig::Dense("other", 3 * kMiB / 4)).ok());
  REQUIRE(Create(store, big).code() == absl::StatusCode::kResourceExhausted);
}

TEST_CASE("staged slices of unfinished pushes are charged while they wait") {
  ParameterStore store(0, 1, RealClock::Get(), absl::Seconds(10), Budget(4 * kMiB));
  constexpr uint64_t kFloats = 256 * 1024;  // 1 MiB; slices of half of it
  REQUIRE(Create(store, TableConfig::Dense("w", kFloats)).ok());
  const std::vector<float> half(kFloats / 2, 0.25f);
  auto slice = [&](uint64_t seq, uint32_t index) {
    PushMeta meta;
    meta.origin = PushOrigin{0, 1, seq};
    meta.slices = 2;
    meta.slice_index = index;
    return store.PushDense("w", index * kFloats / 2, half, meta).status();
  };
  const uint64_t table = 4 * kFloats + ServerLimits::kTableFixedBytes;
  const uint64_t fit = (4 * kMiB - table - ServerLimits::kWorkerSeatBytes) / (2 * kFloats);
  REQUIRE(fit == 5);
  for (uint64_t seq = 1; seq <= fit; ++seq) REQUIRE(slice(seq, 0).ok());
  CHECK(store.budget().used(BudgetUse::kStaged) == fit * 2 * kFloats);
  CheckRefused(slice(fit + 1, 0), "staging slice 0 (524288 bytes)", "--memory_budget_mb");
  CHECK(store.GetTable("w")->version == 0);
  // A push completed is applied and its staged slice given back.
  REQUIRE(slice(1, 1).ok());
  CHECK(store.GetTable("w")->version == 1);
  CHECK(store.budget().used(BudgetUse::kStaged) == (fit - 1) * 2 * kFloats);
  // (A refused push keeps its answer: the room is used by a new one.)
  REQUIRE(slice(fit + 2, 0).ok());
  // Dropping the table gives back the slices still waiting too.
  REQUIRE(store.DropTable("w").ok());
  CHECK(store.budget().used() == 0);
}

TEST_CASE("a request still inside a dropped table finishes on it, then sees it gone") {
  ParameterStore store(0, 1);
  REQUIRE(Create(store, TableConfig::Sparse("emb", 4)).ok());
  auto partition = store.PartitionOf("emb");
  REQUIRE(partition.ok());
  REQUIRE(store.DropTable("emb").ok());
  // The partition a request held is still whole (values readable).
  CHECK((*partition)->config().name == "emb");
  CHECK(store.reserved_bytes() == 0);
  // A table of the same name is a new, empty one.
  REQUIRE(Create(store, TableConfig::Sparse("emb", 8)).ok());
  CHECK(store.GetTable("emb")->config.dim == 8);
}

// A sync table of 4 floats gathering step 0 from workers 0, 1, 2: a pull
// at clock 1 waits until all three pushed for step 0.
struct WaitingShard {
  explicit WaitingShard(const ServerLimits& limits)
      : store(0, 1, RealClock::Get(), absl::Seconds(60), limits) {
    TableConfig config = TableConfig::Dense("w", 4);
    config.consistency.kind = ConsistencyKind::kSync;
    config.consistency.num_workers = 3;
    REQUIRE(Create(store, config).ok());
    for (uint32_t w = 0; w < 3; ++w) store.Register(w, 1, absl::Seconds(60));
  }
  absl::Status Pull(uint32_t worker) {
    std::vector<float> out(4);
    PullContext ctx;
    ctx.worker = worker;
    ctx.clock = 1;
    ctx.deadline = absl::Now() + absl::Seconds(20);
    return store.PullDense("w", 0, absl::MakeSpan(out), ctx).status();
  }
  void WaitForWaiting(uint64_t n) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (store.Resources().waiting_calls != n && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    REQUIRE(store.Resources().waiting_calls == n);
  }
  ParameterStore store;
};


TEST_CASE("pulls that must wait are refused past the per-worker and total limits") {
  ServerLimits limits;
  limits.max_waiting_per_worker = 2;
  limits.max_waiting_calls = 3;
  WaitingShard shard(limits);
  std::vector<std::thread> waiting;
  std::atomic<int> served{0};
  auto wait_in_thread = [&](uint32_t worker) {
    waiting.emplace_back([&, worker] {
      if (shard.Pull(worker).ok()) served.fetch_add(1);
    });
  };
  wait_in_thread(0);
  wait_in_thread(0);
  shard.WaitForWaiting(2);
  CheckRefused(shard.Pull(0), "worker 0 already has 2 pulls waiting",
               "--max_waiting_per_worker");
  wait_in_thread(1);
  shard.WaitForWaiting(3);
  CheckRefused(shard.Pull(2), "beside 3 waiting pulls", "--max_waiting_calls");
  const ResourceStats refused = shard.store.Resources();
  CHECK(refused.waiting_refused_per_worker == 1);
  CHECK(refused.waiting_refused_total == 1);

  // Step 0 closes: the three waiting pulls are served, the counts go to 0,
  // and a pull that need not wait never needed a seat.
  for (uint32_t w = 0; w < 3; ++w) {
    PushMeta meta;
    meta.origin = PushOrigin{w, 1, 1};
    REQUIRE(shard.store.PushDense("w", 0, std::vector<float>(4, 0.5f), meta).ok());
  }
  for (auto& thread : waiting) thread.join();
  CHECK(served.load() == 3);
  CHECK(shard.store.Resources().waiting_calls == 0);
  CHECK(shard.Pull(2).ok());
}

// Prints what the constants in limits.h stand for, measured as resident
// memory (run: budget_store_test "[.measure]").
uint64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "VmRSS:")) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

TEST_CASE("measure: resident bytes of an empty table, a worker, a sparse row",
          "[.measure]") {
  ServerLimits limits;
  limits.max_tables = 60000;
  limits.max_workers_per_table = 100000;
  limits.memory_budget_bytes = uint64_t{1} << 40;
  limits.max_table_bytes = uint64_t{1} << 34;
  ParameterStore store(0, 1, RealClock::Get(), absl::Seconds(10), limits);
  constexpr int kTables = 2000;
  const uint64_t r0 = ResidentBytes();
  for (int i = 0; i < kTables; ++i) {
    TableConfig config = TableConfig::Sparse("s" + std::to_string(i), 1);
    config.sparse_max_rows = 64;
    REQUIRE(Create(store, config).ok());
  }
  const uint64_t r1 = ResidentBytes();
  for (int i = 0; i < kTables; ++i) {
    REQUIRE(Create(store, TableConfig::Dense("d" + std::to_string(i), 8)).ok());
  }
  const uint64_t r2 = ResidentBytes();
  std::printf("empty sparse table %.0f B, 8-float dense table %.0f B\n",
              double(r1 - r0) / kTables, double(r2 - r1) / kTables);
  constexpr uint32_t kWorkers = 20000;
  std::vector<float> out(8);
  const uint64_t r3 = ResidentBytes();
  for (uint32_t w = 0; w < kWorkers; ++w) {
    PullContext ctx;
    ctx.worker = w;
    REQUIRE(store.PullDense("d0", 0, absl::MakeSpan(out), ctx).ok());
    PushMeta meta;
    meta.origin = PushOrigin{w, 1, 1};
    REQUIRE(store.PushDense("d0", 0, std::vector<float>(8, 0.1f), meta).ok());
  }
  std::printf("a worker's first pull and push of one table %.0f B\n",
              double(ResidentBytes() - r3) / kWorkers);
  struct Rows {
    uint32_t dim;
    OptimizerKind optimizer;
    uint64_t rows;
  };
  for (const Rows& r : {Rows{8, OptimizerKind::kSgd, 1 << 20},
                        Rows{16, OptimizerKind::kAdagrad, 1 << 20},
                        Rows{64, OptimizerKind::kAdam, 1 << 18}}) {
    TableConfig config = TableConfig::Sparse("rows" + std::to_string(r.dim), r.dim);
    config.optimizer.kind = r.optimizer;
    config.sparse_max_rows = r.rows;
    REQUIRE(Create(store, config).ok());
    const uint64_t kRows = r.rows;
    constexpr uint64_t kBatch = 4096;
    std::vector<uint64_t> keys(kBatch);
    std::vector<float> rows(kBatch * r.dim);
    const uint64_t before = ResidentBytes();
    for (uint64_t b = 0; b < kRows / kBatch; ++b) {
      for (uint64_t k = 0; k < kBatch; ++k) keys[k] = b * kBatch + k;
      REQUIRE(store.PullSparse(config.name, keys, absl::MakeSpan(rows)).ok());
    }
    std::printf("sparse dim %u %s: resident %.1f B a row, RowFootprintBytes %llu\n",
                r.dim, OptimizerKindName(r.optimizer),
                double(ResidentBytes() - before) / kRows,
                static_cast<unsigned long long>(SparseTable::RowFootprintBytes(config)));
  }
}

}  // namespace
}  // namespace taups

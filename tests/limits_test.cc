// ServerLimits in the shard core: for each limit, a request just under it
// passes and one just over is refused with the right code, with the numbers
// in the message, and nothing changed (no table, no bytes reserved, no rows,
// no version step).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/codec.h"
#include "common/status_macros.h"
#include "server/limits.h"
#include "server/parameter_store.h"
#include "server/sparse_table.h"

namespace taups {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// What a refusal must leave as it was.
struct StoreState {
  size_t tables = 0;
  uint64_t reserved = 0;
  uint64_t rows = 0;
  uint64_t versions = 0;
  size_t workers = 0;  // known to membership
  bool operator==(const StoreState& o) const {
    return tables == o.tables && reserved == o.reserved && rows == o.rows &&
           versions == o.versions && workers == o.workers;
  }
};

StoreState StateOf(const ParameterStore& store) {
  StoreState state;
  for (const TableInfo& info : store.ListTables()) {
    ++state.tables;
    state.rows += info.sparse_rows;
    state.versions += info.version;
  }
  state.reserved = store.reserved_bytes();
  state.workers = store.Stats().workers.size();
  return state;
}

absl::Status Create(ParameterStore& store, const TableConfig& config) {
  bool created = false;
  return store.CreateTable(config, /*exist_ok=*/false, &created).status();
}

TableConfig Dense(const std::string& name, uint64_t size,
                  OptimizerKind optimizer = OptimizerKind::kSgd) {
  TableConfig config = TableConfig::Dense(name, size);
  config.optimizer.kind = optimizer;
  return config;
}

TableConfig Sparse(const std::string& name, uint32_t dim, uint64_t max_rows,
                   OptimizerKind optimizer = OptimizerKind::kSgd) {
  TableConfig config = TableConfig::Sparse(name, dim);
  config.sparse_max_rows = max_rows;
  config.optimizer.kind = optimizer;
  return config;
}

std::vector<uint64_t> Keys(size_t n, uint64_t first = 1) {
  std::vector<uint64_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = first + i;
  return keys;
}

PushMeta OneSlice(uint64_t seq) {
  PushMeta meta;
  meta.origin = PushOrigin{0, 1, seq};
  return meta;
}

// One row of the table: a limit, a setup, and the request at the limit (n)
// and one past it (n + 1), which must be refused with `code`.
struct Case {
  const char* name;
  ServerLimits limits;
  std::function<void(ParameterStore&)> setup;
  std::function<absl::Status(ParameterStore&, uint64_t n, int attempt)> request;
  uint64_t n;  // the largest request that passes
  absl::StatusCode over_code = absl::StatusCode::kResourceExhausted;
  const char* flag;  // the message names it
};

ServerLimits With(void (*edit)(ServerLimits&)) {
  ServerLimits limits;
  edit(limits);
  return limits;
}

std::string Encoded(size_t n) {
  std::vector<float> values(n, 0.5f);
  CodecOptions options;
  options.codec = CodecKind::kFp16;
  std::string block;
  REQUIRE(EncodeBlock(values, options, 0, &block).ok());
  return block;
}

// Pushes an fp16 block of n values to dense table "w", read as the gRPC
// edge reads it.
absl::Status PushEncoded(ParameterStore& store, uint64_t n, int attempt) {
  std::vector<float> scratch;
  const std::string block = Encoded(n);
  ASSIGN_OR_RETURN(absl::Span<const float> g,
                   store.ReadGradient("w", TableKind::kDense, 0, block, true,
                                      &scratch, "gradient"));
  return store.PushDense("w", 0, g, OneSlice(attempt + 1)).status();
}

// Pulls all `floats` of dense table "w" as workers 0 .. n-1.
absl::Status PullAsWorkers(ParameterStore& store, uint64_t n, uint64_t floats) {
  std::vector<float> out(floats);
  PullContext ctx;
  for (uint32_t w = 0; w < n; ++w) {
    ctx.worker = w;
    RETURN_IF_ERROR(store.PullDense("w", 0, absl::MakeSpan(out), ctx).status());
  }
  return absl::OkStatus();
}

std::vector<Case> Cases() {
  const uint64_t sparse_fixed = SparseTable::kStripes * SparseTable::kStripeFixedBytes;
  constexpr uint64_t kFixed = ServerLimits::kTableFixedBytes;  // every table
  const uint64_t row8 = SparseTable::RowFootprintBytes(Sparse("r", 8, 64));
  std::vector<Case> cases;
  cases.push_back(
      {"dense table part, sgd: 4 bytes a float",
       With([](ServerLimits& l) { l.max_table_bytes = kMiB; }), nullptr,
       [](ParameterStore& s, uint64_t n, int a) {
         return Create(s, Dense("t" + std::to_string(a), n));
       },
       (kMiB - kFixed) / 4, absl::StatusCode::kResourceExhausted, "--max_table_mb"});
  cases.push_back(
      {"dense table part, adam: 16 bytes a float",
       With([](ServerLimits& l) { l.max_table_bytes = kMiB; }), nullptr,
       [](ParameterStore& s, uint64_t n, int a) {
         return Create(s, Dense("t" + std::to_string(a), n, OptimizerKind::kAdam));
       },
       (kMiB - kFixed) / 16, absl::StatusCode::kResourceExhausted,
       "--max_table_mb"});
  cases.push_back(
      {"sparse table part: row limit x row footprint + stripes",
       With([](ServerLimits& l) { l.max_table_bytes = kMiB; }), nullptr,
       [](ParameterStore& s, uint64_t n, int a) {
         return Create(s, Sparse("t" + std::to_string(a), 8, n));
       },
       (kMiB - sparse_fixed - kFixed) / row8, absl::StatusCode::kResourceExhausted,
       "--max_table_mb"});
  cases.push_back(
      {"shard budget: tables together",
       With([](ServerLimits& l) {
         l.max_table_bytes = 2 * kMiB;
         l.memory_budget_bytes = 3 * kMiB;
       }),
       [](ParameterStore& s) { REQUIRE(Create(s, Dense("first", kMiB / 4)).ok()); },
       [](ParameterStore& s, uint64_t n, int a) {
         return Create(s, Dense("t" + std::to_string(a), n));
       },
       // The tables' 7/8 of 3 MiB - (1 MiB + fixed) of "first" - this
       // table's own fixed bytes.
       (3 * kMiB - 3 * kMiB / 8 - kMiB - 2 * kFixed) / 4, absl::StatusCode::kResourceExhausted,
       "--memory_budget_mb"});
  cases.push_back(
      {"tables per shard",
       With([](ServerLimits& l) { l.max_tables = 4; }),
       [](ParameterStore& s) {
         for (int i = 0; i < 3; ++i) {
           REQUIRE(Create(s, Dense("pre" + std::to_string(i), 8)).ok());
         }
       },
       // n is the index of the table created: the 4th passes, the 5th not.
       [](ParameterStore& s, uint64_t n, int a) {
         absl::Status st;
         for (uint64_t i = 4; i <= n && st.ok(); ++i) {
           st = Create(s, Dense("t" + std::to_string(a) + "_" + std::to_string(i), 8));
         }
         return st;
       },
       4, absl::StatusCode::kResourceExhausted, "--max_tables"});
  cases.push_back(
      {"table name length",
       With([](ServerLimits& l) { l.max_name_length = 16; }), nullptr,
       [](ParameterStore& s, uint64_t n, int a) {
         return Create(s, Dense(std::string(n, 'a' + a), 8));
       },
       16, absl::StatusCode::kResourceExhausted, "--max_table_name_length"});
  cases.push_back(
      {"keys in one sparse pull",
       With([](ServerLimits& l) { l.max_keys_per_request = 100; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Sparse("emb", 4, 64 * 64)).ok()); },
       [](ParameterStore& s, uint64_t n, int) {
         std::vector<float> out(n * 4);
         return s.PullSparse("emb", Keys(n), absl::MakeSpan(out)).status();
       },
       100, absl::StatusCode::kResourceExhausted, "--max_keys_per_request"});
  cases.push_back(
      {"keys in one sparse push",
       With([](ServerLimits& l) { l.max_keys_per_request = 100; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Sparse("emb", 4, 64 * 64)).ok()); },
       [](ParameterStore& s, uint64_t n, int a) {
         std::vector<float> g(n * 4, 0.1f);
         return s.PushSparse("emb", Keys(n), g, OneSlice(a + 1)).status();
       },
       100, absl::StatusCode::kResourceExhausted, "--max_keys_per_request"});
  cases.push_back(
      {"bytes of a dense pull's answer",
       With([](ServerLimits& l) { l.max_pull_bytes = kMiB; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Dense("w", kMiB)).ok()); },
       [](ParameterStore& s, uint64_t n, int) {
         return s.DensePullFloats("w", 0, n).status();
       },
       kMiB / 4, absl::StatusCode::kResourceExhausted, "--max_pull_mb"});
  cases.push_back(
      {"bytes of a sparse pull's answer (checked by the store's pull too)",
       With([](ServerLimits& l) { l.max_pull_bytes = kMiB; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Sparse("emb", 256, 64 * 64)).ok()); },
       [](ParameterStore& s, uint64_t n, int) {
         RETURN_IF_ERROR(s.SparsePullFloats("emb", n, false).status());
         std::vector<float> out(n * 256);
         return s.PullSparse("emb", Keys(n), absl::MakeSpan(out)).status();
       },
       kMiB / 1024, absl::StatusCode::kResourceExhausted, "--max_pull_mb"});
  cases.push_back(
      {"bytes of a sparse pull's answer with row versions (8 B a key)",
       With([](ServerLimits& l) { l.max_pull_bytes = kMiB; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Sparse("emb", 254, 64 * 64)).ok()); },
       [](ParameterStore& s, uint64_t n, int) {
         return s.SparsePullFloats("emb", n, true).status();
       },
       kMiB / 1024, absl::StatusCode::kResourceExhausted, "--max_pull_mb"});
  cases.push_back(
      {"values an encoded block decodes to",
       With([](ServerLimits& l) { l.max_block_values = 1000; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Dense("w", 4096)).ok()); },
       PushEncoded,
       1000, absl::StatusCode::kResourceExhausted, "--max_block_values"});
  cases.push_back(
      {"a block declaring more values than the shard's range is malformed",
       ServerLimits{},
       [](ParameterStore& s) { REQUIRE(Create(s, Dense("w", 4096)).ok()); },
       PushEncoded,
       4096, absl::StatusCode::kInvalidArgument, "4096"});
  cases.push_back(
      {"bytes of unfinished multi-slice pushes one table part holds",
       With([](ServerLimits& l) { l.max_staged_bytes = kMiB; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Dense("w", kMiB)).ok()); },
       // Slice 0 of a 2-slice push is staged until slice 1 comes.
       [](ParameterStore& s, uint64_t n, int a) {
         PushMeta meta = OneSlice(a + 1);
         meta.slices = 2;
         const std::vector<float> g(n, 0.1f);
         return s.PushDense("w", 0, g, meta).status();
       },
       kMiB / 4, absl::StatusCode::kResourceExhausted, "--max_staged_mb"});
  // n is the worker id: ids below max_workers pass.
  cases.push_back(
      {"worker ids of pushes",
       With([](ServerLimits& l) { l.max_workers = 8; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Dense("w", 4)).ok()); },
       [](ParameterStore& s, uint64_t n, int) {
         PushMeta meta;
         meta.origin = PushOrigin{static_cast<uint32_t>(n), 1, 1};
         return s.PushDense("w", 0, std::vector<float>(4, 0.1f), meta).status();
       },
       7, absl::StatusCode::kResourceExhausted, "--max_workers"});
  cases.push_back(
      {"worker ids of pulls",
       With([](ServerLimits& l) { l.max_workers = 8; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Dense("w", 4)).ok()); },
       [](ParameterStore& s, uint64_t n, int) {
         std::vector<float> out(4);
         PullContext ctx;
         ctx.worker = static_cast<uint32_t>(n);
         return s.PullDense("w", 0, absl::MakeSpan(out), ctx).status();
       },
       7, absl::StatusCode::kResourceExhausted, "--max_workers"});
  cases.push_back(
      {"worker ids of registrations",
       With([](ServerLimits& l) { l.max_workers = 8; }), nullptr,
       [](ParameterStore& s, uint64_t n, int) {
         RETURN_IF_ERROR(s.CheckRegistration(static_cast<uint32_t>(n), 0.0));
         s.Register(static_cast<uint32_t>(n), 1, absl::ZeroDuration());
         return absl::OkStatus();
       },
       7, absl::StatusCode::kResourceExhausted, "--max_workers"});
  // n is how many distinct workers (0..n-1) pull the table.
  cases.push_back(
      {"workers with state in one table part",
       With([](ServerLimits& l) { l.max_workers_per_table = 8; }),
       [](ParameterStore& s) { REQUIRE(Create(s, Dense("w", 4)).ok()); },
       [](ParameterStore& s, uint64_t n, int) { return PullAsWorkers(s, n, 4); },
       8, absl::StatusCode::kResourceExhausted, "--max_workers_per_table"});
  // Each worker pulling a delay-compensation table gets a copy of the range
  // (0.5 MiB) and a seat: 2 MiB - (0.5 MiB + fixed) buys two of them.
  cases.push_back(
      {"delay-compensation copies against the budget",
       With([](ServerLimits& l) {
         l.max_table_bytes = kMiB;
         l.memory_budget_bytes = 2 * kMiB;
       }),
       [](ParameterStore& s) {
         TableConfig config = Dense("w", kMiB / 8);
         config.staleness.delay_compensation = true;
         REQUIRE(Create(s, config).ok());
         REQUIRE((2 * kMiB - (kMiB / 2 + ServerLimits::kTableFixedBytes)) /
                     (kMiB / 2 + ServerLimits::kWorkerSeatBytes) ==
                 2);
       },
       [](ParameterStore& s, uint64_t n, int) {
         return PullAsWorkers(s, n, kMiB / 8);
       },
       2, absl::StatusCode::kResourceExhausted, "--memory_budget_mb"});
  return cases;
}

TEST_CASE("every limit: just under passes, just over is refused and changes nothing") {
  for (const Case& c : Cases()) {
    INFO(c.name);
    REQUIRE(c.limits.Validate().ok());
    ParameterStore store(0, 1, RealClock::Get(), absl::Seconds(10), c.limits);
    if (c.setup) c.setup(store);
    const absl::Status under = c.request(store, c.n, 0);
    INFO(under.ToString());
    REQUIRE(under.ok());
    const StoreState before = StateOf(store);
    const absl::Status over = c.request(store, c.n + 1, 1);
    INFO(over.ToString());
    REQUIRE(over.code() == c.over_code);
    CHECK(absl::StrContains(over.message(), c.flag));
    CHECK(StateOf(store) == before);
  }
}

TEST_CASE("a 250M-float Adam table is refused with the sizes and the flag") {
  ParameterStore store(0, 1);
  const absl::Status refused =
      Create(store, Dense("huge", 250'000'000, OptimizerKind::kAdam));
  INFO(refused.ToString());
  REQUIRE(refused.code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(refused.message(), "table 'huge' needs 3.7 GiB"));
  CHECK(absl::StrContains(refused.message(),
                          "250,000,000 floats + 3 state floats each with adam"));
  CHECK(absl::StrContains(refused.message(),
                          "this shard allows 2.0 GiB per table (--max_table_mb)"));
  CHECK(store.ListTables().empty());
  CHECK(store.reserved_bytes() == 0);
  // Split over 4 shards, each part is 0.9 GiB: it fits.
  ParameterStore quarter(1, 4);
  CHECK(Create(quarter, Dense("huge", 250'000'000, OptimizerKind::kAdam)).ok());
  CHECK(quarter.reserved_bytes() ==
        250'000'000ull / 4 * 16 + ServerLimits::kTableFixedBytes);
}

TEST_CASE("a sparse table without a bound gets the default row limit, within the table limit") {
  ServerLimits limits;
  limits.default_sparse_rows = 640;
  ParameterStore store(0, 1, RealClock::Get(), absl::Seconds(10), limits);
  bool created = false;
  const TableConfig requested = TableConfig::Sparse("emb", 4);
  auto info = store.CreateTable(requested, true, &created);
  REQUIRE(info.ok());
  CHECK(info->sparse_row_limit == 640);
  CHECK(info->config.sparse_max_rows == 640);
  const uint64_t row = SparseTable::RowFootprintBytes(requested);
  CHECK(info->reserved_bytes ==
        640 * row + SparseTable::kStripes * SparseTable::kStripeFixedBytes +
            ServerLimits::kTableFixedBytes);
  // The same request again is the same table.
  REQUIRE(store.CreateTable(requested, true, &created).ok());
  CHECK_FALSE(created);
  // Touching many more keys than the limit keeps the rows under it.
  std::vector<float> out(4 * 5000);
  REQUIRE(store.PullSparse("emb", Keys(5000), absl::MakeSpan(out)).ok());
  CHECK(store.GetTable("emb")->sparse_rows <= 640);

  // A wide Adam table gets what the per-table limit buys instead.
  ServerLimits small;
  small.max_table_bytes = 64 * kMiB;
  ParameterStore narrow(0, 1, RealClock::Get(), absl::Seconds(10), small);
  TableConfig wide = TableConfig::Sparse("wide", 4096);
  wide.optimizer.kind = OptimizerKind::kAdam;
  auto wide_info = narrow.CreateTable(wide, true, &created);
  REQUIRE(wide_info.ok());
  const uint64_t wide_row = SparseTable::RowFootprintBytes(wide);
  const uint64_t fixed = SparseTable::kStripes * SparseTable::kStripeFixedBytes +
                         ServerLimits::kTableFixedBytes;
  CHECK(wide_info->sparse_row_limit == (64 * kMiB - fixed) / wide_row / 64 * 64);
  CHECK(wide_info->reserved_bytes <= 64 * kMiB);
}

TEST_CASE("bounded sparse tables count their bound; an absurd bound is refused") {
  ParameterStore store(0, 1);
  TableConfig config = Sparse("emb", 16, uint64_t{1} << 40);
  const absl::Status refused = Create(store, config);
  INFO(refused.ToString());
  REQUIRE(refused.code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(refused.message(), "1,099,511,627,776 rows"));
  config.sparse_max_rows = 0;
  config.sparse_max_bytes = uint64_t{1} << 40;
  CHECK(Create(store, config).code() == absl::StatusCode::kResourceExhausted);
  config.sparse_max_bytes = uint64_t{1} << 30;
  REQUIRE(Create(store, config).ok());
  CHECK(store.reserved_bytes() <=
        (uint64_t{1} << 30) + ServerLimits::kTableFixedBytes);
}

TEST_CASE("names echoed in errors are bounded and escaped") {
  ParameterStore store(0, 1);
  const std::string long_name(1 << 20, 'x');
  const absl::Status missing = store.GetTable(long_name).status();
  REQUIRE(missing.code() == absl::StatusCode::kNotFound);
  CHECK(missing.message().size() < 200);
  CHECK(absl::StrContains(missing.message(), "(1048576 bytes)"));
  const absl::Status bad = Create(store, Dense(std::string(100, 'y') + "\n", 8));
  REQUIRE(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.message().size() < 250);
  CHECK(QuotedName("a\nb") == "'a\\nb'");
  CHECK(QuotedName(std::string(70, 'z')) ==
        "'" + std::string(kMaxQuotedNameBytes, 'z') + "...' (70 bytes)");
}

TEST_CASE("limits out of range are refused by Validate") {
  CHECK(ServerLimits{}.Validate().ok());
  std::vector<void (*)(ServerLimits&)> bad = {
      [](ServerLimits& l) { l.max_table_bytes = 0; },
      [](ServerLimits& l) { l.memory_budget_bytes = ServerLimits::kMaxMb * kMiB + 1; },
      [](ServerLimits& l) { l.max_table_bytes = l.memory_budget_bytes + kMiB; },
      [](ServerLimits& l) { l.default_sparse_rows = 63; },
      [](ServerLimits& l) { l.max_tables = 0; },
      [](ServerLimits& l) { l.max_keys_per_request = ServerLimits::kMaxKeys + 1; },
      [](ServerLimits& l) { l.max_pull_bytes = 2048 * kMiB; },
      [](ServerLimits& l) { l.max_block_values = 0; },
      [](ServerLimits& l) { l.max_name_length = kMaxTableNameLength + 1; },
      [](ServerLimits& l) { l.max_staged_bytes = 0; },
      [](ServerLimits& l) { l.max_workers = ServerLimits::kMaxWorkers + 1; },
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    INFO(i);
    CHECK(With(bad[i]).Validate().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("an optimizer's unused hyper-parameters are not validated") {
  TableConfig sgd = Dense("w", 8);
  sgd.optimizer.adam_epsilon = 0.0f;
  sgd.optimizer.momentum = 0.0f;
  sgd.optimizer.adam_beta2 = 7.0f;
  CHECK(sgd.Validate().ok());
  TableConfig adam = Dense("w", 8, OptimizerKind::kAdam);
  CHECK(adam.Validate().ok());
  adam.optimizer.adam_epsilon = 0.0f;
  CHECK(adam.Validate().code() == absl::StatusCode::kInvalidArgument);
  TableConfig momentum = Dense("w", 8, OptimizerKind::kMomentum);
  momentum.optimizer.momentum = 0.0f;
  CHECK(absl::StrContains(momentum.Validate().message(), "use sgd"));
}

}  // namespace
}  // namespace taups

// Bounded sparse tables: row limit with LRU eviction, admission by
// sightings, and re-initialization of rows that come back.
#include <catch2/catch.hpp>

#include <vector>

#include "common/initializer.h"
#include "server/parameter_store.h"
#include "server/stripe_rows.h"

namespace taups {
namespace {

TEST_CASE("a stripe evicts exactly its least recently used row") {
  StripeRows rows(/*row_stride=*/2, /*max_rows=*/2, /*admit_after=*/0);
  REQUIRE(rows.Create(1) != nullptr);
  REQUIRE(rows.Create(2) != nullptr);
  REQUIRE(rows.Find(1) != nullptr);  // 1 is now more recent than 2
  REQUIRE(rows.Create(3) != nullptr);
  REQUIRE(rows.Find(2) == nullptr);
  REQUIRE(rows.Find(1) != nullptr);
  REQUIRE(rows.Find(3) != nullptr);
  REQUIRE(rows.size() == 2);
  REQUIRE(rows.evictions() == 1);
  // The Finds above touched 1, then 3: 1 is now the least recently used.
  REQUIRE(rows.Create(4) != nullptr);
  REQUIRE(rows.Find(1) == nullptr);
  REQUIRE(rows.Find(3) != nullptr);
  REQUIRE(rows.Find(4) != nullptr);
}

TEST_CASE("a key is admitted on its n-th sighting") {
  StripeRows rows(1, 0, /*admit_after=*/3);
  REQUIRE(rows.Create(77) == nullptr);
  REQUIRE(rows.Create(77) == nullptr);
  REQUIRE(rows.Create(77) != nullptr);
  REQUIRE(rows.refused() == 2);
  REQUIRE(rows.Create(78) == nullptr);  // another key starts from zero
}

TableConfig Bounded(uint64_t max_rows, uint32_t admit_after) {
  TableConfig config = TableConfig::Sparse("emb", 4);
  config.optimizer.learning_rate = 1.0f;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.1f;
  config.initializer.seed = 5;
  config.sparse_max_rows = max_rows;
  config.sparse_admit_after = admit_after;
  return config;
}

PushMeta Meta(uint64_t seq, uint64_t base) {
  PushMeta meta;
  meta.origin = PushOrigin{0, 1, seq};
  meta.base_version = base;
  return meta;
}

TEST_CASE("memory stays under the row budget while far more ids stream in") {
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(Bounded(640, 0), false, &created).ok());
  std::vector<float> rows(256 * 4);
  uint64_t version = 0;
  for (uint64_t batch = 0; batch < 400; ++batch) {  // 102,400 distinct ids
    std::vector<uint64_t> keys(256);
    for (uint64_t i = 0; i < 256; ++i) keys[i] = batch * 256 + i;
    REQUIRE(store.PullSparse("emb", keys, absl::MakeSpan(rows)).ok());
    REQUIRE(store.GetTable("emb")->sparse_rows <= 640);
  }
  TableInfo info = *store.GetTable("emb");
  REQUIRE(info.sparse_rows == 640);  // 64 stripes x 10 rows, all full
  // Every id was seen once: each row beyond the budget evicted one.
  REQUIRE(info.sparse_evictions == 102400 - 640);
  // Pushes of new ids stay within the budget too.
  for (uint64_t batch = 400; batch < 440; ++batch) {
    std::vector<uint64_t> keys(256);
    for (uint64_t i = 0; i < 256; ++i) keys[i] = batch * 256 + i;
    REQUIRE(store.PushSparse("emb", keys, std::vector<float>(256 * 4, 0.01f),
                             Meta(batch + 1, version)).ok());
    ++version;
    REQUIRE(store.GetTable("emb")->sparse_rows <= 640);
  }
  info = *store.GetTable("emb");
  REQUIRE(info.sparse_evictions == 110 * 1024 - 640);
}

TEST_CASE("an evicted row that comes back is re-initialized") {
  ParameterStore store(0, 1);
  bool created = false;
  const TableConfig config = Bounded(64, 0);  // one row per stripe
  REQUIRE(store.CreateTable(config, false, &created).ok());
  std::vector<float> initial(4);
  Initializer(config.initializer, "emb").FillRow(9, absl::MakeSpan(initial));
  const std::vector<uint64_t> key = {9};
  REQUIRE(store.PushSparse("emb", key, std::vector<float>{1, 1, 1, 1}, Meta(1, 0)).ok());
  std::vector<float> row(4);
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row)).ok());
  REQUIRE(row[0] == Approx(initial[0] - 1.0f));
  // Flood key 9's stripe (and every other) until it is evicted.
  for (uint64_t k = 100; store.GetTable("emb")->sparse_evictions < 200; ++k) {
    const std::vector<uint64_t> other = {k};
    REQUIRE(store.PullSparse("emb", other, absl::MakeSpan(row)).ok());
  }
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row)).ok());
  REQUIRE(row == initial);
}

TEST_CASE("keys below the admission threshold read initial values, pushes drop") {
  ParameterStore store(0, 1);
  bool created = false;
  const TableConfig config = Bounded(0, 2);
  REQUIRE(store.CreateTable(config, false, &created).ok());
  std::vector<float> initial(4);
  Initializer(config.initializer, "emb").FillRow(3, absl::MakeSpan(initial));
  const std::vector<uint64_t> key = {3};
  // First sighting: a push, dropped.
  REQUIRE(store.PushSparse("emb", key, std::vector<float>{5, 5, 5, 5}, Meta(1, 0)).ok());
  REQUIRE(store.GetTable("emb")->sparse_rows == 0);
  REQUIRE(store.GetTable("emb")->sparse_refused == 1);
  // Second sighting admits it: the row is born from the initializer.
  std::vector<float> row(4);
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row)).ok());
  REQUIRE(row == initial);
  REQUIRE(store.GetTable("emb")->sparse_rows == 1);
  REQUIRE(store.PushSparse("emb", key, std::vector<float>{1, 1, 1, 1}, Meta(2, 1)).ok());
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row)).ok());
  REQUIRE(row[2] == Approx(initial[2] - 1.0f));
}

TEST_CASE("row limits are validated") {
  TableConfig config = Bounded(10, 0);
  REQUIRE(config.Validate().code() == absl::StatusCode::kInvalidArgument);
  TableConfig dense = TableConfig::Dense("d", 4);
  dense.sparse_max_rows = 100;
  REQUIRE(dense.Validate().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace taups

// The shard core with no network: table creation, validation that changes
// nothing, dense/sparse pull and push, versions and tau.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/initializer.h"
#include "common/shard_map.h"
#include "server/parameter_store.h"

namespace taups {
namespace {

TableConfig DenseSgd(const std::string& name, uint64_t size, float lr = 1.0f) {
  TableConfig config = TableConfig::Dense(name, size);
  config.optimizer.learning_rate = lr;
  return config;
}

std::vector<float> PullAll(ParameterStore& store, const std::string& t,
                           Range range) {
  std::vector<float> out(range.size());
  REQUIRE(store.PullDense(t, range.begin, absl::MakeSpan(out)).ok());
  return out;
}

PushOrigin Origin(uint32_t worker, uint64_t seq) {
  return PushOrigin{worker, 1, seq};
}

PushMeta Meta(PushOrigin origin, uint64_t base_version, uint32_t slices,
              uint32_t slice_index = 0) {
  PushMeta meta;
  meta.origin = origin;
  meta.base_version = base_version;
  meta.slices = slices;
  meta.slice_index = slice_index;
  return meta;
}

const TableStats& StatsOf(const StoreStats& stats) {
  REQUIRE(stats.tables.size() == 1);
  return stats.tables[0].second;
}

TEST_CASE("creating a table is idempotent only for identical configs") {
  ParameterStore store(0, 2);
  bool created = false;
  auto info = store.CreateTable(DenseSgd("w", 10), true, &created);
  REQUIRE(info.ok());
  REQUIRE(created);
  REQUIRE(info->range.begin == 0);
  REQUIRE(info->range.end == 5);
  REQUIRE(store.CreateTable(DenseSgd("w", 10), true, &created).ok());
  REQUIRE_FALSE(created);
  REQUIRE(store.CreateTable(DenseSgd("w", 10), false, &created).status().code() ==
          absl::StatusCode::kAlreadyExists);
  REQUIRE(store.CreateTable(DenseSgd("w", 12), true, &created).status().code() ==
          absl::StatusCode::kAlreadyExists);
}

TEST_CASE("invalid table configs are refused") {
  ParameterStore store(0, 1);
  bool created = false;
  TableConfig bad_lr = DenseSgd("a", 10);
  bad_lr.optimizer.learning_rate = std::numeric_limits<float>::quiet_NaN();
  REQUIRE(store.CreateTable(bad_lr, true, &created).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(store.CreateTable(DenseSgd("", 10), true, &created).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(store.CreateTable(DenseSgd("has space", 10), true, &created)
              .status()
              .code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(store.CreateTable(DenseSgd("z", 0), true, &created).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(store.CreateTable(TableConfig::Sparse("s", 0), true, &created)
              .status()
              .code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(store.ListTables().empty());
}

TEST_CASE("dense push applies SGD and advances the version; tau is measured") {
  ParameterStore store(1, 2);  // shard 1 of 2 holds [5, 10) of 10
  bool created = false;
  REQUIRE(store.CreateTable(DenseSgd("w", 10, 0.5f), true, &created).ok());
  const Range range{5, 10};
  REQUIRE(PullAll(store, "w", range) == std::vector<float>(5, 0.0f));

  const std::vector<float> g = {1, 2, 3, 4, 5};
  auto first = store.PushDense("w", 5, g, Meta(Origin(0, 1), 0, 1));
  REQUIRE(first.ok());
  REQUIRE(first->accepted);
  REQUIRE(first->tau == 0);
  REQUIRE(first->new_version == 1);
  REQUIRE(PullAll(store, "w", range) ==
          std::vector<float>{-0.5f, -1.0f, -1.5f, -2.0f, -2.5f});

  // A second worker still on version 0 is one update stale.
  auto second = store.PushDense("w", 5, g, Meta(Origin(1, 1), 0, 1));
  REQUIRE(second.ok());
  REQUIRE(second->tau == 1);
  REQUIRE(second->new_version == 2);
  auto info = store.GetTable("w");
  REQUIRE(info->version == 2);
  const StoreStats stats = store.Stats("w");
  REQUIRE(StatsOf(stats).pushes == 2);
  REQUIRE(StatsOf(stats).tau.sum() == 1);
  REQUIRE(StatsOf(stats).tau.max() == 1);
}

TEST_CASE("a push from the future (a restored shard) is refused, not an error") {
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(DenseSgd("w", 4), true, &created).ok());
  const std::vector<float> g(4, 1.0f);
  auto pushed = store.PushDense("w", 0, g, Meta(Origin(0, 1), 7, 1));
  REQUIRE(pushed.ok());
  REQUIRE(!pushed->accepted);
  REQUIRE(absl::StrContains(pushed->reject_reason, "restarted from a checkpoint"));
  REQUIRE(store.GetTable("w")->version == 0);
  REQUIRE(PullAll(store, "w", {0, 4}) == std::vector<float>(4, 0.0f));
}

TEST_CASE("bad dense requests change nothing") {
  ParameterStore store(0, 2);  // holds [0, 5) of 10
  bool created = false;
  REQUIRE(store.CreateTable(DenseSgd("w", 10), true, &created).ok());
  REQUIRE(store.CreateTable(TableConfig::Sparse("emb", 4), true, &created).ok());
  const std::vector<float> g(5, 1.0f);
  std::vector<float> nan = g;
  nan[3] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> inf = g;
  inf[0] = -std::numeric_limits<float>::infinity();

  REQUIRE(store.PushDense("nope", 0, g, Meta(Origin(0, 1), 0, 1)).status().code() ==
          absl::StatusCode::kNotFound);
  REQUIRE(store.PushDense("w", 1, g, Meta(Origin(0, 2), 0, 1)).status().code() ==
          absl::StatusCode::kOutOfRange);  // [1, 6) leaves the shard
  REQUIRE(store.PushDense("w", 5, g, Meta(Origin(0, 3), 0, 1)).status().code() ==
          absl::StatusCode::kOutOfRange);  // the other shard's range
  REQUIRE(store.PushDense("w", 0, nan, Meta(Origin(0, 4), 0, 1)).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(store.PushDense("w", 0, inf, Meta(Origin(0, 5), 0, 1)).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(store.PushDense("w", 0, {}, Meta(Origin(0, 6), 0, 1)).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(store.PushDense("emb", 0, g, Meta(Origin(0, 7), 0, 1)).status().code() ==
          absl::StatusCode::kInvalidArgument);  // sparse table, dense call
  REQUIRE(store.PushDense("w", 0, g, Meta(Origin(0, 8), 0, 6)).status().code() ==
          absl::StatusCode::kInvalidArgument);  // more slices than elements
  std::vector<float> out(6);
  REQUIRE(store.PullDense("w", 0, absl::MakeSpan(out)).status().code() ==
          absl::StatusCode::kOutOfRange);

  REQUIRE(store.nonfinite_rejections() == 2);
  auto info = store.GetTable("w");
  REQUIRE(info->version == 0);
  REQUIRE(StatsOf(store.Stats("w")).pushes == 0);
  REQUIRE(PullAll(store, "w", {0, 5}) == std::vector<float>(5, 0.0f));
}

TEST_CASE("a push in slices is applied whole when its last slice arrives") {
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(DenseSgd("w", 6), true, &created).ok());
  // Worker 1 moves the version to 1 first.
  REQUIRE(store.PushDense("w", 0, std::vector<float>(6, 0.0f), Meta(Origin(1, 1), 0, 1))
              .ok());
  // Worker 0's push (base 0) arrives as 3 slices, out of order; worker 1
  // pushes between slices. Nothing of worker 0's push shows until its last
  // slice: then it applies as one update, stamped with the tau of that
  // moment (version 2 - base 0).
  const std::vector<float> g(2, 1.0f);
  auto a = store.PushDense("w", 0, g, Meta(Origin(0, 9), 0, 3, 0));
  REQUIRE(a.ok());
  REQUIRE(a->staged);
  REQUIRE(a->new_version == 1);
  REQUIRE(store.PushDense("w", 0, std::vector<float>(6, 0.0f), Meta(Origin(1, 2), 1, 1))
              ->new_version == 2);
  auto b = store.PushDense("w", 4, g, Meta(Origin(0, 9), 0, 3, 2));
  REQUIRE(b->staged);
  REQUIRE(b->new_version == 2);
  REQUIRE(PullAll(store, "w", {0, 6}) == std::vector<float>(6, 0.0f));
  auto c = store.PushDense("w", 2, g, Meta(Origin(0, 9), 0, 3, 1));
  REQUIRE(!c->staged);
  REQUIRE(c->accepted);
  REQUIRE(c->tau == 2);
  REQUIRE(c->new_version == 3);
  REQUIRE(PullAll(store, "w", {0, 6}) == std::vector<float>(6, -1.0f));
  REQUIRE(StatsOf(store.Stats("w")).pushes == 3);
  // The same slice again is answered, not applied.
  auto again = store.PushDense("w", 2, g, Meta(Origin(0, 9), 0, 3, 1));
  REQUIRE(again->duplicate);
  REQUIRE(again->new_version == 3);
  REQUIRE(PullAll(store, "w", {0, 6}) == std::vector<float>(6, -1.0f));
}

TEST_CASE("a shard's stats read the version with the steps it has closed") {
  // A one-worker sync table: every push closes a step and applies one
  // update, so each read must show as many versions as closed steps,
  // however the reads fall between the pushes.
  ParameterStore store(0, 1);
  store.Register(0, 10, absl::ZeroDuration());
  TableConfig sync = DenseSgd("s", 4, 0.01f);
  sync.consistency.kind = ConsistencyKind::kSync;
  sync.consistency.num_workers = 1;
  bool created = false;
  REQUIRE(store.CreateTable(sync, true, &created).ok());
  constexpr uint64_t kSteps = 3000;
  std::atomic<bool> done{false};
  std::atomic<bool> reading{false};
  std::atomic<uint64_t> failed_pushes{0};
  std::thread pusher([&] {
    const std::vector<float> g(4, 1.0f);
    // Not before the reader runs: on a loaded machine all 3,000 pushes once
    // landed before its first read.
    while (!reading.load()) std::this_thread::yield();
    for (uint64_t step = 0; step < kSteps; ++step) {
      PushMeta meta = Meta(PushOrigin{0, 10, step + 1}, step, 1);
      meta.clock = step;
      if (!store.PushDense("s", 0, g, meta).ok()) ++failed_pushes;
    }
    done = true;
  });
  uint64_t reads = 0;
  uint64_t mismatches = 0;
  while (!done.load()) {
    const StoreStats stats = store.Stats("s");
    const auto& [info, counters] = stats.tables.at(0);
    if (info.version != counters.steps_closed) ++mismatches;
    ++reads;
    reading.store(true);
  }
  pusher.join();
  REQUIRE(failed_pushes.load() == 0);
  INFO(reads << " reads while the steps closed");
  CHECK(reads > 0);
  CHECK(mismatches == 0);
  const StoreStats end = store.Stats("s");
  CHECK(end.tables.at(0).first.version == kSteps);
  CHECK(StatsOf(end).steps_closed == kSteps);
}

TEST_CASE("a refused slice leaves the whole push unapplied") {
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(DenseSgd("w", 6), true, &created).ok());
  const std::vector<float> g(2, 1.0f);
  std::vector<float> bad(2, 1.0f);
  bad[1] = std::nanf("");
  REQUIRE(store.PushDense("w", 0, g, Meta(Origin(0, 4), 0, 3, 0))->staged);
  REQUIRE(store.PushDense("w", 2, g, Meta(Origin(0, 4), 0, 3, 1))->staged);
  const auto refused = store.PushDense("w", 4, bad, Meta(Origin(0, 4), 0, 3, 2));
  REQUIRE(refused.status().code() == absl::StatusCode::kInvalidArgument);
  // A retry of an earlier slice gets the push's refusal, naming the slice.
  const auto late = store.PushDense("w", 0, g, Meta(Origin(0, 4), 0, 3, 0));
  REQUIRE(late.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(absl::StrContains(late.status().message(), "slice 2 of 3"));
  REQUIRE(store.GetTable("w")->version == 0);
  REQUIRE(PullAll(store, "w", {0, 6}) == std::vector<float>(6, 0.0f));
  REQUIRE(StatsOf(store.Stats("w")).pushes == 0);
}

TEST_CASE("sparse rows are born by the deterministic initializer") {
  ParameterStore store(0, 1);
  bool created = false;
  TableConfig config = TableConfig::Sparse("emb", 3);
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.1f;
  config.initializer.seed = 42;
  REQUIRE(store.CreateTable(config, true, &created).ok());
  const std::vector<uint64_t> keys = {7, 123456789, 7};
  std::vector<float> rows(9);
  REQUIRE(store.PullSparse("emb", keys, absl::MakeSpan(rows)).ok());
  std::vector<float> expected(3);
  Initializer(config.initializer, "emb").FillRow(123456789, absl::MakeSpan(expected));
  REQUIRE(std::vector<float>(rows.begin() + 3, rows.begin() + 6) == expected);
  REQUIRE(std::vector<float>(rows.begin(), rows.begin() + 3) ==
          std::vector<float>(rows.begin() + 6, rows.end()));
  for (float v : rows) REQUIRE(std::abs(v) <= 0.1f);
  REQUIRE(expected[0] != expected[1]);
  REQUIRE(store.GetTable("emb")->sparse_rows == 2);
}

TEST_CASE("the only shard of a one-shard map owns every key") {
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(TableConfig::Sparse("emb", 2), true, &created).ok());
  const std::vector<uint64_t> keys = {0, 1, 0x9e3779b97f4a7c15ULL,
                                      std::numeric_limits<uint64_t>::max()};
  std::vector<float> rows(keys.size() * 2);
  REQUIRE(store.PullSparse("emb", keys, absl::MakeSpan(rows)).ok());
  const std::vector<float> g(keys.size() * 2, 0.5f);
  REQUIRE(store.PushSparse("emb", keys, g, Meta(Origin(0, 1), 0, 1)).ok());
  REQUIRE(store.GetTable("emb")->sparse_rows == keys.size());
}

TEST_CASE("sparse push applies per row; bad sparse requests change nothing") {
  ParameterStore store(0, 2);
  bool created = false;
  TableConfig config = TableConfig::Sparse("emb", 2);
  config.optimizer.learning_rate = 1.0f;
  REQUIRE(store.CreateTable(config, true, &created).ok());
  std::vector<uint64_t> mine, theirs;
  for (uint64_t k = 0; mine.size() < 3 || theirs.empty(); ++k) {
    (SparseShardOf(k, 2) == 0 ? mine : theirs).push_back(k);
  }
  mine.resize(3);
  const std::vector<float> g = {1, 2, 3, 4, 5, 6};
  auto pushed = store.PushSparse("emb", mine, g, Meta(Origin(0, 1), 0, 1));
  REQUIRE(pushed.ok());
  REQUIRE(pushed->new_version == 1);
  std::vector<float> rows(6);
  REQUIRE(store.PullSparse("emb", mine, absl::MakeSpan(rows)).ok());
  REQUIRE(rows == std::vector<float>{-1, -2, -3, -4, -5, -6});

  const std::vector<uint64_t> dup = {mine[0], mine[1], mine[0]};
  REQUIRE(store.PushSparse("emb", dup, g, Meta(Origin(0, 2), 1, 1)).status().code() ==
          absl::StatusCode::kInvalidArgument);
  const std::vector<uint64_t> foreign = {mine[0], mine[1], theirs[0]};
  REQUIRE(store.PushSparse("emb", foreign, g, Meta(Origin(0, 3), 1, 1)).status().code() ==
          absl::StatusCode::kInvalidArgument);
  const absl::Status foreign_pull =
      store.PullSparse("emb", foreign, absl::MakeSpan(rows)).status();
  REQUIRE(foreign_pull.code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(absl::StrContains(foreign_pull.message(),
                            absl::StrCat("key ", theirs[0],
                                         " belongs to shard 1, not shard 0")));
  REQUIRE(store.PushSparse("emb", mine, std::vector<float>(5, 1.0f),
                           Meta(Origin(0, 4), 1, 1))
              .status()
              .code() == absl::StatusCode::kInvalidArgument);
  std::vector<float> nan = g;
  nan[5] = std::numeric_limits<float>::quiet_NaN();
  REQUIRE(store.PushSparse("emb", mine, nan, Meta(Origin(0, 5), 1, 1)).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(store.PushSparse("emb", {}, {}, Meta(Origin(0, 6), 1, 1)).status().code() ==
          absl::StatusCode::kInvalidArgument);

  REQUIRE(store.GetTable("emb")->version == 1);
  REQUIRE(store.GetTable("emb")->sparse_rows == 3);  // theirs[0] never created
  REQUIRE(store.PullSparse("emb", mine, absl::MakeSpan(rows)).ok());
  REQUIRE(rows == std::vector<float>{-1, -2, -3, -4, -5, -6});
}

}  // namespace
}  // namespace taups

namespace taups {
namespace {

TEST_CASE("every optimizer updates dense ranges and sparse rows as it does alone") {
  for (OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kMomentum,
        OptimizerKind::kAdam, OptimizerKind::kFtrl}) {
    INFO(OptimizerKindName(kind));
    OptimizerConfig opt;
    opt.kind = kind;
    opt.learning_rate = 0.1f;
    opt.ftrl_l1 = 0.01f;
    InitializerConfig init;
    init.kind = InitializerKind::kUniform;
    init.scale = 0.5f;
    init.seed = 9;
    TableConfig dense = TableConfig::Dense("d", 5);
    dense.optimizer = opt;
    dense.initializer = init;
    TableConfig sparse = TableConfig::Sparse("s", 3);
    sparse.optimizer = opt;
    sparse.initializer = init;
    ParameterStore store(0, 1);
    bool created = false;
    REQUIRE(store.CreateTable(dense, false, &created).ok());
    REQUIRE(store.CreateTable(sparse, false, &created).ok());

    const std::vector<float> g = {0.3f, -1.0f, 2.0f, 0.0f, -0.2f};
    const std::vector<uint64_t> keys = {42, 7};
    const std::vector<float> rows_g = {0.3f, -1.0f, 2.0f, 1.5f, 0.0f, -0.7f};
    // Reference: the optimizer alone on the initial values, twice.
    auto reference = MakeOptimizer(opt);
    std::vector<float> w(5), wstate(5 * reference->state_width());
    Initializer(init, "d").FillDense(0, absl::MakeSpan(w));
    reference->InitState(wstate.data(), 5);
    std::vector<float> rows(6), rstate(6 * reference->state_width());
    Initializer(init, "s").FillRow(42, absl::MakeSpan(rows.data(), 3));
    Initializer(init, "s").FillRow(7, absl::MakeSpan(rows.data() + 3, 3));
    reference->InitState(rstate.data(), 6);
    for (uint64_t step = 0; step < 2; ++step) {
      reference->Apply(w.data(), wstate.data(), g.data(), 5, 1.0f);
      reference->Apply(rows.data(), rstate.data(), rows_g.data(), 6, 1.0f);
      REQUIRE(store.PushDense("d", 0, g, Meta(Origin(0, step + 1), step, 1)).ok());
      REQUIRE(store.PushSparse("s", keys, rows_g, Meta(Origin(0, step + 1), step, 1)).ok());
    }
    std::vector<float> got(5), got_rows(6);
    REQUIRE(store.PullDense("d", 0, absl::MakeSpan(got)).ok());
    REQUIRE(store.PullSparse("s", keys, absl::MakeSpan(got_rows)).ok());
    for (size_t i = 0; i < 5; ++i) REQUIRE(got[i] == Approx(w[i]));
    for (size_t i = 0; i < 6; ++i) REQUIRE(got_rows[i] == Approx(rows[i]));
  }
}

}  // namespace
}  // namespace taups

// Per-row versions of sparse tables and the per-row tau of pushes that carry
// them back, at the store level (no network).
#include <catch2/catch.hpp>

#include <vector>

#include "server/parameter_store.h"

namespace taups {
namespace {

TableConfig Emb() {
  TableConfig config = TableConfig::Sparse("emb", 2);
  config.optimizer.learning_rate = 1.0f;
  return config;
}

struct Worker {
  Worker(ParameterStore* s, uint32_t worker) : store(s), id(worker) {}
  ParameterStore* store;
  uint32_t id;
  uint64_t seq = 0;
  uint64_t table_version = 0;  // from the last pull
  std::vector<uint64_t> keys, versions;

  void Pull(std::vector<uint64_t> pull_keys) {
    keys = std::move(pull_keys);
    versions.assign(keys.size(), 99);
    std::vector<float> rows(keys.size() * 2);
    PullContext ctx;
    ctx.worker = id;
    auto pulled = store->PullSparse("emb", keys, absl::MakeSpan(rows), ctx,
                                    absl::MakeSpan(versions));
    REQUIRE(pulled.ok());
    table_version = pulled->version;
  }
  // Pushes the keys of the last pull with their row versions as bases.
  PushOutcome Push() {
    PushMeta meta;
    meta.origin = PushOrigin{id, 1, ++seq};
    meta.base_version = table_version;
    meta.row_base_versions = versions;
    auto pushed = store->PushSparse(
        "emb", keys, std::vector<float>(keys.size() * 2, 0.5f), meta);
    REQUIRE(pushed.ok());
    return *pushed;
  }
};

TEST_CASE("per-row tau is exact on a hand-made interleaving") {
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(Emb(), false, &created).ok());
  Worker a{&store, 1}, b{&store, 2};

  a.Pull({1, 2});  // rows 1, 2 at version 0
  REQUIRE(a.versions == std::vector<uint64_t>{0, 0});
  b.Pull({2, 3});
  PushOutcome pa = a.Push();  // 1 -> v1, 2 -> v1
  REQUIRE(pa.row_taus == std::vector<uint64_t>{0, 0});
  REQUIRE(pa.tau == 0);
  PushOutcome pb = b.Push();  // row 2 moved once since b read it
  REQUIRE(pb.row_taus == std::vector<uint64_t>{1, 0});
  REQUIRE(pb.tau == 1);  // the table moved once too
  REQUIRE(pb.row_tau.rows == 2);
  REQUIRE(pb.row_tau.max == 1);
  REQUIRE(pb.row_tau.mean() == 0.5);
  // a pushes again on its old pull: row 1 moved once (a's own push), row 2
  // twice.
  PushOutcome pa2 = a.Push();
  REQUIRE(pa2.row_taus == std::vector<uint64_t>{1, 2});
  REQUIRE(pa2.tau == 2);
  // Rows that nobody else touched stay fresh however much the table moves.
  Worker c{&store, 3};
  c.Pull({9, 2});
  REQUIRE(c.versions == std::vector<uint64_t>{0, 3});
  b.Pull({2, 3});
  REQUIRE(b.versions == std::vector<uint64_t>{3, 1});
  REQUIRE(b.Push().row_taus == std::vector<uint64_t>{0, 0});  // 2 -> v4, 3 -> v2
  REQUIRE(b.Push().row_taus == std::vector<uint64_t>{1, 1});  // 2 -> v5, 3 -> v3
  PushOutcome pa3 = a.Push();  // still on its first pull
  REQUIRE(pa3.row_taus == std::vector<uint64_t>{2, 5});  // 1 -> v3, 2 -> v6
  REQUIRE(pa3.tau == 5);
  PushOutcome pc = c.Push();
  REQUIRE(pc.tau == 3);  // the table moved 3 times since c's pull...
  REQUIRE(pc.row_taus == std::vector<uint64_t>{0, 3});  // ...row 9 never
  REQUIRE(pc.row_tau.reborn == 0);

  // Every measured row is in the table's row-tau histogram:
  // 0 0 | 1 0 | 1 2 | 0 0 | 1 1 | 2 5 | 0 3.
  const StoreStats stats = store.Stats("emb");
  const Histogram& h = stats.tables[0].second.row_tau;
  REQUIRE(h.count() == 14);
  REQUIRE(h.sum() == 16);
  REQUIRE(h.max() == 5);
  REQUIRE(h.counts()[0] == 6);
  REQUIRE(h.counts()[1] == 4);
  REQUIRE(h.counts()[2] == 2);
  REQUIRE(h.counts()[3] == 1);
  REQUIRE(h.counts()[5] == 1);
  // Pulls never change versions; pushes without row bases measure nothing.
  PushMeta plain;
  plain.origin = PushOrigin{4, 1, 1};
  plain.base_version = 7;
  auto pushed = store.PushSparse("emb", std::vector<uint64_t>{1},
                                 std::vector<float>{1, 1}, plain);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->row_taus.empty());
  REQUIRE(pushed->row_tau.rows == 0);
  REQUIRE(store.Stats("emb").tables[0].second.row_tau.count() == 14);
}

TEST_CASE("unknown row bases are not measured; sizes are checked") {
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(Emb(), false, &created).ok());
  const std::vector<uint64_t> keys = {4, 5};
  PushMeta meta;
  meta.origin = PushOrigin{0, 1, 1};
  const std::vector<uint64_t> bases = {kUnknownRowVersion, 0};
  meta.row_base_versions = bases;
  auto pushed = store.PushSparse("emb", keys, std::vector<float>(4, 1.0f), meta);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->row_taus == std::vector<uint64_t>{kUnknownRowVersion, 0});
  REQUIRE(pushed->row_tau.rows == 1);
  const std::vector<uint64_t> short_bases = {0};
  meta.row_base_versions = short_bases;
  meta.origin.seq = 2;
  REQUIRE(store.PushSparse("emb", keys, std::vector<float>(4, 1.0f), meta)
              .status().code() == absl::StatusCode::kInvalidArgument);
  std::vector<float> rows(4);
  std::vector<uint64_t> versions(3);
  REQUIRE(store.PullSparse("emb", keys, absl::MakeSpan(rows), {},
                           absl::MakeSpan(versions))
              .status().code() == absl::StatusCode::kInvalidArgument);
  versions.resize(2);
  REQUIRE(store.PullSparse("emb", keys, absl::MakeSpan(rows), {},
                           absl::MakeSpan(versions)).ok());
  REQUIRE(versions == std::vector<uint64_t>{1, 1});  // the bad push changed nothing
}

TEST_CASE("sync tables measure row tau on arrival, before the step applies") {
  ParameterStore store(0, 1);
  TableConfig config = Emb();
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = 1;
  bool created = false;
  REQUIRE(store.CreateTable(config, false, &created).ok());
  store.Register(1, 1, absl::Seconds(60));
  Worker w{&store, 1};
  w.Pull({6, 7});
  PushMeta meta;
  meta.origin = PushOrigin{1, 1, 1};
  meta.row_base_versions = w.versions;
  // The only worker's push closes the step and applies it: version 1 after,
  // but the gradient was computed on version 0 rows, tau 0.
  auto pushed = store.PushSparse("emb", w.keys, std::vector<float>(4, 1.0f), meta);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->new_version == 1);
  REQUIRE(pushed->row_taus == std::vector<uint64_t>{0, 0});
  // A push for step 1 still on the step-0 rows: each row moved once.
  meta.origin.seq = 2;
  meta.clock = 1;
  meta.base_version = 0;
  pushed = store.PushSparse("emb", w.keys, std::vector<float>(4, 1.0f), meta);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->row_taus == std::vector<uint64_t>{1, 1});
  PullContext ctx;
  ctx.worker = 1;
  ctx.clock = 2;
  std::vector<float> rows(4);
  std::vector<uint64_t> versions(2);
  REQUIRE(store.PullSparse("emb", w.keys, absl::MakeSpan(rows), ctx,
                           absl::MakeSpan(versions)).ok());
  REQUIRE(versions == std::vector<uint64_t>{2, 2});  // one update per step
}

TEST_CASE("a refused stale push still reports its rows' tau, changing nothing") {
  ParameterStore store(0, 1);
  TableConfig config = Emb();
  config.staleness.reject_above_tau_max = true;
  config.staleness.tau_max = 0;
  bool created = false;
  REQUIRE(store.CreateTable(config, false, &created).ok());
  Worker a{&store, 1}, b{&store, 2};
  a.Pull({1});
  b.Pull({1});
  REQUIRE(a.Push().accepted);
  PushOutcome refused = b.Push();
  REQUIRE(!refused.accepted);
  REQUIRE(refused.row_taus == std::vector<uint64_t>{1});
  b.Pull({1});
  REQUIRE(b.versions == std::vector<uint64_t>{1});  // not applied
}

}  // namespace
}  // namespace taups

// Per-row versions and per-row tau through the client library against real
// shards over gRPC, and the sparse memory settings on the wire.
#include <catch2/catch.hpp>

#include <vector>

#include "absl/time/clock.h"
#include "common/initializer.h"
#include "common/shard_map.h"
#include "tests/inproc_cluster.h"

namespace taups {
namespace {

TableConfig Emb(uint32_t dim = 2) {
  TableConfig config = TableConfig::Sparse("emb", dim);
  config.optimizer.learning_rate = 1.0f;
  return config;
}

// Two keys owned by different shards of a 2-shard cluster.
std::pair<uint64_t, uint64_t> KeysOnBothShards() {
  uint64_t a = 1, b = 2;
  while (SparseShardOf(a, 2) != 0) ++a;
  while (SparseShardOf(b, 2) != 1) ++b;
  return {a, b};
}

TEST_CASE("per-row tau over gRPC is exact, per key in the caller's order") {
  InProcessCluster cluster(2);
  auto a = cluster.Connect(1);
  auto b = cluster.Connect(2);
  REQUIRE(a->CreateTable(Emb()).ok());
  const auto [k1, k2] = KeysOnBothShards();  // shard 0, shard 1
  uint64_t k3 = k2 + 1;
  while (SparseShardOf(k3, 2) != 0) ++k3;
  SparsePullOptions with_versions;
  with_versions.row_versions = true;
  std::vector<float> rows(6 * 2);

  auto pa = a->PullSparse("emb", {k1, k2}, absl::MakeSpan(rows).subspan(0, 4),
                          with_versions);
  REQUIRE(pa.ok());
  REQUIRE(pa->row_keys == std::vector<uint64_t>{k1, k2});
  REQUIRE(pa->row_versions == std::vector<uint64_t>{0, 0});
  auto pb = b->PullSparse("emb", {k2, k3}, absl::MakeSpan(rows).subspan(0, 4),
                          with_versions);
  REQUIRE(pb.ok());

  // a pushes against its last pull (no basis named): sent automatically.
  auto r1 = a->PushSparse("emb", {k1, k2}, std::vector<float>(4, 0.5f));
  REQUIRE(r1.ok());
  REQUIRE(r1->row_taus == std::vector<uint64_t>{0, 0});
  // b pushes on its pull, keys reordered and duplicated: k2 moved once.
  auto r2 = b->PushSparse("emb", {k3, k2, k3}, std::vector<float>(6, 0.5f), &*pb);
  REQUIRE(r2.ok());
  REQUIRE(r2->row_taus == std::vector<uint64_t>{0, 1, 0});
  REQUIRE(r2->max_row_tau() == 1);
  REQUIRE(r2->mean_row_tau() == 0.5);
  REQUIRE(r2->shards[1].row_tau_rows == 1);  // k2
  REQUIRE(r2->shards[1].row_tau_max == 1);
  REQUIRE(r2->shards[0].row_tau_rows == 1);  // k3, once after merging
  // a pushes again on its first pull, plus a key it never pulled.
  uint64_t k4 = k3 + 1;
  auto r3 = a->PushSparse("emb", {k1, k2, k4}, std::vector<float>(6, 0.5f), &*pa);
  REQUIRE(r3.ok());
  REQUIRE(r3->row_taus == std::vector<uint64_t>{1, 2, kUnknownRowVersion});
  REQUIRE(r3->max_row_tau() == 2);
  // The table-wide tau is a different thing: shard 1 moved twice since a's
  // pull, shard 0 twice too (a's and b's pushes).
  REQUIRE(r3->shards[1].tau == 2);

  // Row versions read back match the updates each row had.
  auto now = a->PullSparse("emb", {k2, k1, k3, k4},
                           absl::MakeSpan(rows).subspan(0, 8), with_versions);
  REQUIRE(now.ok());
  REQUIRE(now->row_versions == std::vector<uint64_t>{3, 2, 1, 1});

  // The shards recorded every measured row: 2 + 2 + 2.
  auto stats = a->Stats("emb");
  REQUIRE(stats.ok());
  uint64_t measured = 0;
  double max = 0;
  for (const TableShardStats& s : *stats) {
    measured += s.row_tau_count;
    max = std::max(max, s.row_tau_max);
  }
  REQUIRE(measured == 6);
  REQUIRE(max == 2);

  // A pull without row versions forgets them: plain pushes again.
  REQUIRE(a->PullSparse("emb", {k1}, absl::MakeSpan(rows).subspan(0, 2)).ok());
  auto plain = a->PushSparse("emb", {k1}, std::vector<float>(2, 0.5f));
  REQUIRE(plain.ok());
  REQUIRE(plain->row_taus.empty());
}

TEST_CASE("a row evicted over gRPC comes back at version 0, counted reborn") {
  InProcessCluster cluster(1);
  auto client = cluster.Connect(0);
  TableConfig config = Emb(4);
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.1f;
  config.sparse_max_rows = 64;  // one row per stripe
  REQUIRE(client->CreateTable(config).ok());
  SparsePullOptions with_versions;
  with_versions.row_versions = true;
  std::vector<float> row(4);
  auto first = client->PullSparse("emb", {5}, absl::MakeSpan(row), with_versions);
  REQUIRE(first.ok());
  for (int i = 0; i < 3; ++i) {
    REQUIRE(client->PushSparse("emb", {5}, std::vector<float>(4, 1.0f)).ok());
  }
  auto before = client->PullSparse("emb", {5}, absl::MakeSpan(row), with_versions);
  REQUIRE(before.ok());
  REQUIRE(before->row_versions == std::vector<uint64_t>{3});
  std::vector<uint64_t> flood;
  for (uint64_t k = 1000; k < 1000 + 4096; ++k) flood.push_back(k);
  std::vector<float> flood_rows(flood.size() * 4);
  REQUIRE(client->PullSparse("emb", flood, absl::MakeSpan(flood_rows)).ok());
  auto stats = client->Stats("emb");
  REQUIRE(stats.ok());
  // Every one of the 1 + 4096 rows created past the 64 held evicted one.
  REQUIRE((*stats)[0].sparse_evictions == 1 + 4096 - 64);
  REQUIRE((*stats)[0].sparse_rows == 64);
  REQUIRE((*stats)[0].sparse_row_limit == 64);

  auto after = client->PullSparse("emb", {5}, absl::MakeSpan(row), with_versions);
  REQUIRE(after.ok());
  REQUIRE(after->row_versions == std::vector<uint64_t>{0});
  std::vector<float> initial(4);
  Initializer(config.initializer, "emb").FillRow(5, absl::MakeSpan(initial));
  REQUIRE(row == initial);
  // A push computed on the old row finds it reborn.
  auto pushed = client->PushSparse("emb", {5}, std::vector<float>(4, 1.0f), &*before);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->shards[0].row_tau_reborn == 1);
  REQUIRE(pushed->row_taus == std::vector<uint64_t>{0});
}

TEST_CASE("sparse memory settings travel and expiry runs on the shard's tick") {
  InProcessCluster cluster(2);
  auto a = cluster.Connect(0);
  auto b = cluster.Connect(1);
  TableConfig config = Emb(8);
  config.sparse_max_bytes = 4 << 20;
  config.sparse_eviction = SparseEvictionKind::kLfu;
  config.sparse_ttl_s = 0.1;
  config.sparse_admit_probability = 0.5f;
  config.sparse_admit_after = 1;
  REQUIRE(a->CreateTable(config).ok());
  auto opened = b->OpenTable("emb");
  REQUIRE(opened.ok());
  REQUIRE(*opened == config);
  REQUIRE(b->CreateTable(config).ok());  // identical: accepted
  TableConfig other = config;
  other.sparse_eviction = SparseEvictionKind::kLru;
  REQUIRE(b->CreateTable(other).code() == absl::StatusCode::kAlreadyExists);

  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 2000; ++k) keys.push_back(k);
  std::vector<float> rows(keys.size() * 8);
  REQUIRE(a->PullSparse("emb", keys, absl::MakeSpan(rows)).ok());
  auto stats = a->Stats("emb");
  REQUIRE(stats.ok());
  uint64_t held = 0, refused = 0;
  for (const TableShardStats& s : *stats) {
    held += s.sparse_rows;
    refused += s.sparse_refused;
    REQUIRE(s.sparse_row_limit > 0);
    REQUIRE(s.sparse_bytes <= config.sparse_max_bytes);
  }
  REQUIRE(held + refused == keys.size());
  REQUIRE(held > 800);  // about half admitted
  REQUIRE(held < 1200);
  // Nobody touches them again: the shards' ticks expire every row, none
  // before it was idle for the ttl.
  const absl::Time pulled = absl::Now();
  const absl::Time deadline = pulled + absl::Seconds(10);
  uint64_t expired = 0, left = held;
  while (absl::Now() < deadline && left > 0) {
    absl::SleepFor(absl::Milliseconds(50));
    stats = a->Stats("emb");
    REQUIRE(stats.ok());
    expired = left = 0;
    for (const TableShardStats& s : *stats) {
      expired += s.sparse_ttl_expired;
      left += s.sparse_rows;
    }
  }
  const double expired_after_s = absl::ToDoubleSeconds(absl::Now() - pulled);
  REQUIRE(left == 0);
  REQUIRE(expired == held);
  // ...and soon after: within the ttl plus the 50 ms poll, the stats calls
  // and scheduling (measured 0.15-0.22 s for the 0.1 s ttl).
  CHECK(expired_after_s >= config.sparse_ttl_s);
  CHECK(expired_after_s <= config.sparse_ttl_s + 0.5);
}

}  // namespace
}  // namespace taups

// SparseTable::Apply's batched path (a stripe's rows found first, then one
// ApplyRows call): the same rows, values, versions and evictions as updating
// row by row, including when a key of the request evicts another one's row.
#include <catch2/catch.hpp>

#include <vector>

#include "common/shard_map.h"
#include "server/sparse_table.h"
#include "tests/optimizer_reference.h"

namespace taups {
namespace {

// The stripe SparseTable files `key` under (its documented hash split: the
// high bits of MixKey).
int StripeOf(uint64_t key) {
  return static_cast<int>((MixKey(key) >> 40) % SparseTable::kStripes);
}

// `count` keys that share one stripe.
std::vector<uint64_t> KeysOfOneStripe(size_t count) {
  std::vector<uint64_t> keys = {1};
  for (uint64_t k = 2; keys.size() < count; ++k) {
    if (StripeOf(k) == StripeOf(1)) keys.push_back(k);
  }
  return keys;
}

TableConfig Emb(uint64_t max_rows) {
  TableConfig config = TableConfig::Sparse("emb", 4);
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.optimizer.learning_rate = 0.5f;
  config.sparse_max_rows = max_rows;
  return config;
}

std::vector<float> Row(SparseTable& table, uint64_t key, uint64_t* version) {
  std::vector<float> row(table.dim());
  std::vector<uint64_t> versions(1);
  table.Pull({key}, absl::MakeSpan(row), absl::MakeSpan(versions));
  *version = versions[0];
  return row;
}

TEST_CASE("a batched sparse apply matches row-by-row updates") {
  SparseTable table(Emb(0));
  const std::vector<uint64_t> keys = KeysOfOneStripe(5);
  std::vector<float> grads(keys.size() * 4);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.1f * (i + 1);
  // Expected: each key's initial row, one reference step.
  std::vector<std::vector<float>> expected;
  for (size_t i = 0; i < keys.size(); ++i) {
    uint64_t version = 0;
    std::vector<float> w = Row(table, keys[i], &version);
    std::vector<float> acc(4, table.config().optimizer.adagrad_initial_accumulator);
    ReferenceApply(table.config().optimizer, w.data(), acc.data(),
                   grads.data() + i * 4, 4, 1.0f);
    expected.push_back(w);
  }
  GradientPart part;
  part.keys = keys;
  part.values = grads;
  table.Apply(part, 1.0f, 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    uint64_t version = 0;
    REQUIRE(Row(table, keys[i], &version) == expected[i]);
    REQUIRE(version == 1);
  }
}

TEST_CASE("a key that evicts an earlier key's row in the same push") {
  // One row per stripe: the second key's creation evicts the first's row.
  SparseTable table(Emb(SparseTable::kStripes));
  const std::vector<uint64_t> keys = KeysOfOneStripe(2);
  uint64_t version = 0;
  Row(table, keys[0], &version);  // keys[0] has the stripe's one row
  std::vector<float> fresh(4);
  {
    // What keys[1] starts from: its initial row (read without a row).
    SparseTable other(Emb(0));
    fresh = Row(other, keys[1], &version);
  }
  const std::vector<float> grads = {1, 2, 3, 4, -1, -2, -3, -4};
  GradientPart part;
  part.keys = keys;
  part.values = grads;
  table.Apply(part, 1.0f, 0);
  std::vector<float> acc(4, table.config().optimizer.adagrad_initial_accumulator);
  ReferenceApply(table.config().optimizer, fresh.data(), acc.data(),
                 grads.data() + 4, 4, 1.0f);
  REQUIRE(table.counters().evictions == 1);
  // keys[1]'s row got its own gradient only, once.
  REQUIRE(Row(table, keys[1], &version) == fresh);
  REQUIRE(version == 1);
}

}  // namespace
}  // namespace taups

namespace taups {
namespace {

// What ParameterStore's duplicate check did before: a scan with a set of the
// keys seen so far, stopping at the first repeat.
std::optional<uint64_t> ScanForRepeat(const std::vector<uint64_t>& keys) {
  std::set<uint64_t> seen;
  for (uint64_t key : keys) {
    if (!seen.insert(key).second) return key;
  }
  return std::nullopt;
}

TEST_CASE("FirstRepeatedKey names the key a sequential scan stops at") {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 400; ++round) {
    // Up to 2^16 keys use the thread's kept set; more, a set of their own.
    const size_t n = round % 8 == 0 ? 32768 + rng() % 40000
                     : rng() % 3 == 0 ? rng() % 8 : rng() % 6000;
    // Large key spaces give mostly distinct keys, small ones many repeats.
    const uint64_t space = uint64_t{1} << (1 + rng() % 48);
    std::vector<uint64_t> keys(n);
    for (uint64_t& k : keys) k = rng() % space;
    if (n > 1 && rng() % 2 == 0) {  // make them distinct, then maybe repeat one
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      std::shuffle(keys.begin(), keys.end(), rng);
      if (keys.size() > 1 && rng() % 2 == 0) {
        keys[rng() % keys.size()] = keys[rng() % keys.size()];
      }
    }
    REQUIRE(SparseTable::FirstRepeatedKey(keys) == ScanForRepeat(keys));
  }
  REQUIRE(SparseTable::FirstRepeatedKey({}) == std::nullopt);
  // Two repeats: the one whose second sight comes first, in any stripe.
  REQUIRE(SparseTable::FirstRepeatedKey({7, 9, 11, 9, 7}) == 9u);
}

}  // namespace
}  // namespace taups

// SparseTable::Apply's batched path (a stripe's rows found first, then one
// ApplyRows call): the same rows, values, versions and evictions as updating
// row by row, including when a key of the request evicts another one's row;
// and the finite check (one RowsStayFinite per stripe) on held and new rows.
#include <catch2/catch.hpp>

#include <cmath>
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

TEST_CASE("the sparse finite check covers rows held and rows to create") {
  // Momentum, v' = 0.9 v + g: from v = 3e38 a gradient of 3e38 overflows v,
  // one of -3e38 gives -3e37 (finite, though max |g| alone cannot prove it);
  // from a new row's v = 0 either gives |v'| = 3e38 (finite).
  TableConfig config = TableConfig::Sparse("mom", 4);
  config.optimizer.kind = OptimizerKind::kMomentum;
  config.optimizer.learning_rate = 1e-3f;
  config.optimizer.momentum = 0.9f;
  SparseTable table(config);
  const std::vector<uint64_t> one_stripe = KeysOfOneStripe(3);
  uint64_t other_stripe = 2;
  while (StripeOf(other_stripe) == StripeOf(1)) ++other_stripe;
  const float big = 3e38f;
  // GradientPart only points at keys and values: each part's are kept here.
  std::vector<std::vector<uint64_t>> kept_keys;
  std::vector<std::vector<float>> kept_values;
  kept_keys.reserve(16);
  kept_values.reserve(16);
  auto part_of = [&](std::vector<uint64_t> keys, std::vector<float> per_key) {
    kept_keys.push_back(std::move(keys));
    kept_values.emplace_back();
    for (float g : per_key) kept_values.back().insert(kept_values.back().end(), 4, g);
    GradientPart part;
    part.keys = kept_keys.back();
    part.values = kept_values.back();
    return part;
  };
  // Rows with v = 3e38 for one_stripe[0] and other_stripe.
  GradientPart seed = part_of({one_stripe[0], other_stripe}, {big, big});
  REQUIRE(table.UpdateStaysFinite(seed, 1.0f, 0));
  table.Apply(seed, 1.0f, 0);
  const TableSnapshot held = table.Export();
  // Held rows: only the gradient of the same sign overflows.
  REQUIRE_FALSE(table.UpdateStaysFinite(part_of({one_stripe[0]}, {big}), 1.0f, 0));
  REQUIRE(table.UpdateStaysFinite(part_of({one_stripe[0]}, {-big}), 1.0f, 0));
  // Rows to create, alone and next to held ones in the same stripe.
  REQUIRE(table.UpdateStaysFinite(part_of({one_stripe[1], one_stripe[2]},
                                          {big, -big}), 1.0f, 0));
  REQUIRE(table.UpdateStaysFinite(part_of({one_stripe[1], one_stripe[0]},
                                          {big, -big}), 1.0f, 0));
  REQUIRE_FALSE(table.UpdateStaysFinite(
      part_of({one_stripe[1], one_stripe[0]}, {-big, big}), 1.0f, 0));
  // The overflowing row in another stripe than the first key's.
  REQUIRE_FALSE(table.UpdateStaysFinite(
      part_of({one_stripe[0], one_stripe[1], other_stripe}, {-big, big, big}),
      1.0f, 0));
  REQUIRE(table.UpdateStaysFinite(
      part_of({one_stripe[0], one_stripe[1], other_stripe}, {-big, big, -big}),
      1.0f, 0));
  // A NaN gradient is refused; the checks created and changed nothing.
  REQUIRE_FALSE(table.UpdateStaysFinite(part_of({one_stripe[1]}, {NAN}), 1.0f, 0));
  const TableSnapshot after = table.Export();
  REQUIRE(after.keys == held.keys);
  REQUIRE(after.values == held.values);
  REQUIRE(after.state == held.state);
  REQUIRE(after.row_versions == held.row_versions);
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

// The client's key grouping and gradient merge (worker/src/shard_router)
// against the implementation they replaced (tests/shard_router_reference.h).
// Random keys (few distinct ones, so duplicates are common, or many),
// random shard layouts (also with moved buckets) and gradients that include
// -0.0, infinities, NaNs and subnormals. Groups must be equal element for
// element and every merged float equal bit for bit.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "common/ownership_map.h"
#include "tests/shard_router_reference.h"
#include "worker/src/shard_router.h"

namespace taups {
namespace {

float RandomGradient(std::mt19937_64& rng) {
  switch (rng() % 16) {
    case 0: return -0.0f;
    case 1: return 0.0f;
    case 2: return std::numeric_limits<float>::infinity();
    case 3: return -std::numeric_limits<float>::infinity();
    case 4: return std::numeric_limits<float>::quiet_NaN();
    case 5: return std::numeric_limits<float>::denorm_min() * (rng() % 7);
    case 6: return std::numeric_limits<float>::max();
    default: {
      std::normal_distribution<float> normal(0.0f, 1.0f);
      return normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
    }
  }
}

// Bit for bit, except that any NaN equals any NaN: when both operands of
// an add are NaN, which one's payload survives depends on the order the
// compiler put them in (it may commute an add in either version), and a
// shard refuses a non-finite gradient whatever its bits.
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      UNSCOPED_INFO("float " << i << ": " << a[i] << " vs " << b[i]);
      return false;
    }
  }
  return true;
}

void CheckSame(const std::vector<uint64_t>& keys, const OwnershipMap& map,
               uint32_t dim, std::mt19937_64& rng) {
  const std::vector<ShardKeys> expected =
      reference::GroupKeysByShard(keys, map);
  const std::vector<ShardKeys> got = GroupKeysByShard(keys, map);
  REQUIRE(got.size() == expected.size());
  for (size_t s = 0; s < got.size(); ++s) {
    REQUIRE(got[s].keys == expected[s].keys);
    REQUIRE(got[s].positions == expected[s].positions);
  }
  // The two-step grouping a large call builds its shards' parts with.
  const std::vector<std::vector<uint32_t>> positions =
      PositionsByShard(keys, map);
  REQUIRE(positions.size() == expected.size());
  for (size_t s = 0; s < positions.size(); ++s) {
    const ShardKeys apart = GroupShardKeys(keys, positions[s]);
    REQUIRE(apart.keys == expected[s].keys);
    REQUIRE(apart.positions == expected[s].positions);
  }
  // Split by owner in ranges of keys (as on several threads), a shard's
  // ranges joined in order give the same positions.
  for (const size_t ranges : {size_t{2}, size_t{3}, size_t{7}}) {
    std::vector<std::vector<uint32_t>> joined(map.num_shards());
    for (size_t r = 0; r < ranges; ++r) {
      const auto part = PositionsByShard(keys, map, keys.size() * r / ranges,
                                         keys.size() * (r + 1) / ranges);
      REQUIRE(part.size() == joined.size());
      for (size_t s = 0; s < part.size(); ++s) {
        joined[s].insert(joined[s].end(), part[s].begin(), part[s].end());
      }
    }
    REQUIRE(joined == positions);
  }
  std::vector<float> gradients(keys.size() * dim);
  for (float& g : gradients) g = RandomGradient(rng);
  const auto want = reference::MergeSparseGradients(expected, gradients, dim);
  const auto merged = MergeSparseGradients(got, gradients, dim);
  REQUIRE(merged.size() == want.size());
  for (size_t s = 0; s < merged.size(); ++s) {
    REQUIRE(SameBits(merged[s], want[s]));
    // Into a buffer full of garbage: its old contents must not matter.
    std::vector<float> out(got[s].keys.size() * dim,
                           std::numeric_limits<float>::quiet_NaN());
    MergeShardGradients(got[s], gradients, dim, absl::MakeSpan(out));
    REQUIRE(SameBits(out, want[s]));
  }
}

TEST_CASE("grouping and merging equal the hash-map reference on random input") {
  std::mt19937_64 rng(20261201);
  const uint32_t dims[] = {1, 3, 4, 8, 16, 17, 32, 64};
  for (int round = 0; round < 300; ++round) {
    const uint32_t shards = 1 + static_cast<uint32_t>(rng() % 4);
    OwnershipMap map = OwnershipMap::Initial(shards);
    if (shards > 1 && rng() % 2 == 0) {  // a few buckets moved elsewhere
      for (int m = 0; m < 5; ++m) {
        map = map.WithBucketMoved(
            static_cast<uint32_t>(rng() % (shards * OwnershipMap::kBucketsPerShard)),
            static_cast<uint32_t>(rng() % shards));
      }
    }
    const size_t n = rng() % 3 == 0 ? rng() % 20 : rng() % 5000;
    // Small key spaces give many duplicates; strided keys test the hash.
    const uint64_t space = uint64_t{1} << (1 + rng() % 40);
    const uint64_t stride = rng() % 3 == 0 ? uint64_t{1} << (rng() % 32) : 1;
    std::vector<uint64_t> keys(n);
    for (uint64_t& k : keys) k = (rng() % space) * stride;
    CheckSame(keys, map, dims[rng() % std::size(dims)], rng);
  }
}

TEST_CASE("a call larger than the retained table groups the same") {
  // Over 2^20 keys takes the per-call table; with ~2^19 distinct ones.
  std::mt19937_64 rng(7);
  std::vector<uint64_t> keys((size_t{1} << 20) + 3);
  for (uint64_t& k : keys) k = rng() % (uint64_t{1} << 19);
  CheckSame(keys, OwnershipMap::Initial(2), 1, rng);
  // And a smaller call on the same thread afterwards still starts clean.
  keys.resize(1000);
  CheckSame(keys, OwnershipMap::Initial(3), 16, rng);
}

TEST_CASE("shards grouped apart on threads of their own group the same") {
  // Each thread groups with its own retained table; calls of different
  // sizes on the same threads in turn must not see each other's keys.
  std::mt19937_64 rng(29);
  for (int round = 0; round < 20; ++round) {
    const uint32_t shards = 2 + static_cast<uint32_t>(rng() % 6);
    const OwnershipMap map = OwnershipMap::Initial(shards);
    std::vector<uint64_t> keys(1 + rng() % 40000);
    const uint64_t space = 1 + rng() % 50000;
    for (uint64_t& k : keys) k = rng() % space;
    const std::vector<ShardKeys> expected =
        reference::GroupKeysByShard(keys, map);
    const std::vector<std::vector<uint32_t>> positions =
        PositionsByShard(keys, map);
    std::vector<ShardKeys> apart(shards);
    std::vector<std::thread> threads;
    for (uint32_t s = 0; s < shards; ++s) {
      threads.emplace_back(
          [&, s] { apart[s] = GroupShardKeys(keys, positions[s]); });
    }
    for (std::thread& t : threads) t.join();
    for (uint32_t s = 0; s < shards; ++s) {
      REQUIRE(apart[s].keys == expected[s].keys);
      REQUIRE(apart[s].positions == expected[s].positions);
    }
  }
}

// Bytes holding floats, as OneShardGroupMerge leaves a request's rows.
std::vector<float> FloatsOf(const std::string& bytes) {
  std::vector<float> floats(bytes.size() / sizeof(float));
  std::memcpy(floats.data(), bytes.data(), floats.size() * sizeof(float));
  return floats;
}

TEST_CASE("a one-shard call merged while it is grouped equals the reference") {
  // Sizes around the publishing step (2048 positions) and well past it;
  // key spaces from all-duplicates to nearly all distinct; the merge on a
  // second thread started before or after the grouping, or on the same
  // thread after it.
  std::mt19937_64 rng(424242);
  const uint32_t dims[] = {1, 5, 16, 64};
  const OwnershipMap one = OwnershipMap::Initial(1);
  for (int round = 0; round < 60; ++round) {
    const size_t sizes[] = {1, 2047, 2048, 2049, 4096, 9000,
                            1 + rng() % 70000};
    std::vector<uint64_t> keys(sizes[rng() % std::size(sizes)]);
    const uint64_t space = 1 + rng() % (2 * keys.size());
    for (uint64_t& k : keys) k = rng() % space;
    const uint32_t dim = dims[rng() % std::size(dims)];
    std::vector<float> gradients(keys.size() * dim);
    for (float& g : gradients) g = RandomGradient(rng);
    const std::vector<ShardKeys> expected = reference::GroupKeysByShard(keys, one);
    const auto want = reference::MergeSparseGradients(expected, gradients, dim);

    OneShardGroupMerge both(keys, gradients, dim);
    std::string bytes = "left over from an earlier call";
    const int order = round % 3;
    INFO("round " << round << " keys " << keys.size() << " dim " << dim
                  << " order " << order);
    if (order == 2) {
      both.Group();
      both.Merge(&bytes);
    } else {
      std::thread merger;
      if (order == 0) merger = std::thread([&] { both.Merge(&bytes); });
      std::thread grouper([&] { both.Group(); });
      if (order == 1) merger = std::thread([&] { both.Merge(&bytes); });
      grouper.join();
      merger.join();
    }
    REQUIRE(both.group().keys == expected[0].keys);
    REQUIRE(both.group().positions == expected[0].positions);
    REQUIRE(bytes.size() == want[0].size() * sizeof(float));
    REQUIRE(SameBits(FloatsOf(bytes), want[0]));
  }
}

TEST_CASE("many calls in a row reuse the table without leaking keys") {
  std::mt19937_64 rng(11);
  for (int call = 0; call < 2000; ++call) {
    std::vector<uint64_t> keys(1 + rng() % 64);
    for (uint64_t& k : keys) k = rng() % 100;
    CheckSame(keys, OwnershipMap::Initial(1 + call % 3), 2, rng);
  }
}

}  // namespace
}  // namespace taups

#include <catch2/catch.hpp>

#include <map>

#include "common/shard_map.h"
#include "worker/src/shard_router.h"

namespace taups {
namespace {

TEST_CASE("dense ranges tile the table and differ by at most one") {
  for (uint64_t size : {1ull, 2ull, 7ull, 100ull, 101770ull, 1ull << 22}) {
    for (uint32_t shards : {1u, 2u, 3u, 7u}) {
      if (size < shards) continue;
      uint64_t next = 0, smallest = UINT64_MAX, largest = 0;
      for (uint32_t s = 0; s < shards; ++s) {
        const Range r = DenseShardRange(size, shards, s);
        REQUIRE(r.begin == next);
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      REQUIRE(next == size);
      REQUIRE(largest - smallest <= 1);
    }
  }
}

TEST_CASE("dense range of 10 over 3 shards is 4,3,3") {
  REQUIRE(DenseShardRange(10, 3, 0).begin == 0);
  REQUIRE(DenseShardRange(10, 3, 0).end == 4);
  REQUIRE(DenseShardRange(10, 3, 1).begin == 4);
  REQUIRE(DenseShardRange(10, 3, 1).end == 7);
  REQUIRE(DenseShardRange(10, 3, 2).begin == 7);
  REQUIRE(DenseShardRange(10, 3, 2).end == 10);
}

TEST_CASE("Range::Contains rejects overflowing and outside requests") {
  const Range r{100, 200};
  REQUIRE(r.Contains(100, 100));
  REQUIRE(r.Contains(150, 1));
  REQUIRE_FALSE(r.Contains(99, 1));
  REQUIRE_FALSE(r.Contains(150, 51));
  REQUIRE_FALSE(r.Contains(200, 1));
  REQUIRE_FALSE(r.Contains(150, UINT64_MAX));
  REQUIRE_FALSE(r.Contains(UINT64_MAX, 2));
}

TEST_CASE("sparse keys hash stably and spread over shards") {
  // Pinned values: the hash is part of the cluster layout and must never
  // change between releases.
  REQUIRE(MixKey(0) == 0xe220a8397b1dcdafULL);
  REQUIRE(MixKey(1) == 0x910a2dec89025cc1ULL);
  std::map<uint32_t, int> counts;
  for (uint64_t key = 0; key < 40000; ++key) ++counts[SparseShardOf(key, 4)];
  REQUIRE(counts.size() == 4);
  for (const auto& [shard, n] : counts) {
    REQUIRE(n > 9000);
    REQUIRE(n < 11000);
  }
}

TEST_CASE("dense slices cover each shard's range in even pieces") {
  const auto slices = PlanDenseSlices(1000, 2, 300);
  // Shard 0 holds 500 -> 2 slices of 250; shard 1 likewise.
  REQUIRE(slices.size() == 4);
  uint64_t next = 0;
  for (const DenseSlice& s : slices) {
    REQUIRE(s.offset == next);
    REQUIRE(s.count == 250);
    REQUIRE(s.slices_in_shard == 2);
    next += s.count;
  }
  REQUIRE(slices[0].shard == 0);
  REQUIRE(slices[3].shard == 1);
}

TEST_CASE("sparse keys group by shard, duplicates collapse, gradients sum") {
  const std::vector<uint64_t> keys = {5, 9, 5, 12, 9, 5};
  const auto groups = GroupKeysByShard(keys, 2);
  size_t unique = 0, positions = 0;
  for (uint32_t s = 0; s < 2; ++s) {
    unique += groups[s].keys.size();
    positions += groups[s].positions.size();
    for (uint64_t k : groups[s].keys) REQUIRE(SparseShardOf(k, 2) == s);
  }
  REQUIRE(unique == 3);
  REQUIRE(positions == keys.size());

  // dim 2: key i's gradient is {i, 10 * i}
  std::vector<float> grads;
  for (size_t i = 0; i < keys.size(); ++i) {
    grads.push_back(static_cast<float>(i));
    grads.push_back(10.0f * i);
  }
  const auto merged = MergeSparseGradients(groups, grads, 2);
  std::map<uint64_t, std::pair<float, float>> by_key;
  for (uint32_t s = 0; s < 2; ++s) {
    for (size_t k = 0; k < groups[s].keys.size(); ++k) {
      by_key[groups[s].keys[k]] = {merged[s][2 * k], merged[s][2 * k + 1]};
    }
  }
  REQUIRE(by_key[5].first == 0 + 2 + 5);
  REQUIRE(by_key[5].second == 10.0f * (0 + 2 + 5));
  REQUIRE(by_key[9].first == 1 + 4);
  REQUIRE(by_key[12].first == 3);
}

}  // namespace
}  // namespace taups

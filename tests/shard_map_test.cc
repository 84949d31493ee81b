#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "common/ownership_map.h"
#include "common/shard_map.h"
#include "worker/src/shard_router.h"

namespace taups {
namespace {

// The layout before ownership maps, written out again here (not by calling
// DenseShardRange / SparseShardOf) so the test does not check a function
// against itself.
Range OldDenseRange(uint64_t size, uint32_t shards, uint32_t shard) {
  const uint64_t base = size / shards, extra = size % shards;
  const uint64_t begin = shard * base + std::min<uint64_t>(shard, extra);
  return Range{begin, begin + base + (shard < extra ? 1 : 0)};
}
uint64_t OldMix(uint64_t key) {
  uint64_t z = key + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint32_t OldSparseShard(uint64_t key, uint32_t shards) {
  return static_cast<uint32_t>(OldMix(key) % shards);
}

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
  const auto groups = GroupKeysByShard(keys, OwnershipMap::Initial(2));
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

TEST_CASE("the epoch-1 ownership map is the old layout exactly") {
  std::mt19937_64 rng(7);
  const std::vector<uint32_t> shard_counts = {1, 2, 3, 4, 5, 7, 8, 13, 64, 255};
  for (uint32_t shards : shard_counts) {
    const OwnershipMap map = OwnershipMap::Initial(shards);
    REQUIRE(map.epoch() == 1);
    REQUIRE(map.num_shards() == shards);
    REQUIRE(map.num_buckets() == shards * OwnershipMap::kBucketsPerShard);
    std::vector<uint64_t> sizes = {0, 1, 2, shards - 1ull, shards + 0ull,
                                   shards + 1ull, 1000, 101770, 1ull << 22,
                                   (1ull << 40) + 3};
    for (int i = 0; i < 20; ++i) sizes.push_back(rng() % 5000000);
    for (uint64_t size : sizes) {
      for (uint32_t s = 0; s < shards; ++s) {
        const Range want = OldDenseRange(size, shards, s);
        const Range got = map.DenseRangeOf(size, s);
        REQUIRE(got.begin == want.begin);
        REQUIRE(got.end == want.end);
        REQUIRE(map.OwnsDense(s, size, want.begin, want.size()));
        if (want.size() > 0) {
          REQUIRE_FALSE(map.OwnsDense(s, size, want.begin, want.size() + 1));
          // Any element's owner is the shard whose old range holds it.
          const uint64_t offset = want.begin + rng() % want.size();
          const auto owners = map.DenseOwnersOf(size, offset, 1);
          REQUIRE(owners.size() == 1);
          REQUIRE(owners[0].shard == s);
        }
      }
    }
    for (int i = 0; i < 20000; ++i) {
      const uint64_t key = i < 1000 ? static_cast<uint64_t>(i) : rng();
      REQUIRE(map.SparseOwnerOf(key) == OldSparseShard(key, shards));
      REQUIRE(map.SparseOwnerOf(key) == SparseShardOf(key, shards));
      REQUIRE(map.BucketOf(key) % shards == OldSparseShard(key, shards));
      REQUIRE(map.BucketOf(key) == OldMix(key) % map.num_buckets());
      REQUIRE(map.OwnsKey(OldSparseShard(key, shards), key));
    }
  }
}

TEST_CASE("a key's bucket is its hash modulo the bucket count, any count") {
  // Power-of-two counts take a mask, the others a division: both must be
  // the remainder, for maps built from values as well as initial ones.
  std::mt19937_64 rng(11);
  for (uint32_t buckets : {2u, 6u, 64u, 96u, 128u, 192u, 256u, 1000u, 4096u}) {
    OwnershipMapValue value;
    value.epoch = 3;
    value.num_shards = 2;
    value.num_buckets = buckets;
    auto map = OwnershipMap::FromValue(value);
    REQUIRE(map.ok());
    REQUIRE(map->num_buckets() == buckets);
    for (int i = 0; i < 5000; ++i) {
      const uint64_t key = i < 100 ? static_cast<uint64_t>(i) : rng();
      REQUIRE(map->BucketOf(key) == OldMix(key) % buckets);
      REQUIRE(map->SparseOwnerOf(key) == (OldMix(key) % buckets) % 2);
    }
  }
}

TEST_CASE("DenseOwnersOf cuts a range at the shard boundaries") {
  const OwnershipMap map = OwnershipMap::Initial(3);  // 10 -> 4,3,3
  const auto owners = map.DenseOwnersOf(10, 2, 7);
  REQUIRE(owners == std::vector<DenseOwner>{{0, {2, 4}}, {1, {4, 7}}, {2, {7, 9}}});
  REQUIRE(map.DenseOwnersOf(10, 0, 0).empty());
  REQUIRE(map.DenseOwnersOf(10, 10, 1).empty());
  // More shards than elements: the empty ranges own nothing.
  const auto tiny = OwnershipMap::Initial(5).DenseOwnersOf(3, 0, 3);
  REQUIRE(tiny == std::vector<DenseOwner>{{0, {0, 1}}, {1, {1, 2}}, {2, {2, 3}}});
  std::mt19937_64 rng(11);
  for (uint32_t shards : {1u, 2u, 3u, 7u, 16u}) {
    const OwnershipMap m = OwnershipMap::Initial(shards);
    for (int i = 0; i < 500; ++i) {
      const uint64_t size = 1 + rng() % 100000;
      const uint64_t offset = rng() % size;
      const uint64_t count = 1 + rng() % (size - offset);
      uint64_t next = offset;
      for (const DenseOwner& o : m.DenseOwnersOf(size, offset, count)) {
        REQUIRE(o.range.begin == next);
        REQUIRE(o.range.size() > 0);
        REQUIRE(m.OwnsDense(o.shard, size, o.range.begin, o.range.size()));
        next = o.range.end;
      }
      REQUIRE(next == offset + count);
    }
  }
}

TEST_CASE("client routing and server checks read the same map, at every epoch") {
  // The client plans with its copy, the server checks with one rebuilt from
  // the compact value form (as if it had come over the wire).
  OwnershipMap client = OwnershipMap::Initial(4);
  std::mt19937_64 rng(3);
  std::vector<uint64_t> keys(5000);
  for (uint64_t& k : keys) k = rng();
  for (int epoch = 1; epoch <= 4; ++epoch) {
    auto server = OwnershipMap::FromValue(client.Value());
    REQUIRE(server.ok());
    REQUIRE(*server == client);
    REQUIRE(server->epoch() == static_cast<uint64_t>(epoch));
    for (uint64_t size : {5ull, 1000ull, 123457ull}) {
      uint64_t covered = 0;
      for (const DenseSlice& s : PlanDenseSlices(client, size, 97)) {
        REQUIRE(server->OwnsDense(s.shard, size, s.offset, s.count));
        covered += s.count;
      }
      REQUIRE(covered == size);
    }
    const auto groups = GroupKeysByShard(keys, client);
    for (uint32_t s = 0; s < groups.size(); ++s) {
      for (uint64_t k : groups[s].keys) REQUIRE(server->OwnsKey(s, k));
    }
    // Next epoch: one more bucket moves to another shard.
    const uint32_t bucket = static_cast<uint32_t>(rng() % client.num_buckets());
    const uint32_t to = (client.BucketOwner(bucket) + 1) % client.num_shards();
    client = client.WithBucketMoved(bucket, to);
  }
}

TEST_CASE("an epoch change is visible: moved keys, a new value, old views differ") {
  const OwnershipMap one = OwnershipMap::Initial(2);
  uint64_t key = 0;
  while (one.SparseOwnerOf(key) != 0) ++key;
  const uint32_t bucket = one.BucketOf(key);
  const OwnershipMap two = one.WithBucketMoved(bucket, 1);
  REQUIRE(two.epoch() == 2);
  REQUIRE(two.SparseOwnerOf(key) == 1);
  REQUIRE_FALSE(two.OwnsKey(0, key));
  REQUIRE(one.SparseOwnerOf(key) == 0);  // the old map is unchanged
  REQUIRE_FALSE(one == two);
  REQUIRE(one.Value().moved_buckets.empty());
  REQUIRE(two.Value().moved_buckets ==
          std::vector<std::pair<uint32_t, uint32_t>>{{bucket, 1}});
  // Only that bucket's keys moved.
  for (uint64_t k = 0; k < 20000; ++k) {
    if (one.BucketOf(k) != bucket) REQUIRE(two.SparseOwnerOf(k) == one.SparseOwnerOf(k));
  }
  // Moving it back is a new epoch equal in layout to epoch 1, not epoch 1.
  const OwnershipMap three = two.WithBucketMoved(bucket, 0);
  REQUIRE(three.epoch() == 3);
  REQUIRE(three.Value().moved_buckets.empty());
  REQUIRE_FALSE(three == one);
}

TEST_CASE("ownership map values that are not maps are refused") {
  OwnershipMapValue v = OwnershipMap::Initial(3).Value();
  REQUIRE(OwnershipMap::FromValue(v).ok());
  auto refused = [](OwnershipMapValue bad) {
    auto map = OwnershipMap::FromValue(bad);
    return !map.ok() && map.status().code() == absl::StatusCode::kInvalidArgument;
  };
  OwnershipMapValue bad = v;
  bad.num_shards = 0;
  REQUIRE(refused(bad));
  bad = v;
  bad.epoch = 0;
  REQUIRE(refused(bad));
  bad = v;
  bad.num_buckets = 100;  // not a multiple of 3
  REQUIRE(refused(bad));
  bad = v;
  bad.moved_buckets = {{5, 3}};  // no shard 3
  REQUIRE(refused(bad));
  bad = v;
  bad.moved_buckets = {{7, 0}, {5, 0}};  // unsorted
  REQUIRE(refused(bad));
  bad = v;
  bad.moved_buckets = {{4, 1}};  // 4 % 3 == 1 already: not canonical
  REQUIRE(refused(bad));
  bad = v;
  bad.moved_buckets = {{999, 0}};  // no such bucket
  REQUIRE(refused(bad));
  bad = v;
  bad.moved_pieces = {{0, 1}};  // shard 1 would hold two pieces
  REQUIRE(refused(bad));
  OwnershipMapValue swapped = v;
  swapped.epoch = 2;
  swapped.moved_pieces = {{0, 1}, {1, 0}};
  auto map = OwnershipMap::FromValue(swapped);
  REQUIRE(map.ok());
  REQUIRE(map->DenseRangeOf(10, 1).begin == 0);  // piece 0 is on shard 1
  REQUIRE(map->DenseRangeOf(10, 1).end == 4);
  REQUIRE(map->DenseRangeOf(10, 0).begin == 4);
  REQUIRE(map->Value() == swapped);
}

}  // namespace
}  // namespace taups

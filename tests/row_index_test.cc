// RowIndex against std::unordered_map under random inserts, erases and
// lookups, including keys crowded into one home (long probes that wrap
// around the array), and its memory per key against what
// SparseTable::RowFootprintBytes counts for it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "server/row_index.h"

namespace taups {
namespace {

// Every key of `expected` is found with its slot, ForEach visits exactly
// them, and keys never inserted are absent.
void RequireSame(const RowIndex& index,
                 const std::unordered_map<uint64_t, uint32_t>& expected,
                 std::mt19937_64& random) {
  REQUIRE(index.size() == expected.size());
  for (const auto& [key, slot] : expected) REQUIRE(index.Find(key) == slot);
  std::unordered_map<uint64_t, uint32_t> visited;
  index.ForEach([&](uint64_t key, uint32_t slot) {
    REQUIRE(visited.emplace(key, slot).second);
  });
  REQUIRE(visited == expected);
  for (int i = 0; i < 100; ++i) {
    const uint64_t key = random();
    if (expected.count(key) == 0) REQUIRE(index.Find(key) == RowIndex::kEmpty);
  }
}

TEST_CASE("a row index agrees with a map under random inserts and erases") {
  // Small key ranges make erases hit often and keep the array small, so
  // probes wrap around its end; the large one grows it many times.
  const uint64_t key_ranges[] = {8, 40, 1000, uint64_t{1} << 40};
  for (const uint64_t range : key_ranges) {
    DYNAMIC_SECTION("keys below " << range) {
      std::mt19937_64 random(range);
      RowIndex index;
      std::unordered_map<uint64_t, uint32_t> expected;
      REQUIRE(index.Find(5) == RowIndex::kEmpty);
      REQUIRE_FALSE(index.Erase(5));
      for (int step = 0; step < 20000; ++step) {
        const uint64_t key = random() % range;
        const bool present = expected.count(key) > 0;
        if (random() % 3 == 0) {
          REQUIRE(index.Erase(key) == present);
          expected.erase(key);
        } else if (!present) {
          const uint32_t slot = static_cast<uint32_t>(random() % 1000000);
          index.Insert(key, slot);
          expected[key] = slot;
        }
        REQUIRE(index.Find(key) ==
                (expected.count(key) ? expected[key] : RowIndex::kEmpty));
        if (step % 997 == 0) RequireSame(index, expected, random);
      }
      RequireSame(index, expected, random);
      for (auto it = expected.begin(); it != expected.end();) {
        REQUIRE(index.Erase(it->first));
        it = expected.erase(it);
      }
      RequireSame(index, expected, random);
    }
  }
}

TEST_CASE("erasing from a long probe keeps every later key reachable") {
  // Many keys in a small array: runs of occupied entries long enough that
  // erasing one in the middle must move the ones after it back.
  std::mt19937_64 random(3);
  RowIndex index;
  std::unordered_map<uint64_t, uint32_t> expected;
  for (uint32_t i = 0; i < 12; ++i) {  // 12 of 16 entries: the fullest allowed
    const uint64_t key = random();
    index.Insert(key, i);
    expected[key] = i;
  }
  REQUIRE(index.capacity() == 16);
  std::vector<uint64_t> keys;
  for (const auto& entry : expected) keys.push_back(entry.first);
  for (const uint64_t key : keys) {
    REQUIRE(index.Erase(key));
    expected.erase(key);
    RequireSame(index, expected, random);
    const uint32_t slot = static_cast<uint32_t>(100 + expected.size());
    const uint64_t fresh = random();
    index.Insert(fresh, slot);
    expected[fresh] = slot;
    RequireSame(index, expected, random);
    REQUIRE(index.Erase(fresh));
    expected.erase(fresh);
  }
  REQUIRE(index.size() == 0);
}

TEST_CASE("a row index holds under 43 bytes a key at any size") {
  // RowFootprintBytes counts 44 bytes a row for the index.
  RowIndex index;
  for (uint32_t n = 1; n <= 200000; ++n) {
    index.Insert(uint64_t{n} * 0x9e3779b97f4a7c15ULL, n);
    if (n >= 16) {
      INFO("keys " << n << ", bytes " << index.memory_bytes());
      REQUIRE(index.memory_bytes() <= 43 * size_t{n});
    }
    REQUIRE(4 * index.size() <= 3 * index.capacity());
  }
}

}  // namespace
}  // namespace taups

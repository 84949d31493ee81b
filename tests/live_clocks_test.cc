// LiveClocks keeps the smallest live worker clock incrementally (SSP reads it
// on every pull). Random sequences of what happens to a table part's workers
// — registrations, leaves and evictions (the live set published again),
// workers awaited after a restore (known to the clocks, not live), clock
// advances by pushes and joins, and restores that replace the clocks — are
// checked step by step against a walk over plain containers kept here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "server/live_clocks.h"

namespace taups {
namespace {

constexpr uint32_t kIds = 24;  // worker ids 0..kIds-1
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

// The brute-force reference: what MinLive must equal.
struct Reference {
  std::set<uint32_t> live;
  std::map<uint32_t, uint64_t> clocks;

  uint64_t ClockOf(uint32_t w) const {
    auto it = clocks.find(w);
    return it == clocks.end() ? 0 : it->second;
  }
  uint64_t MinLive(int64_t excluding) const {
    uint64_t min = kNone;
    for (uint32_t w : live) {
      if (static_cast<int64_t>(w) != excluding) min = std::min(min, ClockOf(w));
    }
    return min;
  }
};

std::vector<uint32_t> Sorted(const std::set<uint32_t>& s) {
  return std::vector<uint32_t>(s.begin(), s.end());
}

void CheckSame(const LiveClocks& got, const Reference& want) {
  REQUIRE(got.live().size() == want.live.size());
  for (uint32_t w : want.live) REQUIRE(got.live().contains(w));
  REQUIRE(got.clocks().size() == want.clocks.size());
  for (const auto& [w, c] : want.clocks) {
    auto it = got.clocks().find(w);
    REQUIRE(it != got.clocks().end());
    REQUIRE(it->second == c);
  }
  REQUIRE(got.MinLive(-1) == want.MinLive(-1));
  for (int64_t w = 0; w <= kIds; ++w) {  // kIds: never a worker
    REQUIRE(got.MinLive(w) == want.MinLive(w));
  }
  const uint64_t min = want.MinLive(-1);
  if (min != kNone) {
    std::vector<uint32_t> at;
    for (uint32_t w : want.live) {
      if (want.ClockOf(w) == min) at.push_back(w);
    }
    REQUIRE(got.LiveAt(min) == at);
  }
}

void RunSeed(uint64_t seed, int steps) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) {
    return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
  };
  LiveClocks got;
  Reference want;
  CheckSame(got, want);
  for (int step = 0; step < steps; ++step) {
    const uint32_t w = static_cast<uint32_t>(pick(kIds));
    const uint64_t op = pick(100);
    if (op < 45) {
      // A push or a join moves a clock: usually the slowest live worker's
      // (that is what changes the minimum), near its clock, sometimes back.
      uint32_t who = w;
      if (op < 20 && !want.live.empty()) {
        const uint64_t min = want.MinLive(-1);
        for (uint32_t l : want.live) {
          if (want.ClockOf(l) == min) who = l;
        }
      }
      const uint64_t before = want.ClockOf(who);
      const uint64_t to = before + pick(4) - std::min<uint64_t>(before, 1);
      const uint64_t now = got.Raise(who, to);
      uint64_t& ref = want.clocks[who];
      ref = std::max(ref, to);
      REQUIRE(now == ref);
    } else if (op < 85) {
      // Membership published again: a registration (or a rejoin), a leave,
      // an eviction or an expiry, or a worker that was awaited coming back.
      std::set<uint32_t> live = want.live;
      if (op < 65) {
        live.insert(w);
      } else {
        live.erase(w);
      }
      if (op % 7 == 0) live.insert(static_cast<uint32_t>(pick(kIds)));
      want.live = live;
      std::vector<uint32_t> published = Sorted(live);
      if (!published.empty() && op % 3 == 0) {
        published.push_back(published.front());  // a duplicate is harmless
      }
      got.SetLive(published);
    } else if (op < 92) {
      // A restore: the checkpoint's clocks, for workers that may be live,
      // awaited (in the clocks, not live) or unknown here.
      std::map<uint32_t, uint64_t> restored;
      const uint64_t n = pick(kIds);
      for (uint64_t i = 0; i < n; ++i) {
        restored[static_cast<uint32_t>(pick(kIds))] = pick(50);
      }
      got.ReplaceClocks(restored);
      want.clocks = restored;
    } else {
      // Everyone leaves, or everyone the clocks know comes back at once.
      std::set<uint32_t> live;
      if (op % 2 == 0) {
        for (const auto& [id, c] : want.clocks) live.insert(id);
      }
      want.live = live;
      got.SetLive(Sorted(live));
    }
    CheckSame(got, want);
  }
}

TEST_CASE("LiveClocks::MinLive matches a walk over the live workers") {
  for (uint64_t seed : {1, 2, 3, 17, 1234, 987654321}) {
    INFO("seed " << seed);
    RunSeed(seed, 5000);
  }
}

TEST_CASE("LiveClocks: excluding the only slowest worker moves to the next") {
  LiveClocks clocks;
  clocks.SetLive({1, 2, 3});
  clocks.Raise(1, 5);
  clocks.Raise(2, 3);
  clocks.Raise(3, 3);
  CHECK(clocks.MinLive(-1) == 3);
  CHECK(clocks.MinLive(2) == 3);  // 3 is also at 3
  clocks.Raise(3, 4);
  CHECK(clocks.MinLive(2) == 4);
  CHECK(clocks.MinLive(1) == 3);
  CHECK(clocks.LiveAt(3) == std::vector<uint32_t>{2});
  clocks.SetLive({2});
  CHECK(clocks.MinLive(2) == kNone);
  CHECK(clocks.MinLive(-1) == 3);
  clocks.SetLive({});
  CHECK(clocks.MinLive(-1) == kNone);
  clocks.SetLive({9});  // live, never pushed: clock 0, not in clocks()
  CHECK(clocks.MinLive(-1) == 0);
  CHECK_FALSE(clocks.clocks().contains(9));
}

}  // namespace
}  // namespace taups

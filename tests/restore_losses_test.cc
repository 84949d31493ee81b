// RestoreLosses: what workers report after a restart becomes each restored
// table's loss, as the largest version reported less the restored one; only
// workers the checkpoint knew are heard, each once per table.
#include "server/restore_losses.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace taups {
namespace {

using Losses = std::vector<std::pair<std::string, uint64_t>>;

TEST_CASE("a restored table's loss is the newest version a worker saw, less the restored one") {
  RestoreLosses losses(1);
  REQUIRE(losses.Snapshot().empty());
  losses.Restored("w", 1200, 300);
  losses.Restored("e", 50, 0);
  losses.ExpectWorkers({0, 1, 2, 3, 4});
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 0}});
  CHECK(losses.Report(0, "w", 1100));  // at or below the checkpoint: nothing lost
  CHECK(losses.Report(1, "w", 1200));
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 0}});
  CHECK(losses.Report(2, "w", 1528));
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 328}});
  CHECK(losses.Report(3, "w", 1400));  // another worker saw less: the most stays
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 328}});
  CHECK(losses.Report(0, "e", 51));
  CHECK_FALSE(losses.Report(4, "not restored", 9999));  // ignored
  CHECK(losses.Snapshot() == Losses{{"e", 1}, {"w", 328}});
}

TEST_CASE("a worker the checkpoint did not know is not heard") {
  RestoreLosses losses(0);
  losses.Restored("w", 10, 0);
  CHECK_FALSE(losses.Report(0, "w", 500));  // no worker expected yet
  losses.ExpectWorkers({3, 7});
  CHECK_FALSE(losses.Report(5, "w", 1u << 30));
  CHECK_FALSE(losses.Report(0, "w", 500));
  CHECK(losses.Snapshot() == Losses{{"w", 0}});
  // The unknown workers' reports did not use up anything: 7 is still heard.
  CHECK(losses.Report(7, "w", 14));
  CHECK(losses.Snapshot() == Losses{{"w", 4}});
  losses.ExpectWorkers({5});  // adds to the expected ones
  CHECK(losses.Report(5, "w", 12));
  CHECK(losses.Report(3, "w", 11));
  CHECK(losses.Snapshot() == Losses{{"w", 4}});
}

TEST_CASE("each worker is heard once per restored table") {
  RestoreLosses losses(2);
  losses.Restored("w", 100, 0);
  losses.Restored("e", 7, 2);
  losses.ExpectWorkers({1, 2});
  CHECK(losses.Report(1, "w", 130));
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 30}});
  // A growing second report (another registration, or the table listed
  // twice) changes nothing, however large.
  CHECK_FALSE(losses.Report(1, "w", 131));
  CHECK_FALSE(losses.Report(1, "w", UINT64_MAX));
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 30}});
  // A first report at or below the restored version still uses the turn.
  CHECK(losses.Report(2, "w", 90));
  CHECK_FALSE(losses.Report(2, "w", 5000));
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 30}});
  // Being heard on one table does not use up another.
  CHECK(losses.Report(1, "e", 9));
  CHECK(losses.Report(2, "e", 8));
  CHECK_FALSE(losses.Report(2, "e", 90));
  CHECK(losses.Snapshot() == Losses{{"e", 2}, {"w", 30}});
}

TEST_CASE("reports from many threads: one turn per worker and table") {
  RestoreLosses losses(0);
  losses.Restored("w", 0, 0);
  std::vector<uint32_t> workers;
  for (uint32_t w = 0; w < 8; ++w) workers.push_back(w);
  losses.ExpectWorkers(workers);
  std::vector<std::thread> threads;
  std::atomic<int> heard{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&losses, &heard, t] {
      // Every thread reports for every worker; worker w's reports are all
      // w + 1 + (thread index) * 100, so whichever thread wins the turn, the
      // largest heard is at most 8 + 300.
      for (uint32_t w = 0; w < 8; ++w) {
        if (losses.Report(w, "w", w + 1 + uint64_t(t) * 100)) ++heard;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(heard.load() == 8);
  const Losses snapshot = losses.Snapshot();
  REQUIRE(snapshot.size() == 1);
  CHECK(snapshot[0].second >= 8);
  CHECK(snapshot[0].second <= 308);
}

}  // namespace
}  // namespace taups

// RestoreLosses: what workers report after a restart becomes each restored
// table's loss, as the largest version reported less the restored one.
#include "server/restore_losses.h"

#include <catch2/catch.hpp>

#include <string>
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
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 0}});
  losses.Report("w", 1100);  // at or below the checkpoint: nothing lost
  losses.Report("w", 1200);
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 0}});
  losses.Report("w", 1528);
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 328}});
  losses.Report("w", 1400);  // another worker saw less: the most stays
  CHECK(losses.Snapshot() == Losses{{"e", 0}, {"w", 328}});
  losses.Report("e", 51);
  losses.Report("not restored", 9999);  // ignored
  CHECK(losses.Snapshot() == Losses{{"e", 1}, {"w", 328}});
}

}  // namespace
}  // namespace taups

// StagedPushes::WouldComplete, which lets the partition skip copying the
// slice that completes its push: it says kComplete exactly when Add would.
#include <catch2/catch.hpp>

#include <vector>

#include "server/staged_pushes.h"

namespace taups {
namespace {

TEST_CASE("WouldComplete agrees with what Add then answers") {
  StagedPushes staged(1 << 20);
  const PushOrigin origin{3, 1, 7};
  PushHeader header;
  header.slices = 3;
  const std::vector<float> values(4, 1.0f);
  GradientPart part;
  part.values = values;
  const absl::Time now = absl::UnixEpoch();

  // Nothing staged: no slice of a 3-slice push completes it.
  REQUIRE(!staged.WouldComplete(origin, 0, header));
  REQUIRE(*staged.Add(origin, 0, header, part, now) == StagedPushes::Added::kStaged);
  REQUIRE(!staged.WouldComplete(origin, 2, header));
  REQUIRE(!staged.WouldComplete(origin, 0, header));  // a repeat
  REQUIRE(*staged.Add(origin, 2, header, part, now) == StagedPushes::Added::kStaged);
  // Slices 0 and 2 staged: slice 1 completes it; a repeat or another
  // push's slice does not; nor a slice whose header disagrees.
  REQUIRE(staged.WouldComplete(origin, 1, header));
  REQUIRE(!staged.WouldComplete(origin, 2, header));
  REQUIRE(!staged.WouldComplete(PushOrigin{3, 1, 8}, 1, header));
  PushHeader other = header;
  other.clock = 5;
  REQUIRE(!staged.WouldComplete(origin, 1, other));
  REQUIRE(staged.bytes() == 2 * values.size() * sizeof(float));
  REQUIRE(*staged.Add(origin, 1, header, part, now) == StagedPushes::Added::kComplete);
  REQUIRE(staged.Take(origin).size() == 2);

  // A push of one slice is always complete.
  PushHeader one;
  REQUIRE(staged.WouldComplete(origin, 0, one));
}

}  // namespace
}  // namespace taups

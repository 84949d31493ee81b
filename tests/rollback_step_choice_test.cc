// Which step ps_admin rollback picks (CommonStep) from the shards' status:
// the newest step every shard holds a cut of, but none after the step a
// shard resumed alone at (its later cuts mix its checkpoint with the other
// shards' later steps, a model that never existed).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "worker/tools/admin_commands.h"

namespace taups {
namespace {

absl::StatusOr<v1::ShardStatusResponse> Shard(const std::vector<uint64_t>& steps,
                                              std::optional<uint64_t> resumed = {}) {
  v1::ShardStatusResponse status;
  v1::CheckpointStatus* c = status.mutable_checkpoint();
  c->set_enabled(true);
  for (uint64_t s : steps) c->add_sync_steps(s);
  if (resumed) {
    c->set_resumed_alone(true);
    c->set_resumed_step(*resumed);
  }
  return status;
}

TEST_CASE("rollback picks the newest step every shard holds") {
  auto step = CommonStep({Shard({2, 4, 6}), Shard({4, 6, 8})}, std::nullopt);
  REQUIRE(step.ok());
  CHECK(*step == 6);
}

TEST_CASE("a shard that resumed alone caps the step at the one it resumed at") {
  // Shard 1 came back at step 4 while shard 0 went on; both then wrote cuts
  // of steps 6 and 8, shard 1's holding its step-4 values plus later steps.
  const std::vector<absl::StatusOr<v1::ShardStatusResponse>> shards = {
      Shard({2, 4, 6, 8}), Shard({2, 4, 6, 8}, 4)};
  auto step = CommonStep(shards, std::nullopt);
  REQUIRE(step.ok());
  CHECK(*step == 4);

  auto asked_after = CommonStep(shards, 6);
  REQUIRE_FALSE(asked_after.ok());
  CHECK(asked_after.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(asked_after.status().message(), "shard 1 at step 4"));

  auto asked_before = CommonStep(shards, 2);
  REQUIRE(asked_before.ok());
  CHECK(*asked_before == 2);
}

TEST_CASE("with no common step at or before the cap nothing is picked") {
  auto step = CommonStep({Shard({6, 8}), Shard({2, 6, 8}, 3)}, std::nullopt);
  REQUIRE_FALSE(step.ok());
  CHECK(absl::StrContains(step.status().message(), "resumed alone"));
}

}  // namespace
}  // namespace taups

// A sync table restored from a checkpoint that is steps behind the workers
// (the steps after it were lost with the shard) is caught up by the first
// push from the workers' step, as after a switch to sync, and only until a
// step closes normally; until then a pull whose worker's previous push was
// lost with the shard reads at once. Found by the fault harness: before,
// every such push was refused and the run never recovered; then, with every
// worker waiting in its pull, each restore cost one pull deadline.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "common/clock.h"
#include "server/parameter_store.h"
#include "server/partition.h"

namespace taups {
namespace {

TableConfig SyncTable() {
  TableConfig config = TableConfig::Dense("w", 4);
  config.optimizer.learning_rate = 1.0f;
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = 2;
  return config;
}

struct SyncShard {
  SyncShard() {
    bool created = false;
    REQUIRE(store.CreateTable(SyncTable(), true, &created).ok());
    store.Register(0, 10, absl::ZeroDuration());
    store.Register(1, 11, absl::ZeroDuration());
  }
  absl::StatusOr<PushOutcome> Push(uint32_t worker, uint64_t step) {
    PushMeta meta;
    meta.origin = PushOrigin{worker, 10 + worker, ++seq};
    meta.clock = step;
    meta.base_version = store.GetTable("w")->version;
    return store.PushDense("w", 0, std::vector<float>(4, 1.0f), meta);
  }
  bool PullReady(uint32_t worker, uint64_t clock) {
    PullContext ctx;
    ctx.worker = worker;
    ctx.clock = clock;
    absl::StatusOr<bool> ready = store.PullReady("w", ctx);
    REQUIRE(ready.ok());
    return *ready;
  }
  std::vector<float> Pull() {
    std::vector<float> out(4);
    PullContext ctx;
    ctx.deadline = absl::InfinitePast();
    REQUIRE(store.PullDense("w", 0, absl::MakeSpan(out), ctx).ok());
    return out;
  }
  ManualClock clock{absl::FromUnixSeconds(1000)};
  ParameterStore store{0, 1, &clock, absl::Seconds(5)};
  uint64_t seq = 0;
};

TEST_CASE("a restored sync shard behind the workers catches up, then refuses skips") {
  SyncShard old_shard;
  REQUIRE(old_shard.Push(0, 0).ok());
  REQUIRE(old_shard.Push(1, 0).ok());  // step 0 closes: -1 everywhere
  const PartitionSnapshot checkpoint = (*old_shard.store.PartitionOf("w"))->Snapshot();
  for (uint64_t step = 1; step <= 3; ++step) {  // lost with the shard
    REQUIRE(old_shard.Push(0, step).ok());
    REQUIRE(old_shard.Push(1, step).ok());
  }
  REQUIRE(old_shard.store.GetTable("w")->open_step == 4);

  SyncShard restored;
  restored.seq = 100;  // new pushes, not repeats the restored window knows
  REQUIRE((*restored.store.PartitionOf("w"))->Restore(checkpoint).ok());
  REQUIRE(restored.store.GetTable("w")->open_step == 1);
  REQUIRE(restored.Pull() == std::vector<float>(4, -1.0f));
  // The workers went on to step 4 (on the other shards): their pushes for
  // it move this shard up instead of being refused.
  absl::StatusOr<PushOutcome> ahead = restored.Push(0, 4);
  INFO(ahead.status().ToString());
  REQUIRE(ahead.ok());
  REQUIRE(ahead->accepted);
  REQUIRE_FALSE(ahead->duplicate);
  REQUIRE(restored.store.GetTable("w")->open_step == 4);
  REQUIRE(restored.Push(1, 4).ok());
  REQUIRE(restored.store.GetTable("w")->open_step == 5);
  REQUIRE(restored.Pull() == std::vector<float>(4, -2.0f));  // step 4's mean, 1
  // A step closed normally: skipping ahead is refused again.
  REQUIRE(restored.Push(0, 7).status().code() == absl::StatusCode::kFailedPrecondition);
}

// The checkpoint of a shard whose step 0 closed and whose step 1 has
// worker 0's push, and a shard restored from it.
struct RestoredMidStep {
  RestoredMidStep() {
    SyncShard old_shard;
    REQUIRE(old_shard.Push(0, 0).ok());
    REQUIRE(old_shard.Push(1, 0).ok());
    REQUIRE(old_shard.Push(0, 1).ok());
    const PartitionSnapshot checkpoint = (*old_shard.store.PartitionOf("w"))->Snapshot();
    restored.seq = 100;
    REQUIRE((*restored.store.PartitionOf("w"))->Restore(checkpoint).ok());
    REQUIRE(restored.store.GetTable("w")->open_step == 1);
  }
  SyncShard restored;
};

TEST_CASE("a restored sync shard lets pulls read whose worker's push it lost") {
  SECTION("more than one step behind the puller: every pull reads") {
    // Both workers pushed for steps 1 and 2 before the crash and pull for 3.
    RestoredMidStep shard;
    REQUIRE(shard.restored.PullReady(0, 3));
    REQUIRE(shard.restored.PullReady(1, 3));
    REQUIRE(shard.restored.Pull() == std::vector<float>(4, -1.0f));
  }
  SECTION("one step behind: the worker whose push it lost reads, the other waits") {
    // Worker 1's push for step 1 was acknowledged and lost: it pulls for 2.
    RestoredMidStep shard;
    REQUIRE(shard.restored.PullReady(1, 2));
    REQUIRE_FALSE(shard.restored.PullReady(0, 2));  // its push is here: wait for 1's
    // Worker 1's push for step 2 closes step 1 with what it gathered
    // (worker 0's) and is gathered into step 2; worker 0 reads then.
    REQUIRE(shard.restored.Push(1, 2).ok());
    REQUIRE(shard.restored.store.GetTable("w")->open_step == 2);
    REQUIRE(shard.restored.PullReady(0, 2));
    REQUIRE(shard.restored.Pull() == std::vector<float>(4, -2.0f));
    REQUIRE(shard.restored.Push(0, 2).ok());  // step 2 closes normally
    REQUIRE(shard.restored.store.GetTable("w")->open_step == 3);
    // Steady again: a pull ahead of the open step waits.
    REQUIRE_FALSE(shard.restored.PullReady(0, 5));
    REQUIRE_FALSE(shard.restored.PullReady(1, 5));
  }
  SECTION("a shard that was never restored: a pull ahead waits") {
    SyncShard shard;
    REQUIRE(shard.Push(0, 0).ok());
    REQUIRE_FALSE(shard.PullReady(1, 1));
    REQUIRE_FALSE(shard.PullReady(1, 3));
  }
}

}  // namespace
}  // namespace taups

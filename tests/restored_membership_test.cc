// After a restore a shard's tables know the workers of the checkpoint but no
// worker has registered yet. A sync step must then wait for all of them, as
// before the restart, until each registers again or one lease and one
// heartbeat pass: not close with the first worker back.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "server/membership.h"
#include "server/parameter_store.h"
#include "server/shard_metrics.h"
#include "server/wire_traffic.h"
#include "proto/message_convert.h"
#include "worker/tools/cluster_status.h"

namespace taups {
namespace {

constexpr uint64_t kElements = 16;
constexpr absl::Duration kLease = absl::Seconds(8);

TEST_CASE("awaited workers are not live, end their wait by registering or by the grace") {
  ManualClock clock;
  Membership members(&clock, kLease);
  members.Register(7, 70, absl::ZeroDuration());
  members.AwaitReturning({3, 5, 7}, absl::Seconds(10));
  CHECK(members.View().awaited == std::vector<uint32_t>{3, 5});  // 7 was known
  CHECK(members.View().live == std::vector<uint32_t>{7});
  CHECK_FALSE(members.Heartbeat(3, 0));  // must register again
  CHECK(members.View().ever_registered == 1);  // awaited ones have not, here

  members.Register(3, 30, absl::ZeroDuration());
  CHECK(members.View().awaited == std::vector<uint32_t>{5});
  CHECK(members.View().live == std::vector<uint32_t>{3, 7});
  CHECK(members.View().ever_registered == 2);

  clock.Advance(absl::Seconds(9));
  members.Heartbeat(3, 30);
  members.Heartbeat(7, 70);
  CHECK(members.Expire().empty());
  clock.Advance(absl::Seconds(2));  // 11 s: past 5's grace, not the leases
  CHECK(members.Expire() == std::vector<uint32_t>{5});
  CHECK(members.View().awaited.empty());
  CHECK(members.View().live == std::vector<uint32_t>{3, 7});
  CHECK(members.lease_expirations() == 0);  // an end of waiting, not a death
}

TableConfig SyncTable() {
  TableConfig config = TableConfig::Dense("s", kElements);
  config.consistency.kind = ConsistencyKind::kSync;
  // One worker expected at start-up, two training: the start-up gate (which
  // a restore re-arms) is passed by the first one back, so only the wait
  // for the workers the checkpoint knew keeps the step open.
  config.consistency.num_workers = 1;
  config.optimizer.learning_rate = 0.1f;
  return config;
}

void Push(ParameterStore& store, uint32_t worker, uint64_t step, uint64_t seq) {
  const TableInfo info = *store.GetTable("s");
  PushMeta meta;
  meta.clock = step;
  meta.origin = PushOrigin{worker, 100 + worker, seq};
  meta.base_version = info.version;
  const std::vector<float> g(info.range.size(), 1.0f + static_cast<float>(worker));
  auto pushed = store.PushDense("s", info.range.begin, g, meta);
  INFO(pushed.status().ToString());
  REQUIRE(pushed.ok());
  REQUIRE(pushed->accepted);
}

// What ShardStatus answers in `stats` for this store (no wire traffic).
v1::ShardStatusResponse StatusOf(const ParameterStore& store) {
  v1::ShardStatusResponse answer;
  ToWire(store.Stats(), [](absl::string_view) { return TableTraffic{}; },
         absl::Now(), answer.mutable_stats());
  return answer;
}

ClusterStatus OneShard(const v1::ShardStatusResponse& answer) {
  ClusterStatus cluster;
  cluster.addresses = {"127.0.0.1:1"};
  cluster.shards = {answer};
  return cluster;
}

uint64_t OpenStep(const ParameterStore& store) { return store.GetTable("s")->open_step; }

// A store as a restarted shard has it: the sync table restored from a
// snapshot taken after step 0 closed with workers 0 and 1; nobody registered.
std::unique_ptr<ParameterStore> Restored(const ManualClock* clock) {
  ParameterStore before(0, 1, clock, kLease);
  bool created = false;
  auto made = before.CreateTable(SyncTable(), false, &created);
  INFO(made.status().ToString());
  REQUIRE(made.ok());
  before.Register(0, 100, absl::ZeroDuration());
  before.Register(1, 101, absl::ZeroDuration());
  Push(before, 0, 0, 1);
  Push(before, 1, 0, 1);
  REQUIRE(OpenStep(before) == 1);
  const PartitionSnapshot snapshot = (*before.PartitionOf("s"))->Snapshot();

  auto after = std::make_unique<ParameterStore>(0, 1, clock, kLease);
  REQUIRE(after->CreateTable(SyncTable(), false, &created).ok());
  REQUIRE((*after->PartitionOf("s"))->Restore(snapshot).ok());
  REQUIRE(OpenStep(*after) == 1);
  return after;
}

TEST_CASE("without waiting, the first worker back closes a restored sync step alone") {
  // The failure the wait prevents, shown on the same store.
  ManualClock clock;
  std::unique_ptr<ParameterStore> store = Restored(&clock);
  store->Register(0, 100, absl::ZeroDuration());
  Push(*store, 0, 1, 2);
  CHECK(OpenStep(*store) == 2);
}

TEST_CASE("a restored sync step waits for every worker the checkpoint knew") {
  ManualClock clock;
  std::unique_ptr<ParameterStore> store = Restored(&clock);
  REQUIRE(store->AwaitRestoredWorkers() == 2);
  {
    // Awaited, not dead: the dead-worker alert must not fire on a restart.
    MetricsWriter out;
    WriteShardMetrics(store->Stats(), nullptr, {}, out);
    const std::string text = out.Render();
    INFO(text);
    CHECK(absl::StrContains(text, "taups_workers{state=\"awaited\"} 2\n"));
    CHECK(absl::StrContains(text, "taups_workers{state=\"dead\"} 0\n"));
  }
  {
    // ShardStatus and ps_admin status say the same: awaited, not dead.
    const v1::ShardStatusResponse answer = StatusOf(*store);
    CHECK(answer.stats().live_workers() == 0);
    CHECK(answer.stats().awaited_workers() == 2);
    CHECK(answer.stats().dead_workers() == 0);
    REQUIRE(answer.stats().tables_size() == 1);
    REQUIRE(answer.stats().tables(0).workers_size() == 2);
    for (const v1::WorkerStats& w : answer.stats().tables(0).workers()) {
      CHECK(w.awaited());
      CHECK_FALSE(w.live());
    }
    const ClusterStatus cluster = OneShard(answer);
    const std::string text = StatusText(cluster);
    INFO(text);
    CHECK(absl::StrContains(text, "\nSHARD  AWAITED  WORKERS\n0      2        0,1\n"));
    const std::string json = StatusJson(cluster);
    INFO(json);
    CHECK(absl::StrContains(json, "\"dead\":0,"));
    CHECK(absl::StrContains(json, "\"awaited\":2,\"awaited_ids\":[0,1]}"));
  }
  store->Register(0, 100, absl::ZeroDuration());
  Push(*store, 0, 1, 2);
  CHECK(OpenStep(*store) == 1);  // still waiting for worker 1
  {
    // Worker 0 is back: live; worker 1 still awaited; the block lists it alone.
    const v1::ShardStatusResponse answer = StatusOf(*store);
    CHECK(answer.stats().live_workers() == 1);
    CHECK(answer.stats().awaited_workers() == 1);
    CHECK(answer.stats().dead_workers() == 0);
    const ClusterStatus cluster = OneShard(answer);
    const std::string text = StatusText(cluster);
    INFO(text);
    CHECK(absl::StrContains(text, "\n0      1        1\n"));
  }

  SECTION("it closes when the other worker is back and pushes") {
    clock.Advance(kLease);  // longer than worker 0 would wait for anything
    store->Heartbeat(0, 100);
    store->Tick();
    CHECK(OpenStep(*store) == 1);  // grace is lease + lease / 4
    store->Register(1, 101, absl::ZeroDuration());
    CHECK(OpenStep(*store) == 1);
    Push(*store, 1, 1, 2);
    CHECK(OpenStep(*store) == 2);
  }
  SECTION("it closes without a worker that does not come back within the grace") {
    clock.Advance(kLease + kLease / 4 - absl::Milliseconds(1));
    store->Heartbeat(0, 100);
    store->Tick();
    CHECK(OpenStep(*store) == 1);
    clock.Advance(absl::Milliseconds(2));
    store->Heartbeat(0, 100);
    store->Tick();
    CHECK(OpenStep(*store) == 2);
  }
}

}  // namespace
}  // namespace taups

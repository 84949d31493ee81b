// ps_worker --model=ctr prefetches its embedding rows by default, and the
// batch feed follows the table's policy while the job runs: 2 ps_server
// processes and 2 prefetching ps_worker processes on 127.0.0.1 train while
// `ps_admin set-policy` switches both tables from async to sync and back,
// several times. A prefetch that kept its start from the policy at start
// pushed for step c+1 while c was still open after such a switch and the
// worker exited (3 of 6 runs of policy_cluster_test's switch case before
// the feed followed the policy); here every worker must finish, each
// sync period must close steps with one update each, and each worker must
// report the changes of start it followed.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "taups/client.h"
#include "tests/ctr_cluster.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

constexpr int kShards = CtrCluster::kShards;
constexpr int kWorkers = 2;

// Polls `done` (workers checked each time) for up to 3 min.
void TrainUntil(std::vector<std::unique_ptr<Process>>& workers,
                const std::function<bool()>& done) {
  REQUIRE(PollUntil(
      [&] {
        RequireTraining(workers);
        return done();
      },
      absl::Minutes(3)));
}

// Both tables to `kind`, in the order `sparse_first` says.
void SetPolicy(CtrCluster& cluster, const std::string& kind,
               bool sparse_first) {
  for (const char* table : sparse_first ? std::vector{kCtrSparse, kCtrDense}
                                        : std::vector{kCtrDense, kCtrSparse}) {
    cluster.SetPolicy(table, kWorkers, kind);
  }
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST_CASE("prefetching ctr workers ride through async-sync switches") {
  constexpr int kSteps = 700;
  constexpr int kRounds = 3;
  // Versions per shard an async period lasts (each worker's dense push
  // bumps every shard once): 40 steps per worker, more than the feed's 25
  // pulls between policy reads, so it sees the way back to async.
  constexpr uint64_t kAsyncVersions = 80;
  constexpr uint64_t kSyncSteps = 25;
  CtrCluster cluster;
  // --prefetch is not given: the default prefetches.
  auto workers =
      cluster.StartWorkers(kWorkers, CtrArgs(kSteps, {"--consistency=async"}));
  TrainUntil(workers, [&] {
    auto stats = cluster.observer->Stats(kCtrDense);
    return stats.ok() && !stats->empty() && (*stats)[0].version >= 40;
  });
  for (int round = 0; round < kRounds; ++round) {
    INFO("round " << round);
    const uint64_t async_from = cluster.Stats(kCtrDense)[0].version;
    TrainUntil(workers, [&] {
      return cluster.Stats(kCtrDense)[0].version >= async_from + kAsyncVersions;
    });
    SetPolicy(cluster, "sync", /*sparse_first=*/round % 2 == 1);
    const std::vector<TableShardStats> at_sync = cluster.Stats(kCtrDense);
    TrainUntil(workers, [&] {
      return cluster.Stats(kCtrDense)[0].steps_closed >=
             at_sync[0].steps_closed + kSyncSteps;
    });
    const std::vector<TableShardStats> in_sync = cluster.Stats(kCtrDense);
    for (int s = 0; s < kShards; ++s) {
      INFO("shard " << s);
      // Under sync each closed step applied one update (the first one or
      // two after the switch may close on the policy change instead).
      const uint64_t steps = in_sync[s].steps_closed - at_sync[s].steps_closed;
      const uint64_t versions = in_sync[s].version - at_sync[s].version;
      CHECK(steps >= kSyncSteps - 1);
      CHECK(versions <= steps + 2);
      CHECK(in_sync[s].live_workers == uint32_t{kWorkers});
    }
    if (round + 1 < kRounds) SetPolicy(cluster, "async", round % 2 == 0);
  }
  // The last period stays sync until the workers finish.
  const std::vector<WorkerRun> runs =
      WaitForWorkers(workers, absl::Minutes(4));
  for (const WorkerRun& run : runs) {
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(run.output.find("embedding prefetch with the step before (async)") !=
          std::string::npos);
    // Each switch to sync was followed (the answers carry a step) ...
    CHECK(Count(run.output, "now once the step before is pushed") >=
          size_t{kRounds});
    // ... and each way back to async (seen by reading the policy).
    CHECK(Count(run.output, "now with the step before (async)") >=
          size_t{kRounds - 1});
    CHECK(run.output.find("embedding prefetch followed") != std::string::npos);
    const std::optional<double> steps = JsonNumber(run.json, "steps");
    REQUIRE(steps.has_value());
    CHECK(*steps == kSteps);
  }
  cluster.StopShards();
}

}  // namespace
}  // namespace taups::testing

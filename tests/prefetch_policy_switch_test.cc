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
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

constexpr int kShards = 2;
constexpr int kWorkers = 2;
constexpr char kDense[] = "ctr_mlp";
constexpr char kSparse[] = "ctr_embeddings";

std::unique_ptr<Client> Observer(const std::vector<Shard>& shards) {
  ClientOptions options;
  for (const Shard& s : shards) options.servers.push_back(s.address());
  options.register_worker = false;
  options.worker_id = UINT32_MAX;
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  return *std::move(client);
}

std::vector<TableShardStats> StatsOf(Client& client) {
  auto stats = client.Stats(kDense);
  INFO(stats.status().ToString());
  REQUIRE(stats.ok());
  REQUIRE(stats->size() == static_cast<size_t>(kShards));
  return *std::move(stats);
}

void RequireTraining(std::vector<std::unique_ptr<Process>>& workers) {
  for (auto& w : workers) {
    if (!w->Wait(absl::ZeroDuration()).has_value()) continue;
    INFO(w->Output());
    FAIL("a worker exited while the test switched policies under it");
  }
}

// Polls `done` (every 20 ms, workers checked each time) for up to 3 min.
void PollUntil(std::vector<std::unique_ptr<Process>>& workers,
               const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Minutes(3);
  while (!done()) {
    RequireTraining(workers);
    REQUIRE(absl::Now() < deadline);
    absl::SleepFor(absl::Milliseconds(20));
  }
}

void SetPolicy(const TempDir& dir, const std::vector<Shard>& shards,
               const std::string& kind, bool sparse_first) {
  const std::vector<std::string> tables =
      sparse_first ? std::vector<std::string>{kSparse, kDense}
                   : std::vector<std::string>{kDense, kSparse};
  for (const std::string& table : tables) {
    const std::string out = RunAdmin(
        dir, shards,
        {"--table=" + table, absl::StrCat("--num_workers=", kWorkers),
         "--consistency=" + kind, "set-policy"});
    INFO(out);
    CHECK(out.find("consistency now " + kind) != std::string::npos);
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
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), kShards);
  // --prefetch is not given: the default prefetches.
  auto workers = StartWorkers(
      dir, shards, kWorkers,
      {"--model=ctr", absl::StrCat("--steps=", kSteps), "--log_every=0",
       "--eval_examples=1000", "--seed=6", "--consistency=async"});
  auto observer = Observer(shards);
  PollUntil(workers, [&] {
    auto stats = observer->Stats(kDense);
    return stats.ok() && !stats->empty() && (*stats)[0].version >= 40;
  });
  for (int round = 0; round < kRounds; ++round) {
    INFO("round " << round);
    const uint64_t async_from = StatsOf(*observer)[0].version;
    PollUntil(workers, [&] {
      return StatsOf(*observer)[0].version >= async_from + kAsyncVersions;
    });
    SetPolicy(dir, shards, "sync", /*sparse_first=*/round % 2 == 1);
    const std::vector<TableShardStats> at_sync = StatsOf(*observer);
    PollUntil(workers, [&] {
      return StatsOf(*observer)[0].steps_closed >=
             at_sync[0].steps_closed + kSyncSteps;
    });
    const std::vector<TableShardStats> in_sync = StatsOf(*observer);
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
    if (round + 1 < kRounds) SetPolicy(dir, shards, "async", round % 2 == 0);
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
  for (Shard& shard : shards) {
    INFO(shard.process->Output());
    CHECK(shard.process->Stop() == 0);
  }
}

}  // namespace
}  // namespace taups::testing

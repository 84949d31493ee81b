#include "tests/ctr_cluster.h"

#include <catch2/catch.hpp>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace taups::testing {

std::vector<std::string> CtrArgs(int steps,
                                 const std::vector<std::string>& more) {
  std::vector<std::string> args = {"--model=ctr",
                                   absl::StrCat("--steps=", steps),
                                   "--log_every=0", "--eval_examples=1000",
                                   "--seed=6"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

CtrCluster::CtrCluster(const std::vector<std::string>& shard_args)
    : shards(StartShards(dir.path(), kShards, shard_args)) {
  ClientOptions options;
  for (const Shard& s : shards) options.servers.push_back(s.address());
  options.register_worker = false;
  options.worker_id = UINT32_MAX;
  auto client = Client::Connect(options);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  observer = *std::move(client);
}

std::vector<std::unique_ptr<Process>> CtrCluster::StartWorkers(
    int workers, const std::vector<std::string>& args,
    const std::vector<std::vector<std::string>>& per_worker) {
  return testing::StartWorkers(dir, shards, workers, args, per_worker);
}

std::vector<TableShardStats> CtrCluster::Stats(const std::string& table) {
  auto stats = observer->Stats(table);
  INFO(stats.status().ToString());
  REQUIRE(stats.ok());
  REQUIRE(stats->size() == static_cast<size_t>(kShards));
  return *std::move(stats);
}

void CtrCluster::SetPolicy(const std::string& table, int num_workers,
                           const std::string& kind) {
  const std::string out = RunAdmin(
      dir, shards,
      {"--table=" + table, absl::StrCat("--num_workers=", num_workers),
       "--consistency=" + kind, "set-policy"});
  INFO(out);
  CHECK(out.find("consistency now " + kind) != std::string::npos);
}

void CtrCluster::StopShards() {
  for (Shard& shard : shards) {
    INFO(shard.process->Output());
    REQUIRE(shard.process->Stop() == 0);
  }
}

bool Exited(Process& process) {
  return process.Wait(absl::ZeroDuration()).has_value();
}

void RequireTraining(Process& worker) {
  if (!Exited(worker)) return;
  INFO(worker.Output());
  FAIL("a worker exited while the test needed it training");
}

void RequireTraining(std::vector<std::unique_ptr<Process>>& workers) {
  for (auto& w : workers) RequireTraining(*w);
}

bool PollUntil(const std::function<bool()>& done, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

}  // namespace taups::testing

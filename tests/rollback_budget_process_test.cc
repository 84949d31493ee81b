// ps_admin rollback and --memory_budget_mb against a real ps_server: a
// rollback holds the loaded checkpoint and an undo copy of each part it
// restores, and charges them to the shard's budget before reading the
// checkpoint. One shard with a 4 MiB dense table (SGD: no optimizer state),
// a sync step cut every step: under an 8 MiB budget the table fits (its cap
// is 7/8 of the budget) but a rollback, which needs about twice the
// checkpoint, does not: RESOURCE_EXHAUSTED naming the bytes, and the table
// keeps the values it had. Under a 24 MiB budget the same rollback runs and
// the table holds the checkpoint's values.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/checkpoint_store.h"
#include "taups/client.h"
#include "tests/checkpoint_steps.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

constexpr uint64_t kSize = uint64_t{1} << 20;  // 4 MiB of floats
const char kTable[] = "rbb";

struct Outcome {
  int code = -1000;
  std::string out;
  std::vector<float> before;  // pulled just before the rollback
  std::vector<float> after;   // pulled just after it
  std::vector<float> at_step;  // what the checkpoint of the step holds
};

// Trains three sync steps on one shard with `budget_mb`, waits for the cut
// of the first and the last, and rolls back to the first.
Outcome RollBackUnder(int budget_mb) {
  TempDir run, state;
  const std::string ckpt = state.path() + "/ckpt";
  std::vector<Shard> shards = StartShards(
      run.path(), 1,
      {"--start_empty", absl::StrCat("--memory_budget_mb=", budget_mb),
       "--checkpoint_dir=" + ckpt, "--checkpoint_every_steps=1",
       "--checkpoint_keep=100", "--stats_interval_s=0"});
  ClientOptions options;
  options.servers = {shards[0].address()};
  options.call_timeout = absl::Seconds(20);
  options.retry_budget = absl::Seconds(30);  // registers again after a rollback
  auto client = Client::Connect(options);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  TableConfig config = TableConfig::Dense(kTable, kSize);
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = 1;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 0.5f;
  const absl::Status created = (*client)->CreateTable(config);
  INFO(created.ToString());
  REQUIRE(created.ok());
  absl::SleepFor(absl::Milliseconds(500));  // hooked for step cuts

  Outcome result;
  std::vector<float> values(kSize);
  std::vector<float> gradient(kSize);
  uint64_t last_step = 0;
  for (int step = 0; step < 3; ++step) {
    auto pulled = (*client)->PullDense(kTable, absl::MakeSpan(values));
    REQUIRE(pulled.ok());
    for (uint64_t j = 0; j < kSize; ++j) {
      gradient[j] = static_cast<float>((j + step) % 5) - 2.0f;
    }
    auto pushed = (*client)->PushDense(kTable, gradient);
    INFO(pushed.status().ToString());
    REQUIRE(pushed.ok());
    (*client)->Clock();
    last_step = pulled->step + 1;
  }
  // The cuts are written behind the steps: wait for the first and the last.
  std::set<uint64_t> steps;
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < until) {
    steps = StepsIn(ckpt);
    if (steps.size() >= 2 && *steps.rbegin() >= last_step) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  REQUIRE(steps.size() >= 2);
  result.before.resize(kSize);
  REQUIRE((*client)->PullDense(kTable, absl::MakeSpan(result.before)).ok());
  // The oldest cut whose values are not the table's now (a cut written
  // behind may already hold the last step's values).
  uint64_t target = 0;
  for (uint64_t step : steps) {
    absl::StatusOr<std::vector<float>> values = ValuesOfStep(ckpt, step);
    INFO(values.status());
    REQUIRE(values.ok());
    result.at_step = std::move(*values);
    REQUIRE(result.at_step.size() == kSize);
    target = step;
    if (result.at_step != result.before) break;
  }
  Process admin(BinDir() + "/ps_admin",
                {"--servers=" + JoinAddresses(shards), "rollback",
                 absl::StrCat("--step=", target)},
                run.path() + "/admin.log");
  result.code = admin.Wait(absl::Seconds(60)).value_or(-1000);
  result.out = admin.Output();
  // A rolled-back shard has a new incarnation: the client registers again
  // (its retries) and pulls what the shard holds now.
  result.after.resize(kSize);
  auto pulled = (*client)->PullDense(kTable, absl::MakeSpan(result.after));
  INFO(pulled.status().ToString());
  REQUIRE(pulled.ok());
  (*client)->Leave().IgnoreError();
  return result;
}

TEST_CASE("a rollback the memory budget cannot hold is refused and changes nothing") {
  const Outcome small = RollBackUnder(8);
  INFO(small.out);
  CHECK(small.code == 1);
  CHECK(absl::StrContains(small.out, "RESOURCE_EXHAUSTED"));
  CHECK(absl::StrContains(small.out, "of the memory budget"));
  CHECK(absl::StrContains(small.out, "nothing rolled back"));
  // About twice the 4 MiB checkpoint is needed; under 4 MiB is left.
  const size_t at = small.out.find(" needs ");
  REQUIRE(at != std::string::npos);
  const uint64_t needed = std::stoull(small.out.substr(at + 7));
  CHECK(needed >= 2 * kSize * sizeof(float));
  CHECK(needed < 3 * kSize * sizeof(float));
  REQUIRE(small.before != small.at_step);  // the rollback would change them
  CHECK(small.after == small.before);
}

TEST_CASE("the same rollback under a budget that holds it restores the step") {
  const Outcome big = RollBackUnder(24);
  INFO(big.out);
  CHECK(big.code == 0);
  REQUIRE(big.before != big.at_step);
  CHECK(big.after == big.at_step);
}

}  // namespace
}  // namespace taups::testing

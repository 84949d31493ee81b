// ps_admin rollback against real ps_server processes (issue 11 part 4):
// two shards of a sync table cut every 2 steps, two in-process workers
// training; shard 1 is killed with -9 and restarted on its port (it comes
// back from its newest cut, which may be older than shard 0's state), then
// ps_admin rollback brings both shards to the newest step both hold. The
// test checks that both shards rolled back to that step, that the values
// the workers pull right after equal what the checkpoint files of that step
// hold (read by the checkpoint reader, from copies of the directories),
// and that the workers, riding through the rollback, end where a second
// cluster restored from those copies ends after the same number of steps,
// bit for bit (two workers: a step's sum does not depend on arrival order;
// the gradient depends only on the values pulled).
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "server/checkpoint_store.h"
#include "taups/client.h"
#include "tests/checkpoint_steps.h"
#include "tests/process_harness.h"
#include "tests/sync_adam_table.h"

namespace taups::testing {
namespace {

constexpr int kShards = 2;
constexpr uint32_t kWorkers = 2;
constexpr uint64_t kSize = 512;
constexpr uint64_t kHoldAt = 9;   // the workers stop before pulling this step
constexpr uint64_t kSteps = 16;   // ... and train until this step
const char kTable[] = "rb";

TableConfig Config() { return SyncAdamTable(kTable, kSize, kWorkers); }

// Worker w's gradient on the values it pulled (not on the step number: a
// run rolled back numbers its steps on from where the workers were).
std::vector<float> Gradient(uint32_t w, const std::vector<float>& v) {
  std::vector<float> g(v.size());
  for (size_t j = 0; j < v.size(); ++j) {
    const float target = static_cast<float>((j * 7 + w * 13) % 17) / 8.0f - 1.0f;
    const float d = v[j] - target;
    g[j] = d + 0.3f * d * d * d;
  }
  return g;
}

Shard StartOne(const TempDir& run, const std::string& name, const std::string& ckpt,
               int s, std::vector<std::string> extra) {
  const std::string dir = absl::StrCat(run.path(), "/", name, "-", s);
  std::filesystem::create_directories(dir);
  // StartShards names its one shard's port file shard0.port; a restart
  // must not read the port its first start wrote.
  std::filesystem::remove(dir + "/shard0.port");
  extra.insert(extra.end(),
               {absl::StrCat("--shard_index=", s), absl::StrCat("--num_shards=", kShards),
                "--checkpoint_dir=" + ckpt, "--checkpoint_every_steps=2",
                "--checkpoint_keep=100", "--stats_interval_s=0"});
  std::vector<Shard> one;
  {
    // Its log, should it not come up.
    INFO(absl::StrCat(dir, "/shard0.log"));
    one = StartShards(dir, 1, extra);
  }
  return std::move(one[0]);
}

std::vector<std::unique_ptr<Client>> Workers(const std::vector<Shard>& shards) {
  std::vector<std::unique_ptr<Client>> clients;
  for (uint32_t w = 0; w < kWorkers; ++w) {
    ClientOptions options;
    for (const Shard& s : shards) options.servers.push_back(s.address());
    options.worker_id = w;
    options.call_timeout = absl::Seconds(5);
    options.retry_budget = absl::Seconds(40);  // rides through the restart
    auto client = Client::Connect(options);
    INFO(client.status().ToString());
    REQUIRE(client.ok());
    clients.push_back(std::move(*client));
  }
  return clients;
}

// What worker w saw: the values of its first pull after `hold` released
// it, its last pull, and the first error.
struct WorkerRun {
  std::vector<float> after_hold;
  std::vector<float> last;
  uint64_t steps_after_hold = 0;
  absl::Status failure;
};

// Trains from the step the workers are at until pulled step >= `until`
// (or, with `count`, for that many steps); waits on `hold` (when given)
// before pulling step kHoldAt.
std::vector<WorkerRun> Train(std::vector<std::unique_ptr<Client>>& clients,
                             std::optional<uint64_t> until, uint64_t count,
                             absl::Notification* held, absl::Notification* hold) {
  std::vector<WorkerRun> runs(clients.size());
  std::vector<std::thread> threads;
  std::atomic<int> waiting{0};
  for (uint32_t w = 0; w < clients.size(); ++w) {
    threads.emplace_back([&, w] {
      std::vector<float> values(kSize);
      bool released = hold == nullptr;
      uint64_t done = 0;  // steps pushed since the hold (or the start)
      uint64_t next = 0;  // the step this worker pulls next
      while (true) {
        if (!released && next == kHoldAt) {
          if (waiting.fetch_add(1) + 1 == static_cast<int>(clients.size())) held->Notify();
          hold->WaitForNotification();
          released = true;
          done = 0;
        }
        absl::StatusOr<PullInfo> pulled =
            clients[w]->PullDense(kTable, absl::MakeSpan(values));
        if (!pulled.ok()) {
          runs[w].failure = pulled.status();
          return;
        }
        if (released && done == 0 && runs[w].after_hold.empty()) {
          runs[w].after_hold = values;
        }
        runs[w].last = values;
        if (until && pulled->step >= *until) break;
        if (!until && done >= count) break;
        absl::StatusOr<PushResult> pushed = clients[w]->PushDense(kTable, Gradient(w, values));
        if (!pushed.ok()) {
          runs[w].failure = pushed.status();
          return;
        }
        clients[w]->Clock();
        ++done;
        next = pulled->step + 1;
        runs[w].steps_after_hold = done;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return runs;
}

// The table's values in checkpoint of `step` in each copied directory:
// the shards' parts, in shard (= range) order.
std::vector<float> WholeTableOfStep(const std::vector<std::string>& dirs, uint64_t step) {
  std::vector<float> values;
  for (const std::string& dir : dirs) {
    absl::StatusOr<std::vector<float>> part = ValuesOfStep(dir, step);
    INFO(part.status());
    REQUIRE(part.ok());
    values.insert(values.end(), part->begin(), part->end());
  }
  return values;
}

// "shard s rolled back to step N" in ps_admin's output: N, or nullopt.
std::optional<uint64_t> RolledBackStep(const std::string& out, int s) {
  const std::string key = absl::StrCat("shard ", s, " rolled back to step ");
  const size_t at = out.find(key);
  if (at == std::string::npos) return std::nullopt;
  return std::stoull(out.substr(at + key.size()));
}

TEST_CASE("ps_admin rollback brings a restarted shard and the others to one step cut") {
  TempDir run, state, copies;
  const std::vector<std::string> dirs = {state.path() + "/ckpt0", state.path() + "/ckpt1"};
  std::vector<Shard> shards;
  for (int s = 0; s < kShards; ++s) {
    shards.push_back(StartOne(run, "main", dirs[s], s, {"--start_empty"}));
  }
  std::vector<std::unique_ptr<Client>> clients = Workers(shards);
  REQUIRE(clients[0]->CreateTable(Config()).ok());
  REQUIRE(clients[1]->OpenTable(kTable).ok());
  absl::SleepFor(absl::Milliseconds(500));  // hooked for step cuts

  absl::Notification held, hold;
  std::vector<WorkerRun> runs;
  std::thread training([&] { runs = Train(clients, kSteps, 0, &held, &hold); });
  REQUIRE(held.WaitForNotificationWithTimeout(absl::Seconds(60)));
  // Both workers pushed step kHoldAt - 1. Once both shards hold a cut of
  // one step (writes run behind the steps), shard 1 dies and comes back on
  // its port from its newest complete cut.
  const absl::Time wait_until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < wait_until) {
    std::set<uint64_t> common = StepsIn(dirs[0]);
    const std::set<uint64_t> other = StepsIn(dirs[1]);
    std::erase_if(common, [&](uint64_t step) { return !other.contains(step); });
    if (!common.empty()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  const int port1 = shards[1].port;
  REQUIRE(::kill(shards[1].process->pid(), SIGKILL) == 0);
  shards[1].process->Wait(absl::Seconds(10));
  shards[1] = StartOne(run, "main", dirs[1], 1, {absl::StrCat("--port=", port1)});
  CHECK(absl::StrContains(shards[1].process->Output(), "restored"));

  // A step no shard holds is refused, and changes nothing.
  {
    auto [code, out] = TryAdmin(run, shards, {"rollback", "--step=999"}, absl::Seconds(60));
    INFO(out);
    CHECK(code == 1);
    CHECK(absl::StrContains(out, "not every shard holds a checkpoint of step 999"));
  }
  auto [code, out] = TryAdmin(run, shards, {"rollback"}, absl::Seconds(60));
  INFO(out);
  REQUIRE(code == 0);
  const std::optional<uint64_t> step0 = RolledBackStep(out, 0);
  const std::optional<uint64_t> step1 = RolledBackStep(out, 1);
  REQUIRE(step0.has_value());
  REQUIRE(step1.has_value());
  CHECK(*step0 == *step1);
  const uint64_t cut = *step0;
  CHECK(cut % 2 == 0);
  CHECK(cut < kHoldAt);
  for (int s = 0; s < kShards; ++s) {
    CHECK(absl::StrContains(shards[s].process->Output(),
                            absl::StrCat("shard ", s, " rolled back to step ", cut)));
  }
  // The checkpoints of that step, copied while the workers wait.
  std::vector<std::string> copied;
  for (int s = 0; s < kShards; ++s) {
    copied.push_back(absl::StrCat(copies.path(), "/ckpt", s));
    std::filesystem::copy(dirs[s], copied.back(), std::filesystem::copy_options::recursive);
  }
  const std::vector<float> at_cut = WholeTableOfStep(copied, cut);
  REQUIRE(at_cut.size() == kSize);

  hold.Notify();
  training.join();
  for (const WorkerRun& r : runs) {
    INFO(r.failure.ToString());
    REQUIRE(r.failure.ok());
  }
  // Right after the rollback the workers pulled exactly the cut.
  CHECK(runs[0].after_hold == at_cut);
  CHECK(runs[1].after_hold == at_cut);
  const uint64_t after = runs[0].steps_after_hold;
  CHECK(after == runs[1].steps_after_hold);
  CHECK(after >= kSteps - kHoldAt);
  for (std::unique_ptr<Client>& c : clients) c->Leave().IgnoreError();
  clients.clear();

  // The reference: a cluster restored from the copies at that step, fresh
  // workers, the same number of steps.
  std::vector<Shard> reference;
  for (int s = 0; s < kShards; ++s) {
    reference.push_back(StartOne(run, "ref", copied[s], s,
                                 {absl::StrCat("--checkpoint_restore_step=", cut)}));
  }
  std::vector<std::unique_ptr<Client>> fresh = Workers(reference);
  for (auto& c : fresh) REQUIRE(c->OpenTable(kTable).ok());
  std::vector<WorkerRun> ref = Train(fresh, std::nullopt, after, nullptr, nullptr);
  for (const WorkerRun& r : ref) {
    INFO(r.failure.ToString());
    REQUIRE(r.failure.ok());
  }
  CHECK(ref[0].after_hold == at_cut);
  size_t moved = 0;
  for (size_t j = 0; j < kSize; ++j) moved += ref[0].last[j] != at_cut[j] ? 1 : 0;
  CHECK(moved > kSize / 2);
  CHECK(runs[0].last == ref[0].last);
  CHECK(runs[1].last == ref[0].last);
}

}  // namespace
}  // namespace taups::testing

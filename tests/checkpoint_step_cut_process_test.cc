// Two real ps_server shards of a sync table with --checkpoint_every_steps=2:
// two workers push known gradients for five steps, both shards are killed
// with -9 and restarted from their checkpoints, and the table reads as after
// exactly four steps on both: the SGD of the workers' mean gradients over
// steps 0-3, computed here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/checkpoint_store.h"
#include "taups/client.h"
#include "tests/process_harness.h"

namespace taups {
namespace {

using testing::Shard;
using testing::StartShards;
using testing::TempDir;

constexpr uint64_t kSize = 16;
constexpr float kLearningRate = 0.1f;
constexpr uint64_t kCutStep = 4, kStepsRun = 5;

float Gradient(uint32_t worker, uint64_t step) {
  return static_cast<float>((worker + 1) * (step + 1));
}

// Shard s of 2, checkpointing into <state>/ckpt<s>.
Shard StartShard(const TempDir& run, const TempDir& state, int s,
                 std::vector<std::string> extra) {
  const std::string dir = absl::StrCat(run.path(), "/", s);
  std::filesystem::create_directories(dir);
  extra.insert(extra.end(), {absl::StrCat("--shard_index=", s), "--num_shards=2",
                             absl::StrCat("--checkpoint_dir=", state.path(), "/ckpt", s),
                             "--checkpoint_every_steps=2", "--stats_interval_s=0"});
  std::vector<Shard> one = StartShards(dir, 1, extra);
  return std::move(one[0]);
}

std::unique_ptr<Client> Connect(const std::vector<Shard>& shards, uint32_t worker) {
  ClientOptions options;
  for (const Shard& s : shards) options.servers.push_back(s.address());
  options.worker_id = worker;
  options.call_timeout = absl::Seconds(20);
  auto client = Client::Connect(options);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  return std::move(*client);
}

// The newest complete checkpoint's step in `dir`, if any. Reads the
// manifest only: opening a CheckpointStore here would remove the tmp-*
// directory of a checkpoint the shard is writing.
std::optional<uint64_t> NewestStep(const std::string& dir) {
  uint64_t newest = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    uint64_t sequence = 0;
    if (ParseCheckpointDirName(entry.path().filename().string(), &sequence)) {
      newest = std::max(newest, sequence);
    }
  }
  if (newest == 0) return std::nullopt;
  const std::string path = absl::StrCat(dir, "/", CheckpointDirName(newest), "/MANIFEST");
  CheckpointFs* fs = PosixCheckpointFs();
  auto size = fs->FileSize(path);
  if (!size.ok()) return std::nullopt;
  auto file = fs->OpenFile(path);
  if (!file.ok()) return std::nullopt;
  auto manifest = ReadManifestFile(file->get(), path, *size);
  if (!manifest.ok()) return std::nullopt;
  return manifest->header.sync_step;
}

TEST_CASE("two killed shards restore the model of one common step") {
  TempDir state;
  {
    TempDir run;
    std::vector<Shard> shards;
    for (int s = 0; s < 2; ++s) shards.push_back(StartShard(run, state, s, {"--start_empty"}));
    std::vector<std::unique_ptr<Client>> clients;
    for (uint32_t w = 0; w < 2; ++w) clients.push_back(Connect(shards, w));
    TableConfig config = TableConfig::Dense("s", kSize);
    config.consistency.kind = ConsistencyKind::kSync;
    config.consistency.num_workers = 2;
    config.optimizer.learning_rate = kLearningRate;
    REQUIRE(clients[0]->CreateTable(config).ok());
    REQUIRE(clients[1]->OpenTable("s").ok());
    absl::SleepFor(absl::Milliseconds(500));  // the shards hook the new table
    std::vector<std::thread> workers;
    std::vector<absl::Status> failures(2);
    for (uint32_t w = 0; w < 2; ++w) {
      workers.emplace_back([&, w] {
        std::vector<float> values(kSize);
        for (uint64_t step = 0; step < kStepsRun && failures[w].ok(); ++step) {
          auto pulled = clients[w]->PullDense("s", absl::MakeSpan(values));
          auto pushed = clients[w]->PushDense(
              "s", std::vector<float>(kSize, Gradient(w, step)));
          failures[w] = !pulled.ok() ? pulled.status() : pushed.status();
          clients[w]->Clock();
        }
      });
    }
    for (std::thread& t : workers) t.join();
    for (const absl::Status& f : failures) {
      INFO(f.ToString());
      REQUIRE(f.ok());
    }
    for (int s = 0; s < 2; ++s) {
      const std::string dir = absl::StrCat(state.path(), "/ckpt", s);
      const absl::Time deadline = absl::Now() + absl::Seconds(10);
      while (NewestStep(dir) != kCutStep && absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(50));
      }
      INFO(shards[s].process->Output());
      REQUIRE(NewestStep(dir) == kCutStep);
    }
    for (Shard& s : shards) {
      ::kill(s.process->pid(), SIGKILL);
      s.process->Wait(absl::Seconds(10));
    }
  }
  float moved = 0.0f;
  for (uint64_t step = 0; step < kCutStep; ++step) {
    moved += kLearningRate * (Gradient(0, step) + Gradient(1, step)) / 2.0f;
  }
  TempDir run;
  std::vector<Shard> shards;
  for (int s = 0; s < 2; ++s) shards.push_back(StartShard(run, state, s, {}));
  auto client = Connect(shards, 0);
  REQUIRE(client->OpenTable("s").ok());
  std::vector<float> values(kSize);
  auto pulled = client->PullDense("s", absl::MakeSpan(values));
  INFO(pulled.status().ToString());
  REQUIRE(pulled.ok());
  REQUIRE(pulled->step == kCutStep);
  for (float v : values) REQUIRE(v == Approx(-moved).margin(1e-5));  // zeros, then SGD
}

}  // namespace
}  // namespace taups

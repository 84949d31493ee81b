// Step-cut checkpoints: two shards of a sync table, checkpointing every 2
// steps from their apply paths, each hold a checkpoint of step 4 although
// step 5 went on being pushed; restoring both gives the model after exactly
// 4 steps, computed here from the pushes.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/shard_checkpointer.h"

namespace taups {
namespace {

constexpr uint64_t kElements = 16;
constexpr float kLearningRate = 0.1f;

std::string FreshDir(int shard) {
  const std::string dir =
      absl::StrCat(std::filesystem::temp_directory_path().string(),
                   "/taups_step_cut_", shard, "_", getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

void MakeSyncTable(ParameterStore& store) {
  store.Register(0, 10, absl::ZeroDuration());
  store.Register(1, 11, absl::ZeroDuration());
  TableConfig sync = TableConfig::Dense("s", kElements);
  sync.consistency.kind = ConsistencyKind::kSync;
  sync.consistency.num_workers = 2;
  sync.optimizer.learning_rate = kLearningRate;
  bool created = false;
  REQUIRE(store.CreateTable(sync, true, &created).ok());
}

// Worker w's gradient for step k: (w + 1) * (k + 1) on every element.
float Gradient(uint32_t worker, uint64_t step) {
  return static_cast<float>((worker + 1) * (step + 1));
}

void PushStep(ParameterStore& store, uint64_t step) {
  const TableInfo info = *store.GetTable("s");
  for (uint32_t worker : {0u, 1u}) {
    PushMeta meta;
    meta.clock = step;
    meta.origin = PushOrigin{worker, 10 + worker, step + 1};
    meta.base_version = info.version;
    const std::vector<float> g(info.range.size(), Gradient(worker, step));
    auto pushed = store.PushDense("s", info.range.begin, g, meta);
    INFO(pushed.status().ToString());
    REQUIRE(pushed.ok());
  }
}

std::vector<float> Values(const ParameterStore& store) {
  return (*store.PartitionOf("s"))->Snapshot().table.values;
}

TEST_CASE(
    "checkpoints of one step on two shards restore the model of that step") {
  constexpr uint64_t kEverySteps = 2, kCutStep = 4, kStepsRun = 5;
  std::vector<std::string> dirs;
  std::vector<std::vector<float>> initial;
  {
    std::vector<std::unique_ptr<ParameterStore>> shards;
    std::vector<std::unique_ptr<ShardCheckpointer>> checkpointers;
    for (int s = 0; s < 2; ++s) {
      dirs.push_back(FreshDir(s));
      shards.push_back(std::make_unique<ParameterStore>(s, 2));
      MakeSyncTable(*shards.back());
      initial.push_back(Values(*shards.back()));
      ShardCheckpointerOptions options;
      options.dir = dirs.back();
      options.every_steps = kEverySteps;
      auto opened = ShardCheckpointer::Open(shards.back().get(),
                                            PosixCheckpointFs(), options, 1);
      REQUIRE(opened.ok());
      checkpointers.push_back(*std::move(opened));
      checkpointers.back()->StartBackground();
    }
    absl::SleepFor(absl::Milliseconds(400));  // the tables get their hooks
    auto await_cut = [&](uint64_t step) {
      for (auto& checkpointer : checkpointers) {
        const absl::Time deadline = absl::Now() + absl::Seconds(10);
        while (checkpointer->stats().last_step_cut != step &&
               absl::Now() < deadline) {
          absl::SleepFor(absl::Milliseconds(20));
        }
        REQUIRE(checkpointer->stats().last_step_cut == step);
      }
    };
    for (uint64_t step = 0; step < kStepsRun; ++step) {
      for (auto& shard : shards) PushStep(*shard, step);
      if (step + 1 == kEverySteps) await_cut(kEverySteps);  // an older cut kept
    }
    await_cut(kCutStep);
    REQUIRE(shards[0]->GetTable("s")->open_step == kStepsRun);
  }  // both shards gone

  // SGD on the mean of the two workers' gradients, step by step.
  auto moved_by = [](uint64_t steps) {
    float moved = 0.0f;
    for (uint64_t step = 0; step < steps; ++step) {
      moved += kLearningRate * (Gradient(0, step) + Gradient(1, step)) / 2.0f;
    }
    return moved;
  };
  // The newest (step 4), then the one of step 2 when asked for it.
  for (std::optional<uint64_t> asked :
       {std::optional<uint64_t>(), std::optional<uint64_t>(2)}) {
    const uint64_t expected_step = asked.value_or(kCutStep);
    const float moved = moved_by(expected_step);
    for (int s = 0; s < 2; ++s) {
      ParameterStore restored(s, 2);
      restored.Register(0, 10, absl::ZeroDuration());
      restored.Register(1, 11, absl::ZeroDuration());
      ShardCheckpointerOptions options;
      options.dir = dirs[s];
      options.restore_step = asked;
      auto reader =
          ShardCheckpointer::Open(&restored, PosixCheckpointFs(), options, 2);
      REQUIRE(reader.ok());
      auto report = (*reader)->Restore();
      INFO(report.status().ToString());
      REQUIRE(report.ok());
      REQUIRE(report->tables.at(0).open_step == expected_step);
      const std::vector<float> values = Values(restored);
      REQUIRE(values.size() == initial[s].size());
      for (size_t i = 0; i < values.size(); ++i) {
        REQUIRE(values[i] == Approx(initial[s][i] - moved).margin(1e-5));
      }
    }
  }
  for (const std::string& dir : dirs) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace taups

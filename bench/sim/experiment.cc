#include "bench/sim/experiment.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"

namespace taups::sim {

absl::StatusOr<SimData> LoadSimData(const std::string& dir) {
  SimData data;
  ASSIGN_OR_RETURN(data.train,
                   trainer::LoadFashionMnist(dir, trainer::DatasetSplit::kTrain));
  ASSIGN_OR_RETURN(data.test,
                   trainer::LoadFashionMnist(dir, trainer::DatasetSplit::kTest));
  return data;
}

const SimResult* ExperimentReport::Find(absl::string_view label) const {
  for (const SimResult& run : runs) {
    if (run.config.label == label) return &run;
  }
  return nullptr;
}

bool ExperimentReport::all_passed() const {
  return std::all_of(checks.begin(), checks.end(),
                     [](const Check& c) { return c.passed; });
}

absl::StatusOr<std::vector<SimResult>> RunConfigs(
    const std::vector<SimConfig>& configs, const SimData& data, int jobs) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(configs.size()));
  std::vector<std::optional<absl::StatusOr<SimResult>>> results(configs.size());
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next++; i < configs.size(); i = next++) {
      results[i] = RunSimulation(configs[i], data.train, data.test);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < jobs; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  std::vector<SimResult> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (!results[i]->ok()) {
      return absl::Status(results[i]->status().code(),
                          absl::StrCat("run '", configs[i].label, "': ",
                                       results[i]->status().message()));
    }
    out.push_back(std::move(**results[i]));
  }
  return out;
}

std::vector<std::string> ExperimentNames() {
  return {"staleness",           "spikes",          "stragglers", "ssp",
          "compression_softmax", "compression_mlp", "accumulation"};
}

absl::StatusOr<ExperimentReport> RunExperiment(absl::string_view name,
                                               const ExperimentOptions& options,
                                               const SimData& data) {
  if (name == "staleness") return RunStalenessExperiment(options, data);
  if (name == "spikes") return RunSpikesExperiment(options, data);
  if (name == "stragglers") return RunStragglersExperiment(options, data);
  if (name == "ssp") return RunSspExperiment(options, data);
  if (name == "compression_softmax") {
    return RunCompressionSoftmaxExperiment(options, data);
  }
  if (name == "compression_mlp") return RunCompressionMlpExperiment(options, data);
  if (name == "accumulation") return RunAccumulationExperiment(options, data);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown experiment '", name, "'; one of ",
                   absl::StrJoin(ExperimentNames(), ", ")));
}

SimConfig MlpExperimentBase(const ExperimentOptions& options,
                            std::string label) {
  SimConfig c;
  c.label = std::move(label);
  c.seed = options.seed;
  c.num_shards = options.num_shards;
  c.num_workers = kMlpWorkers;
  c.model = ModelKind::kMlp;
  c.batch_size = 32;
  c.budget_gradients = options.short_version ? 2400 : 18752;
  c.eval_examples = options.short_version ? 2000 : 0;
  c.eval_points = options.short_version ? 6 : 40;
  c.final_lr_fraction = 0.0f;
  c.compute.mu = 0.0;
  c.compute.sigma = 0.5;
  c.consistency = Policy(ConsistencyKind::kAsync, kMlpWorkers);
  return c;
}

ConsistencyConfig Policy(ConsistencyKind kind, uint32_t num_workers) {
  ConsistencyConfig c;
  c.kind = kind;
  c.num_workers = num_workers;
  return c;
}

Check MakeCheck(std::string name, bool passed, std::string measured) {
  return Check{std::move(name), passed, std::move(measured)};
}

double Points(double accuracy) { return 100.0 * accuracy; }

}  // namespace taups::sim

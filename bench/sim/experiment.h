// The experiments of docs/EXPERIMENTS.md on top of the simulation harness.
// Each experiment is a list of simulation configs (run concurrently, results
// in config order) and a list of checks of the expected shape; the same code
// runs the full version (sim_experiments) and the short one CI runs
// (tests/sim_experiments_test.cc).
//
// Thread-compatible; RunConfigs uses its own worker threads internally.
#ifndef TAUPS_BENCH_SIM_EXPERIMENT_H_
#define TAUPS_BENCH_SIM_EXPERIMENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/sim/simulation.h"
#include "worker/trainer/fashion_mnist.h"

namespace taups::sim {

struct SimData {
  trainer::ImageDataset train;
  trainer::ImageDataset test;
};

// Loads Fashion-MNIST (both splits) from `dir`.
absl::StatusOr<SimData> LoadSimData(const std::string& dir);

struct ExperimentOptions {
  bool short_version = false;
  uint64_t seed = 1;
  int jobs = 0;  // concurrent simulations; 0 = one per hardware thread
  uint32_t num_shards = 1;  // parameter-server shards in every run
};

// One expected shape, checked with its margin.
struct Check {
  std::string name;
  bool passed = false;
  std::string measured;  // the numbers behind the verdict
};

struct ExperimentReport {
  std::string experiment;
  bool short_version = false;
  std::vector<SimResult> runs;
  std::vector<Check> checks;
  std::vector<std::string> notes;  // findings reported, not checked

  // The run labelled `label`; nullptr if none.
  const SimResult* Find(absl::string_view label) const;
  bool all_passed() const;
};

// Runs `configs` on up to `jobs` threads; results in config order.
absl::StatusOr<std::vector<SimResult>> RunConfigs(
    const std::vector<SimConfig>& configs, const SimData& data, int jobs);

// The experiment names: "staleness", "spikes", "stragglers", "ssp",
// "compression_softmax", "compression_mlp", "accumulation".
std::vector<std::string> ExperimentNames();
absl::StatusOr<ExperimentReport> RunExperiment(absl::string_view name,
                                               const ExperimentOptions& options,
                                               const SimData& data);

// The individual experiments (see docs/EXPERIMENTS.md for their setups).
absl::StatusOr<ExperimentReport> RunStalenessExperiment(
    const ExperimentOptions& options, const SimData& data);
absl::StatusOr<ExperimentReport> RunSpikesExperiment(
    const ExperimentOptions& options, const SimData& data);
absl::StatusOr<ExperimentReport> RunStragglersExperiment(
    const ExperimentOptions& options, const SimData& data);
absl::StatusOr<ExperimentReport> RunSspExperiment(
    const ExperimentOptions& options, const SimData& data);
absl::StatusOr<ExperimentReport> RunCompressionSoftmaxExperiment(
    const ExperimentOptions& options, const SimData& data);
absl::StatusOr<ExperimentReport> RunCompressionMlpExperiment(
    const ExperimentOptions& options, const SimData& data);
absl::StatusOr<ExperimentReport> RunAccumulationExperiment(
    const ExperimentOptions& options, const SimData& data);

// The setup the MLP experiments (staleness, spikes, ssp) share: 16 async
// workers, lognormal(0, 0.5) compute times, the 784-128-10 MLP, batches of
// 32, plain SGD with linear decay to 0. Full: 18,752 gradients (10 epochs of
// the 60,000 training images; a multiple of 16, so barrier and async runs
// see the same budget) evaluated on all 10,000 test images at 40 points.
// Short: 2,400 gradients (1.3 epochs), 2,000 test images, 6 points.
inline constexpr uint32_t kMlpWorkers = 16;
SimConfig MlpExperimentBase(const ExperimentOptions& options, std::string label);

// Shorthands for building configs and checks.
ConsistencyConfig Policy(ConsistencyKind kind, uint32_t num_workers);
Check MakeCheck(std::string name, bool passed, std::string measured);
// Accuracy in percentage points, for messages.
double Points(double accuracy);

}  // namespace taups::sim

#endif  // TAUPS_BENCH_SIM_EXPERIMENT_H_

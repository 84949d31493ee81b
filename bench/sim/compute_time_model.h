// ComputeTimeModel: how long one simulated worker takes for one step
// (pull -> gradient -> push), in simulated seconds.
//
//   base      lognormal(mu, sigma): exp(mu + sigma * Z), Z ~ N(0, 1)
//   slow      workers listed in slow_workers take slow_factor x base
//   spikes    with probability spike_probability a step takes spike_delay_s
//             more (an IO stall, a preempted host: [S5]'s tau spike)
//
// Every draw is a pure function of (seed, worker, step), so the durations do
// not depend on the order in which the simulation asks for them.
//
// Thread-compatible; Draw() is const and may be called concurrently.
#ifndef TAUPS_BENCH_SIM_COMPUTE_TIME_MODEL_H_
#define TAUPS_BENCH_SIM_COMPUTE_TIME_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace taups::sim {

struct ComputeTimeConfig {
  double mu = 0.0;
  double sigma = 0.5;
  std::vector<uint32_t> slow_workers;
  double slow_factor = 1.0;
  double spike_probability = 0.0;
  double spike_delay_s = 0.0;

  absl::Status Validate() const;
};

struct StepDuration {
  double seconds = 0.0;
  bool spiked = false;
};

class ComputeTimeModel {
 public:
  ComputeTimeModel(ComputeTimeConfig config, uint64_t seed);
  StepDuration Draw(uint32_t worker, uint64_t step) const;
  const ComputeTimeConfig& config() const { return config_; }

 private:
  ComputeTimeConfig config_;
  uint64_t seed_;
};

}  // namespace taups::sim

#endif  // TAUPS_BENCH_SIM_COMPUTE_TIME_MODEL_H_

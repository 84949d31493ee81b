#include "bench/sim/compute_time_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "worker/trainer/deterministic_rng.h"

namespace taups::sim {

absl::Status ComputeTimeConfig::Validate() const {
  if (!(sigma >= 0.0) || !std::isfinite(mu)) {
    return absl::InvalidArgumentError(
        absl::StrCat("compute time: need a finite mu and sigma >= 0, got mu=",
                     mu, " sigma=", sigma));
  }
  if (!(slow_factor > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("compute time: slow_factor must be > 0, got ", slow_factor));
  }
  if (!(spike_probability >= 0.0 && spike_probability <= 1.0) ||
      !(spike_delay_s >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compute time: spike_probability must be in [0, 1] and spike_delay_s "
        ">= 0, got ", spike_probability, " and ", spike_delay_s));
  }
  return absl::OkStatus();
}

ComputeTimeModel::ComputeTimeModel(ComputeTimeConfig config, uint64_t seed)
    : config_(std::move(config)), seed_(seed) {}

StepDuration ComputeTimeModel::Draw(uint32_t worker, uint64_t step) const {
  trainer::Rng rng(trainer::MixSeed(seed_, {0xC0, worker, step}));
  StepDuration d;
  d.seconds = std::exp(config_.mu + config_.sigma * rng.Normal());
  if (std::find(config_.slow_workers.begin(), config_.slow_workers.end(),
                worker) != config_.slow_workers.end()) {
    d.seconds *= config_.slow_factor;
  }
  if (config_.spike_probability > 0.0 &&
      rng.UniformDouble() < config_.spike_probability) {
    d.seconds += config_.spike_delay_s;
    d.spiked = true;
  }
  return d;
}

}  // namespace taups::sim

#include "common/staleness.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace taups {

float DownweightFactor(DownweightKind kind, float lambda, uint64_t tau) {
  const double t = static_cast<double>(tau);
  switch (kind) {
    case DownweightKind::kNone:
      return 1.0f;
    case DownweightKind::kInverse:
      return static_cast<float>(1.0 / std::max(1.0, t));
    case DownweightKind::kInversePlusOne:
      return static_cast<float>(1.0 / (1.0 + t));
    case DownweightKind::kExponential:
      return static_cast<float>(std::exp(-static_cast<double>(lambda) * t));
  }
  return 1.0f;
}

float WarmupFactor(uint64_t version, uint64_t warmup_versions) {
  if (warmup_versions == 0 || version >= warmup_versions) return 1.0f;
  return static_cast<float>(static_cast<double>(version + 1) /
                            static_cast<double>(warmup_versions));
}

float ClipScale(float clip_norm, double norm_sq) {
  if (clip_norm <= 0.0f || norm_sq <= 0.0) return 1.0f;
  const double norm = std::sqrt(norm_sq);
  return norm <= clip_norm ? 1.0f : static_cast<float>(clip_norm / norm);
}

StalenessDecision DecideStaleness(const StalenessConfig& config, uint64_t tau,
                                  uint64_t version) {
  StalenessDecision decision;
  if (config.reject_above_tau_max && tau > config.tau_max) {
    decision.accepted = false;
    decision.lr_factor = 0.0f;
    decision.reject_reason = absl::StrCat(
        "stale gradient rejected: tau=", tau, " exceeds tau_max=",
        config.tau_max, " (computed on version ", version - tau,
        ", table is at ", version, "); pull fresh parameters and recompute");
    return decision;
  }
  const float down =
      DownweightFactor(config.downweight, config.downweight_lambda, tau);
  decision.downweight_factor = down;
  decision.downweighted = down < 1.0f;
  decision.lr_factor = down * WarmupFactor(version, config.warmup_versions);
  return decision;
}

absl::StatusOr<PushStamp> StampPush(const StalenessConfig& config,
                                    uint64_t version, uint64_t base_version,
                                    absl::string_view table) {
  PushStamp stamp;
  if (base_version > version) {
    // The pusher read a version this shard no longer has: the shard came
    // back from a checkpoint older than that read. Its gradient is of a
    // model that is gone; drop it and let the worker pull again.
    stamp.decision.accepted = false;
    stamp.decision.reject_reason = absl::StrCat(
        "computed on version ", base_version, " of table '", table,
        "', but this shard is at version ", version,
        " (it restarted from a checkpoint); pull again, this gradient is dropped");
    return stamp;
  }
  stamp.tau = version - base_version;
  stamp.decision = DecideStaleness(config, stamp.tau, version);
  return stamp;
}

}  // namespace taups

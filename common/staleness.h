// The staleness treatment of one push, in one place: its tau, whether it is
// accepted and the learning-rate factor it gets (f(tau) x warm-up), and
// norm clipping, as pure functions of the table's StalenessConfig. The
// server applies exactly these.
#ifndef TAUPS_COMMON_STALENESS_H_
#define TAUPS_COMMON_STALENESS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "taups/table_config.h"

namespace taups {

// f(tau) of the configured down-weight function; 1 for tau == 0.
float DownweightFactor(DownweightKind kind, float lambda, uint64_t tau);

// Linear warm-up: (version + 1) / warmup_versions, capped at 1; 1 when off.
float WarmupFactor(uint64_t version, uint64_t warmup_versions);

// Scale that brings a gradient of squared norm `norm_sq` to at most
// clip_norm; 1 when clipping is off or the norm is already small enough.
float ClipScale(float clip_norm, double norm_sq);

struct StalenessDecision {
  bool accepted = true;
  float lr_factor = 1.0f;          // down-weight x warm-up
  float downweight_factor = 1.0f;  // f(tau) alone
  bool downweighted = false;       // f(tau) < 1
  std::string reject_reason;  // set when !accepted
};

// The decision for a push with staleness `tau` arriving when the table is at
// `version`.
StalenessDecision DecideStaleness(const StalenessConfig& config, uint64_t tau,
                                  uint64_t version);

// A push's stamp: its tau = version - base_version and the decision for it.
struct PushStamp {
  uint64_t tau = 0;
  StalenessDecision decision;
};
// A base_version ahead of `version` (the pusher read from a shard that has
// since restarted from an older checkpoint) is refused: accepted = false,
// tau 0, a reason saying to pull again. Never an error today; StatusOr
// leaves room for one.
absl::StatusOr<PushStamp> StampPush(const StalenessConfig& config,
                                    uint64_t version, uint64_t base_version,
                                    absl::string_view table);

}  // namespace taups

#endif  // TAUPS_COMMON_STALENESS_H_

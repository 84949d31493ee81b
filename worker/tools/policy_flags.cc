#include "worker/tools/policy_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

ABSL_FLAG(std::string, consistency, "async",
          "Consistency policy of the tables: async (apply at once), sync "
          "(one mean update per step; waits for every live worker), semi_sync "
          "(a step closes at --quorum or --step_timeout_s), ssp (no worker "
          "more than --ssp_bound steps ahead of the slowest)");
ABSL_FLAG(double, quorum, 1.0,
          "semi_sync: fraction of live workers whose push closes a step");
ABSL_FLAG(double, step_timeout_s, 0.0,
          "semi_sync: close a step this long after it opened even without a "
          "quorum (0 = never)");
ABSL_FLAG(std::string, late, "drop",
          "semi_sync: workers that miss a step: drop | reuse_last (their "
          "previous gradient stands in) | apply_late (applied on arrival, "
          "down-weighted by tau)");
ABSL_FLAG(uint32_t, ssp_bound, 2, "ssp: the staleness bound s, in steps");
ABSL_FLAG(int64_t, tau_max, -1,
          "Reject pushes whose staleness tau exceeds this (-1 = accept all)");
ABSL_FLAG(std::string, downweight, "none",
          "Learning-rate factor for a push of staleness tau: none | inverse "
          "(1/max(1,tau)) | inverse_plus_one (1/(1+tau)) | exp "
          "(exp(-lambda tau))");
ABSL_FLAG(double, downweight_lambda, 0.1, "lambda of --downweight=exp");
ABSL_FLAG(bool, delay_compensation, false,
          "DC-ASGD on dense tables: g + lambda g*g*(theta_now - theta_pulled); "
          "the server keeps a copy of the parameters per worker");
ABSL_FLAG(double, dc_lambda, 0.04, "lambda of --delay_compensation");
ABSL_FLAG(double, clip_norm, 0.0,
          "Clip each push to this L2 norm on the server (0 = off)");
ABSL_FLAG(int64_t, warmup_versions, -1,
          "Linear learning-rate warm-up over the first N updates of each "
          "table shard (0 = off; -1 = ps_worker: the model's default, mlp 0, "
          "ctr 100 steps of each worker (100 x --num_workers versions under "
          "async and ssp, 100 under sync and semi_sync), which keeps "
          "asynchronous DLRM runs from stalling at a poor model after a few "
          "large early updates; ps_admin: off)");

namespace taups {

absl::Span<const FlagRange> PolicyFlagRanges() {
  static constexpr FlagRange kRanges[] = {
      {"quorum", 0, 1, /*min_open=*/true},
      {"step_timeout_s", 0, 86400},
      {"ssp_bound", 0, 1000000},
      {"tau_max", -1, MaxOf<int64_t>()},
      {"downweight_lambda", 0, 1e6},
      {"dc_lambda", 0, 1e6},
      {"clip_norm", 0, MaxOf<float>()},
      {"warmup_versions", -1, MaxOf<int64_t>()},
  };
  return kRanges;
}

absl::StatusOr<PolicyFlags> PolicyFromFlags(uint32_t num_workers) {
  PolicyFlags policy;
  RETURN_IF_ERROR(ParseConsistencyKind(absl::GetFlag(FLAGS_consistency),
                                       &policy.consistency.kind));
  policy.consistency.num_workers = num_workers;
  policy.consistency.quorum = static_cast<float>(absl::GetFlag(FLAGS_quorum));
  policy.consistency.step_timeout_s = absl::GetFlag(FLAGS_step_timeout_s);
  RETURN_IF_ERROR(
      ParseLatePolicy(absl::GetFlag(FLAGS_late), &policy.consistency.late));
  policy.consistency.staleness_bound = absl::GetFlag(FLAGS_ssp_bound);
  const int64_t tau_max = absl::GetFlag(FLAGS_tau_max);
  policy.staleness.reject_above_tau_max = tau_max >= 0;
  policy.staleness.tau_max = tau_max >= 0 ? static_cast<uint64_t>(tau_max) : 0;
  RETURN_IF_ERROR(ParseDownweightKind(absl::GetFlag(FLAGS_downweight),
                                      &policy.staleness.downweight));
  policy.staleness.downweight_lambda =
      static_cast<float>(absl::GetFlag(FLAGS_downweight_lambda));
  policy.staleness.delay_compensation = absl::GetFlag(FLAGS_delay_compensation);
  policy.staleness.delay_compensation_lambda =
      static_cast<float>(absl::GetFlag(FLAGS_dc_lambda));
  policy.staleness.clip_norm = static_cast<float>(absl::GetFlag(FLAGS_clip_norm));
  const int64_t warmup = absl::GetFlag(FLAGS_warmup_versions);
  if (warmup < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--warmup_versions must be -1 (the default), 0 (off) or a number of "
        "updates; got ", warmup));
  }
  policy.warmup_versions_given = warmup >= 0;
  policy.staleness.warmup_versions =
      policy.warmup_versions_given ? static_cast<uint64_t>(warmup) : 0;
  return policy;
}

}  // namespace taups

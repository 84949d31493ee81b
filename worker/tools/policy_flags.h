// Command-line flags that choose a table's consistency policy and staleness
// treatment, shared by ps_worker and ps_admin (only their mains link this).
#ifndef TAUPS_WORKER_TOOLS_POLICY_FLAGS_H_
#define TAUPS_WORKER_TOOLS_POLICY_FLAGS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/flag_checks.h"
#include "taups/table_config.h"

namespace taups {

struct PolicyFlags {
  ConsistencyConfig consistency;
  StalenessConfig staleness;
  // False when --warmup_versions is -1 (its default): staleness then has no
  // warm-up, and ps_worker applies the model's default instead.
  bool warmup_versions_given = false;
};

// Reads --consistency, --quorum, --step_timeout_s, --late, --ssp_bound,
// --tau_max, --downweight, --downweight_lambda, --delay_compensation,
// --dc_lambda, --clip_norm and --warmup_versions. `num_workers` is the
// number of workers a barrier waits for at start-up.
absl::StatusOr<PolicyFlags> PolicyFromFlags(uint32_t num_workers);

// The allowed range of each numeric flag above, for CheckNumericFlags().
absl::Span<const FlagRange> PolicyFlagRanges();

}  // namespace taups

#endif  // TAUPS_WORKER_TOOLS_POLICY_FLAGS_H_

// PolicyState: what a table part's consistency policy keeps — the version
// clock, the settings in force, membership as the policy sees it, worker
// clocks and the step being gathered — plus the helpers every policy uses.
// The policies themselves (consistency_policy.h) are stateless rules over
// it, so an admin call can switch policy and keep the clocks.
//
// Thread-compatible: ConsistencyController owns one and guards it with its
// mutex; everything here runs under that mutex.
#ifndef TAUPS_SERVER_POLICY_STATE_H_
#define TAUPS_SERVER_POLICY_STATE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/clock.h"
#include "server/live_clocks.h"
#include "server/push_types.h"
#include "server/table.h"
#include "server/table_stats.h"
#include "taups/table_config.h"

namespace taups {

// One whole push to this table part (all its slices), validated.
struct PushArgs {
  PushOrigin origin;
  uint64_t base_version = 0;
  uint64_t clock = 0;        // the step this gradient belongs to
  double push_norm_sq = 0;   // of the whole push; 0 = unknown
  absl::Span<const GradientPart> parts;
};

using BufferMap = absl::flat_hash_map<uint32_t, std::unique_ptr<StepBuffer>>;

struct PolicyState {
  PolicyState(Table* table, const Clock* clock);

  Table* const table;
  const Clock* const clock;
  ConsistencyConfig consistency;
  StalenessConfig staleness;
  uint64_t version = 0;  // updates applied
  TableStats stats;

  // Which workers are live, as last published by the shard, and the worker
  // clocks (steps completed), for SSP and for rejoining workers.
  LiveClocks workers;
  // Workers the restored tables knew that have not registered again yet
  // (Membership::AwaitReturning): barriers wait for them as for live ones.
  absl::flat_hash_set<uint32_t> awaited;
  size_t ever_registered = 0;

  // The step being gathered (sync / semi_sync).
  uint64_t open_step = 0;
  absl::Time step_opened;
  std::unique_ptr<StepBuffer> step_sum;
  absl::flat_hash_set<uint32_t> arrivals;  // workers that pushed for it
  size_t contributed = 0;                  // of those, accepted pushes
  // Set by a switch to a barrier policy until the first step closes by its
  // arrivals: shards switch at slightly different moments, so a worker may
  // come with a step another shard has already opened (see BarrierPolicy).
  bool just_switched = false;
  // reuse_last: each worker's gradient for the open step, and its last one.
  BufferMap current;
  BufferMap last;

  const std::string& name() const { return table->config().name; }
  // The workers known to the clocks (every one that ever joined, or was
  // restored with them), in id order.
  std::vector<uint32_t> KnownWorkers() const;
  void AdvanceClock(uint32_t worker, uint64_t pushed_for_step);
  // Counts a stamped push in the stats (and logs a rejection).
  void Record(const PushArgs& args, const PushOutcome& stamp);
  // Whether applying `parts` with lr_factor keeps the table finite.
  bool StaysFinite(absl::Span<const GradientPart> parts, float lr_factor,
                   uint32_t worker) const;
  absl::Status NonFiniteError(const PushArgs& args);  // and counts it
  void Apply(absl::Span<const GradientPart> parts, float lr_factor,
             uint32_t worker);
  StepBuffer& BufferOf(BufferMap& map, uint32_t worker);
};

}  // namespace taups

#endif  // TAUPS_SERVER_POLICY_STATE_H_

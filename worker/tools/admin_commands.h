// ps_admin's commands that ask every shard itself (through ShardAdmin):
// status, checkpoint, evict and rollback. Each prints what the shards answered to
// stdout, every failed shard's error (naming the shard) to stderr, and
// returns an error when any shard failed, so ps_admin exits 1.
//
// Thread-compatible (one ShardAdmin, one caller).
#ifndef TAUPS_WORKER_TOOLS_ADMIN_COMMANDS_H_
#define TAUPS_WORKER_TOOLS_ADMIN_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "worker/tools/shard_admin.h"

namespace taups {

// `tables` empty: every table. A table asked for that no answering shard
// holds is NOT_FOUND naming it.
absl::Status PrintStatus(ShardAdmin& admin, const std::vector<std::string>& tables,
                         bool json);
absl::Status PrintCheckpoints(ShardAdmin& admin, bool json);
absl::Status PrintEviction(ShardAdmin& admin, uint32_t worker, bool drain);

// The step every shard holds a checkpoint of (ShardStatus sync_steps): the
// newest common one, or `step` when given. FAILED_PRECONDITION naming the
// steps each shard holds when there is none (or some shard lacks `step`, or
// runs without --checkpoint_dir); a shard that does not answer fails it.
// A shard that resumed alone from a checkpoint (CheckpointStatus
// resumed_alone) caps the step at the one it resumed at: its later cuts mix
// that checkpoint with the other shards' later steps.
absl::StatusOr<uint64_t> CommonStep(
    const std::vector<absl::StatusOr<v1::ShardStatusResponse>>& shards,
    std::optional<uint64_t> step);
// rollback [--step=S]: CommonStep, then every shard rolls back to it; one
// line per shard (step, checkpoint, version, updates discarded).
absl::Status RollBackCluster(ShardAdmin& admin, std::optional<uint64_t> step);

}  // namespace taups

#endif  // TAUPS_WORKER_TOOLS_ADMIN_COMMANDS_H_

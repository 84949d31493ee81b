// The records inside checkpoint sections: a table's config, a policy's
// state and a dedup window, field by field, over the block layer
// (checkpoint_blocks.h). Readers check enums, bounds (CheckpointLimits) and
// duplicates, and return DATA_LOSS naming the offset.
//
// Pure functions; thread-compatible.
#ifndef TAUPS_SERVER_CHECKPOINT_RECORDS_H_
#define TAUPS_SERVER_CHECKPOINT_RECORDS_H_

#include "absl/status/status.h"
#include "server/checkpoint_blocks.h"
#include "server/consistency_controller.h"
#include "server/dedup_window.h"
#include "taups/table_config.h"

namespace taups {

void PutTableConfig(BlockWriter& w, const TableConfig& config);
void PutPolicySnapshot(BlockWriter& w, const PolicySnapshot& policy);
void PutDedupSnapshot(BlockWriter& w, const DedupSnapshot& dedup);

// Not validated beyond its encoding: the caller runs TableConfig::Validate.
absl::Status GetTableConfig(BlockReader& r, TableConfig* config);
absl::Status GetPolicySnapshot(BlockReader& r, PolicySnapshot* policy);
absl::Status GetDedupSnapshot(BlockReader& r, DedupSnapshot* dedup);

}  // namespace taups

#endif  // TAUPS_SERVER_CHECKPOINT_RECORDS_H_

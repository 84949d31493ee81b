// Rolling a running shard's tables back to a checkpoint, in place (the
// Rollback admin call; ShardCheckpointer's StepCheckpoints / LoadStep /
// RestoreInPlace are defined in checkpoint_rollback.cc too).
//
// RestoreTablesInPlace checks the whole checkpoint against the tables the
// shard holds before it touches one: the same shard layout, the same set
// of tables, each with the same configuration (consistency and staleness
// aside: the checkpoint's policy comes back with it) and the same part.
// Then each table part is restored on its apply path
// (Partition::Restore); should one refuse its snapshot, the parts already
// restored are put back as they were (their state is copied just before
// each is restored), so on any error nothing has changed.
//
// The caller keeps pushes out while it runs (ShardCalls' gate): the
// restore is per part, so a push between two parts' restores would land
// in one and not the other. Thread-compatible per store.
#ifndef TAUPS_SERVER_CHECKPOINT_ROLLBACK_H_
#define TAUPS_SERVER_CHECKPOINT_ROLLBACK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/checkpoint_store.h"
#include "server/parameter_store.h"

namespace taups {

struct TableRolledBack {
  std::string name;
  uint64_t version_before = 0;
  uint64_t version = 0;
  uint64_t open_step_before = 0;
  uint64_t open_step = 0;
};

// FAILED_PRECONDITION naming the first mismatch (another shard's
// checkpoint, a table missing on either side, another shape or part).
absl::Status CheckFitsTables(const ParameterStore& store,
                             const LoadedCheckpoint& loaded);

// CheckFitsTables, then every part restored (or none); tables in the
// checkpoint's order.
absl::StatusOr<std::vector<TableRolledBack>> RestoreTablesInPlace(
    ParameterStore& store, const LoadedCheckpoint& loaded);

}  // namespace taups

#endif  // TAUPS_SERVER_CHECKPOINT_ROLLBACK_H_

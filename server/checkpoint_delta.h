// Incremental checkpoints: folding a delta's partitions onto those of the
// checkpoint it follows (its base), so a chain full + delta + ... + delta
// restores as one full checkpoint would.
//
// A partition of the delta that is whole (dense tables, new tables, sparse
// tables written in full) replaces the base's; a sparse delta keeps the
// base's rows of that table, drops the rows of its removed keys, and puts
// in its changed rows (replacing or adding); its policy state, dedup window
// and config replace the base's. A table of the base that the delta does
// not list was dropped and is not carried on. Every inconsistency (a delta
// of a table the base lacks or holds in another shape, a key twice, a key
// both changed and removed) is DATA_LOSS naming `where`, and nothing is
// returned.
//
// Pure function; thread-compatible.
#ifndef TAUPS_SERVER_CHECKPOINT_DELTA_H_
#define TAUPS_SERVER_CHECKPOINT_DELTA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/checkpoint_format.h"

namespace taups {

// `base` holds no deltas (it is itself folded); the result holds none.
absl::StatusOr<std::vector<PartitionCheckpoint>> FoldDelta(
    std::vector<PartitionCheckpoint> base, std::vector<PartitionCheckpoint> delta,
    const std::string& where);

}  // namespace taups

#endif  // TAUPS_SERVER_CHECKPOINT_DELTA_H_

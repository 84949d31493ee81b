// How many updates a shard's restore lost, as its workers tell it.
//
// A restarted shard knows the version each table's checkpoint held, but not
// what its previous process applied after that checkpoint: that died with
// it. The workers know: each one saw versions of the tables it used, and on
// registering again it reports the last ones (RegisterRequest's
// seen_before_restart). The largest version reported above a restored
// table's checkpoint version bounds the loss from below: at least that many
// updates, acknowledged to some worker, are gone.
//
// What a worker says is believed only so far:
//  - only a worker the restored checkpoint knew (ExpectWorkers: the clocks
//    of its tables) is heard; anyone else's report changes nothing;
//  - each such worker is heard once per restored table: its first report of
//    that table counts (even one at or below the restored version), later
//    ones, in the same request or another registration, change nothing.
// So the believed reports, the memory they take and the warnings logged are
// bounded by expected workers x restored tables. The version a report names
// is NOT bounded: the shard has no record of how far its previous process
// went after the checkpoint, so an expected worker may overstate a table's
// loss (once); the figure is only as honest as those workers.
//
// Contract: Restored() once per restored table and ExpectWorkers() before
// serving; Report() after. A report for a table that was not restored
// changes nothing. Snapshot() answers per restored table.
//
// Thread-safe (one mutex; Report runs once per table per re-registration).
#ifndef TAUPS_SERVER_RESTORE_LOSSES_H_
#define TAUPS_SERVER_RESTORE_LOSSES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace taups {

class RestoreLosses {
 public:
  explicit RestoreLosses(uint32_t shard_index) : shard_index_(shard_index) {}

  // `table` was restored at `version` (`open_step`: its sync step, 0: none).
  void Restored(const std::string& table, uint64_t version, uint64_t open_step)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The workers the restored checkpoint knew; only their reports count.
  // Adds to those given before.
  void ExpectWorkers(absl::Span<const uint32_t> workers) ABSL_LOCKS_EXCLUDED(mu_);
  // `worker` saw `table` at `version` before the restart. Returns whether
  // the report was heard (an expected worker's first of a restored table);
  // logs one warning when it raises the table's known loss.
  bool Report(uint32_t worker, absl::string_view table, uint64_t version)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Per restored table, sorted by name: updates known lost by its restore
  // (0 until a worker reports more).
  std::vector<std::pair<std::string, uint64_t>> Snapshot() const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Table {
    uint64_t restored_version = 0;
    uint64_t open_step = 0;
    uint64_t seen = 0;  // the largest version reported above restored_version
    absl::flat_hash_set<uint32_t> reported;  // workers heard on this table
  };
  const uint32_t shard_index_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Table> tables_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint32_t> expected_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_RESTORE_LOSSES_H_

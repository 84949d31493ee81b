// What a shard restart cost this worker, counted in table versions: the
// last version of each table the worker saw from a shard, and, after the
// shard answered with a new incarnation, how far its first answer for that
// table went back (the updates applied after the restored checkpoint, as far
// as this worker saw them; another worker may have seen more).
//
// Contract: Saw() records a version a shard answered for a table (a pull's
// version, a push's new version); Restarted() marks the shard's recorded
// versions as "before the restart", and the next Saw() of each such table
// counts max(0, before - after) lost and logs one warning line.
//
// Thread-safe (one mutex; called once per answer, next to an RPC).
#ifndef TAUPS_WORKER_SRC_LOST_UPDATES_H_
#define TAUPS_WORKER_SRC_LOST_UPDATES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace taups {

class LostUpdates {
 public:
  explicit LostUpdates(size_t shards);

  // `shard` answered `version` for `table` (0: no version, ignored).
  void Saw(uint32_t shard, const std::string& table, uint64_t version)
      ABSL_LOCKS_EXCLUDED(mu_);
  // `shard` answered with a new incarnation.
  void Restarted(uint32_t shard) ABSL_LOCKS_EXCLUDED(mu_);
  // What to tell `shard` when registering again after its restart: the last
  // version of each table seen from its previous process. Handed out once.
  std::vector<std::pair<std::string, uint64_t>> TakeReport(uint32_t shard)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Indexed by shard: updates lost over all its restarts and tables.
  std::vector<uint64_t> ByShard() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct PerShard {
    absl::flat_hash_map<std::string, uint64_t> last;    // this incarnation
    absl::flat_hash_map<std::string, uint64_t> before;  // awaiting an answer
    absl::flat_hash_map<std::string, uint64_t> report;  // for the shard
    uint64_t lost = 0;
  };
  mutable absl::Mutex mu_;
  std::vector<PerShard> shards_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_LOST_UPDATES_H_

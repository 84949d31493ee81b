// Checks a fault run's history (fault_history.h) against the final table.
//
// What must hold, whatever was killed, paused or restarted:
//   - no (worker, incarnation, seq) or slot pushed twice by the drivers, and
//     no push applied twice: every element is 0 or one push's share;
//   - versions: within a shard incarnation, each worker sees its shard's
//     version never go back, and (async, ssp) no two accepted pushes get the
//     same new version; a restarted shard restores a version that existed
//     in the history it continues, and counts on from there;
//   - what was lost: a restore keeps exactly the accepted pushes at or below
//     its version; the others are lost and never seen again;
//   - reads: (async, ssp) a pull sees every push acknowledged by its shard
//     incarnation before the pull was sent, nothing rejected or lost, and
//     nothing sent after it returned; (ssp) it sees every push of each
//     steady worker older than its clock minus the bound; (sync) a pull of
//     step p sees exactly the accepted pushes of steps < p of its shard
//     incarnation, so no push landed in a step after it had closed;
//   - final values: each acknowledged surviving push applied once, each
//     rejected or lost one not at all, unresolved ones 0 or 1; so their sum
//     lies between the acknowledged and the attempted sum (Jepsen's counter
//     check) and equals the acknowledged one when every push was resolved.
//
// Sync tables restore their open step from a checkpoint (arrivals and the
// step buffer), which this model of lost pushes does not describe: with a
// sync table and a shard restart, loss accounting and the step check are
// left out and every push's outcome counts as unresolved.
#ifndef TAUPS_TESTS_FAULT_HISTORY_CHECKER_H_
#define TAUPS_TESTS_FAULT_HISTORY_CHECKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tests/fault/fault_history.h"

namespace taups::fault {

struct CheckOptions {
  uint32_t num_shards = 1;
  uint64_t slots = 0;  // elements per shard; the table has num_shards * slots
  uint32_t num_workers = 1;
  enum class Mode { kAsync, kSsp, kSync } mode = Mode::kAsync;
  uint32_t staleness_bound = 0;  // ssp
};

// The table after the run, read once every driver ended.
struct FinalState {
  std::vector<float> values;       // num_shards * slots
  std::vector<uint64_t> versions;  // per shard
};

struct CheckReport {
  std::vector<std::string> violations;  // empty: the history is correct
  uint64_t pushes = 0;        // sent (per shard counts below are per shard)
  uint64_t acknowledged = 0;  // shard answers accepted (incl. duplicates)
  uint64_t duplicates = 0;    // answers marked duplicate
  uint64_t rejected = 0;      // shard answers not accepted
  uint64_t unresolved = 0;    // pushes without an OK answer (x shards)
  uint64_t restores = 0;      // shard restarts from a checkpoint
  uint64_t updates_lost = 0;  // acknowledged pushes a restore dropped
  uint64_t max_lost_in_one_restore = 0;
  uint64_t double_applies = 0;
  uint64_t pulls_checked = 0;
  // Jepsen counter: the final sum, and its bounds (in pushes' shares).
  double final_sum = 0, acknowledged_sum = 0, attempted_sum = 0;
  std::string Summary() const;
};

CheckReport CheckHistory(const History& history, const FinalState& final_state,
                         const CheckOptions& options);

}  // namespace taups::fault

#endif  // TAUPS_TESTS_FAULT_HISTORY_CHECKER_H_

// WorkerDrains: the workers an admin drains from a shard (psctl evict
// --drain). A draining worker may finish the step each sync / semi-sync
// table has open when the drain starts: it stays live there until that
// step closes, and its pushes for later steps are refused. Once every such
// table has closed its step (or was dropped, or is no longer a barrier
// table) the drain is finished and the store declares the worker dead.
// A drained worker stays here, out, until the shard restarts: its
// registrations and every later push are refused.
//
// Thread-safe (one internal mutex, a leaf: never held while calling out
// except to read a partition's open step and policy).
#ifndef TAUPS_SERVER_WORKER_DRAINS_H_
#define TAUPS_SERVER_WORKER_DRAINS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/partition.h"

namespace taups {

class WorkerDrains {
 public:
  // A barrier table the worker may still finish its open step on.
  struct Pending {
    std::string table;
    std::weak_ptr<Partition> partition;
    uint64_t step = 0;  // the step open when the drain started
  };

  explicit WorkerDrains(uint32_t shard_index) : shard_index_(shard_index) {}

  // Starts draining `worker` (again: the tables are replaced).
  void Start(uint32_t worker, std::vector<Pending> tables)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `worker` was drained or is draining (registration refused).
  bool Contains(uint32_t worker) const ABSL_LOCKS_EXCLUDED(mu_);
  // FAILED_PRECONDITION when `worker` may not register (it is drained).
  absl::Status CheckRegistration(uint32_t worker) const ABSL_LOCKS_EXCLUDED(mu_);
  // FAILED_PRECONDITION for a push by `worker` to `table` for step `clock`
  // past the one its drain lets it finish, or any push once it is out.
  absl::Status CheckPush(uint32_t worker, absl::string_view table,
                         uint64_t clock) const ABSL_LOCKS_EXCLUDED(mu_);
  // The draining workers whose every table has closed its step: marked
  // out and returned (each once).
  std::vector<uint32_t> Finish() ABSL_LOCKS_EXCLUDED(mu_);
  // Workers still draining, in id order, and the tables one waits on.
  std::vector<uint32_t> Draining() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::string> TablesOf(uint32_t worker) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Drain {
    std::vector<Pending> tables;
    bool out = false;
  };
  static bool Closed(const Pending& pending);

  const uint32_t shard_index_;
  std::atomic<size_t> draining_{0};  // a cheap test for Finish()
  mutable absl::Mutex mu_;
  std::map<uint32_t, Drain> drains_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_WORKER_DRAINS_H_

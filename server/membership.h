// Membership: which workers are alive, by lease.
//
// A worker registers (id, incarnation) and renews its lease by heartbeat.
// Expire() declares every worker whose lease ran out dead, logs a warning
// with its id and last-seen time, and counts it; a dead worker may register
// again and is then live once more ([S17]: a dead worker must not go
// unnoticed, and must not hang a barrier). No lease is longer than
// `max_lease`: a longer one asked for (or a longer default) is cut to it, and
// a heartbeat renews the lease granted, so a worker that goes silent is dead
// at most `max_lease` after its last heartbeat (the shard's edge refuses such
// a Register before it gets here: limits.h CheckLease).
//
// Thread-safe (one internal mutex; never held while calling out).
#ifndef TAUPS_SERVER_MEMBERSHIP_H_
#define TAUPS_SERVER_MEMBERSHIP_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/membership_view.h"

namespace taups {

struct WorkerStatus {
  uint32_t worker_id = 0;
  uint64_t incarnation = 0;
  bool live = false;
  bool left = false;  // said goodbye (Leave) rather than going silent
  bool evicted = false;  // declared dead by an admin (Evict), not by its lease
  // Known to the tables a restore brought back, not registered since
  // (AwaitReturning): not live, but barriers wait for it until last_seen +
  // lease.
  bool awaited = false;
  bool registered = false;  // registered with this shard process at least once
  absl::Time last_seen;
  absl::Duration lease;
};

class Membership {
 public:
  Membership(const Clock* clock, absl::Duration default_lease,
             absl::Duration max_lease = absl::Hours(1));

  struct Registration {
    absl::Duration lease;
    bool rejoined = false;  // it was known before (dead, or an older incarnation)
  };
  // Registers or re-registers; `lease` <= 0 means the default. The lease
  // granted is at most max_lease().
  Registration Register(uint32_t worker, uint64_t incarnation,
                        absl::Duration lease) ABSL_LOCKS_EXCLUDED(mu_);
  // Renews the lease. False when the worker is unknown, dead, or of another
  // incarnation: it must register again.
  bool Heartbeat(uint32_t worker, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);
  // A worker that finished: no longer live, recorded as left (not dead, not
  // a lease expiration). False when that incarnation is not registered.
  bool Leave(uint32_t worker, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);
  // An admin declares the worker dead now (psctl evict): no longer live,
  // recorded as evicted; it may register again. known: it had registered;
  // was_live: it held a lease.
  struct Eviction {
    bool known = false;
    bool was_live = false;
  };
  Eviction Evict(uint32_t worker) ABSL_LOCKS_EXCLUDED(mu_);
  // After a restore: `workers` (the ones the restored tables knew) are
  // awaited for `grace` from now: not live (a push still needs a new
  // Register), but a barrier counts them as it would live workers, so a step
  // cannot close with only the first worker back. Registering ends the
  // wait; so does `grace` running out (Expire returns the worker then) or
  // an Evict. Workers already known are left as they are.
  void AwaitReturning(const std::vector<uint32_t>& workers,
                      absl::Duration grace) ABSL_LOCKS_EXCLUDED(mu_);
  // Declares expired leases dead and ends the wait for awaited workers whose
  // grace ran out; returns those workers.
  std::vector<uint32_t> Expire() ABSL_LOCKS_EXCLUDED(mu_);

  bool IsLive(uint32_t worker) const ABSL_LOCKS_EXCLUDED(mu_);
  // The live and awaited workers and how many ever registered, all read
  // under one acquisition of the lock (awaited ones do not count as
  // registered until they do, so a barrier's start-up gate holds after a
  // restore as on a first start).
  MembershipView View() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<WorkerStatus> Workers() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t lease_expirations() const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Duration default_lease() const { return default_lease_; }
  absl::Duration max_lease() const { return max_lease_; }

 private:
  const Clock* const clock_;
  const absl::Duration default_lease_;
  const absl::Duration max_lease_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint32_t, WorkerStatus> workers_ ABSL_GUARDED_BY(mu_);
  uint64_t lease_expirations_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace taups

#endif  // TAUPS_SERVER_MEMBERSHIP_H_

// PullWaiters: the pulls parked on one partition because its consistency
// policy does not let them read yet (a sync step still open, an SSP bound),
// held as callbacks rather than as blocked threads.
//
// Each parked pull has a Wake, called exactly once, by whoever takes it
// out of the set: OK when the policy lets it read (the caller pulls
// again), DEADLINE_EXCEEDED when its deadline passed, CANCELLED when its
// caller went away (ParkedPull::Cancel), or the status the waiters were
// released with (a dropped table, a shard shutting down). The Take*
// methods only remove; the caller runs the Wakes after letting go of its
// own locks (RunAll). A Wake must be quick and must not call back into
// the partition: an edge posts its work to an executor.
//
// Thread-safe: one mutex guards the set; Wakes never run under it.
#ifndef TAUPS_SERVER_PULL_WAITERS_H_
#define TAUPS_SERVER_PULL_WAITERS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace taups {

class PullWaiters {
 public:
  using Wake = absl::AnyInvocable<void(absl::Status) &&>;

  // A Wake taken out of the set, with the status it is to be called with.
  struct Woken {
    Wake wake;
    absl::Status status;
  };
  static void RunAll(std::vector<Woken>& woken);

  PullWaiters() = default;
  PullWaiters(const PullWaiters&) = delete;
  PullWaiters& operator=(const PullWaiters&) = delete;

  // Parks a pull by `worker` at `clock`; returns its id (never 0).
  uint64_t Add(uint32_t worker, uint64_t clock, absl::Time deadline, Wake wake)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Those `ready(worker, clock)` lets read, with OK.
  std::vector<Woken> TakeReady(
      absl::FunctionRef<bool(uint32_t worker, uint64_t clock)> ready)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Those whose deadline is at or before `now`, with why(worker, clock).
  std::vector<Woken> TakeExpired(
      absl::Time now,
      absl::FunctionRef<absl::Status(uint32_t worker, uint64_t clock)> why)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The one parked under `id`, if it still is.
  std::optional<Woken> Take(uint64_t id, absl::Status status)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<Woken> TakeAll(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  // Parked now; read without the lock, for a cheap "anyone waiting?".
  size_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  struct Parked {
    uint32_t worker = 0;
    uint64_t clock = 0;
    absl::Time deadline;
    Wake wake;
  };
  // Removes `it` (and its deadline entry) into a Woken.
  Woken TakeLocked(std::map<uint64_t, Parked>::iterator it, absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Parked> parked_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<absl::Time, uint64_t>> by_deadline_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> size_{0};
};

// A parked pull as its caller holds it. Cancel() wakes it with CANCELLED
// if it is still parked (a no-op once it was woken, or when empty). Cheap
// to copy; it does not keep the partition alive.
class ParkedPull {
 public:
  ParkedPull() = default;
  ParkedPull(std::weak_ptr<PullWaiters> waiters, uint64_t id)
      : waiters_(std::move(waiters)), id_(id) {}
  // Whether this names a parked pull (rather than a pull that was answered).
  bool parked() const { return id_ != 0; }
  void Cancel() const;

 private:
  std::weak_ptr<PullWaiters> waiters_;
  uint64_t id_ = 0;
};

}  // namespace taups

#endif  // TAUPS_SERVER_PULL_WAITERS_H_

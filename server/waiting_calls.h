// WaitingCalls: how many pulls are waiting for their consistency policy
// (a sync step to close, an SSP bound to allow them) right now, per worker id
// and in all, with a limit on each. A pull that would wait past either
// limit is refused instead of becoming one more waiting call (parked
// without a thread at the gRPC edge, server/pull_waiters.h; blocking its
// caller's thread in process).
//
// Enter() takes a seat or says why not; the Seat gives it back when
// destroyed. Counts of refusals are kept for metrics.
//
// Thread-safe: one mutex guards the per-worker map (entered once per
// waiting pull, never on the non-waiting path).
#ifndef TAUPS_SERVER_WAITING_CALLS_H_
#define TAUPS_SERVER_WAITING_CALLS_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace taups {

class WaitingCalls {
 public:
  WaitingCalls(uint64_t max_per_worker, uint64_t max_total)
      : max_per_worker_(max_per_worker), max_total_(max_total) {}
  WaitingCalls(const WaitingCalls&) = delete;
  WaitingCalls& operator=(const WaitingCalls&) = delete;

  // Held by one waiting call; gives its seat back when destroyed.
  class Seat {
   public:
    Seat() = default;
    Seat(Seat&& other) noexcept;
    Seat& operator=(Seat&& other) noexcept;
    ~Seat() { Leave(); }

   private:
    friend class WaitingCalls;
    Seat(WaitingCalls* owner, uint32_t worker) : owner_(owner), worker_(worker) {}
    void Leave();
    WaitingCalls* owner_ = nullptr;
    uint32_t worker_ = 0;
  };

  // A seat for `worker`, or RESOURCE_EXHAUSTED naming the limit (and the
  // flag) it would pass; `table` is for the message.
  absl::StatusOr<Seat> Enter(uint32_t worker, absl::string_view table);

  struct Counts {
    uint64_t waiting = 0;             // seats held now
    uint64_t refused_per_worker = 0;  // past max_per_worker, so far
    uint64_t refused_total = 0;       // past max_total, so far
  };
  Counts counts() const;

 private:
  void Leave(uint32_t worker);

  const uint64_t max_per_worker_;
  const uint64_t max_total_;
  mutable absl::Mutex mu_;
  // worker -> its waiting calls (entries at 0 are erased).
  absl::flat_hash_map<uint32_t, uint64_t> per_worker_ ABSL_GUARDED_BY(mu_);
  Counts counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_WAITING_CALLS_H_

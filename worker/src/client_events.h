// What a client rode through since it opened, for a worker's summary and
// its metrics: the shard restarts it saw (a shard answering with a new
// incarnation), the attempts it made again after a transient failure, and
// the pushes it redid on a shard that had forgotten the worker (restarted,
// or let its lease run out) and refused them.
//
// The updates a restart lost are counted as this worker saw them: per
// table, the last version it saw from the shard before the restart minus the
// version the restored shard first answered (LostUpdates).
//
// RetryCounter is thread-safe (one mutex; a retry is rare next to a call).
// ClientEvents is a plain value.
#ifndef TAUPS_WORKER_SRC_CLIENT_EVENTS_H_
#define TAUPS_WORKER_SRC_CLIENT_EVENTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/synchronization/mutex.h"
#include "common/rpc.h"

namespace taups {

class Client;

// Attempts of one RPC sent again after failing with one status code
// (UNAVAILABLE: the shard could not be reached; DEADLINE_EXCEEDED: a push
// resent after its deadline passed).
struct RetryCount {
  Rpc rpc = Rpc::kPullDense;
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  uint64_t retries = 0;
};

// "unavailable", "deadline_exceeded": a retry's reason as a metric label.
inline std::string RetryReasonName(absl::StatusCode code) {
  return absl::AsciiStrToLower(absl::StatusCodeToString(code));
}

struct ClientEvents {
  // Indexed by shard: how many times its incarnation changed.
  std::vector<uint64_t> shard_restarts;
  // Indexed by shard: updates its restarts lost, as this worker saw them
  // (summed over tables and restarts: version before - version after).
  std::vector<uint64_t> updates_lost;
  // One entry per (rpc, code) retried at least once, in (rpc, code) order.
  std::vector<RetryCount> retries;
  // Indexed by shard: pushes whose part for that shard was refused because
  // the shard did not know the worker, and sent again (registered again
  // first) with a fresh seq; at most once per push and shard.
  std::vector<uint64_t> push_redos;
  // Indexed by shard: heartbeats that failed (each is one attempt; the next
  // round sends a fresh one), so a shard that is down or hung shows here
  // before any push needs it.
  std::vector<uint64_t> heartbeat_failures;

  uint64_t total_restarts() const {
    uint64_t total = 0;
    for (uint64_t n : shard_restarts) total += n;
    return total;
  }
  uint64_t total_updates_lost() const {
    uint64_t total = 0;
    for (uint64_t n : updates_lost) total += n;
    return total;
  }
  uint64_t total_redos() const {
    uint64_t total = 0;
    for (uint64_t n : push_redos) total += n;
    return total;
  }
  uint64_t total_retries() const {
    uint64_t total = 0;
    for (const RetryCount& r : retries) total += r.retries;
    return total;
  }
};

// Counts the retries of every call whose RetryPolicy points at it.
class RetryCounter {
 public:
  void Count(Rpc rpc, absl::StatusCode code) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++counts_[{rpc, code}];
  }
  std::vector<RetryCount> Counts() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<RetryCount> out;
    for (const auto& [key, n] : counts_) out.push_back({key.first, key.second, n});
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<Rpc, absl::StatusCode>, uint64_t> counts_ ABSL_GUARDED_BY(mu_);
};

// The events of `client` when it is this library's own client (made by
// Client::Connect, or a ClientCore); nullopt for any other implementation.
std::optional<ClientEvents> EventsOf(const Client& client);

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_CLIENT_EVENTS_H_

// AnswersInFlight: a shard-wide bound on the bytes of pull answers that
// have been made and not yet let go by gRPC.
//
// An answer stays in memory until the caller has read it. A caller that
// reads slowly, or stops reading (a stalled process, a hostile client with
// many streams open), would otherwise let a shard pile up answers without
// bound: each one at most max_pull_bytes, but with no bound on how many.
// Large dense answers are sent from the table's own memory, which costs
// nothing until a push writes a block they still hold and the table moves
// to a copy (server/lent_values.h); so those are counted too, at their full
// size, since that is what they may come to cost.
//
// An answer is admitted while the bytes in flight, itself included, stay
// within the limit, or when nothing else is in flight (so an answer alone
// is never refused). One that is not admitted is refused UNAVAILABLE: the
// condition passes as the readers catch up, and the client library retries
// UNAVAILABLE with backoff (ClientOptions::retry_budget). The refusal names
// the bytes in flight, the limit and its flag.
//
// Thread-safety: thread-safe (lock-free counters). An Admission may outlive
// the AnswersInFlight that made it (it keeps it alive) and be dropped on
// any thread.
#ifndef TAUPS_SERVER_ANSWERS_IN_FLIGHT_H_
#define TAUPS_SERVER_ANSWERS_IN_FLIGHT_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace taups {

class AnswersInFlight : public std::enable_shared_from_this<AnswersInFlight> {
 public:
  // Bytes in flight held by one admitted answer; given back when the last
  // copy of the pointer goes.
  class Admission {
   public:
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    ~Admission();
    uint64_t bytes() const { return bytes_; }

   private:
    friend class AnswersInFlight;
    Admission(std::shared_ptr<AnswersInFlight> owner, uint64_t bytes)
        : owner_(std::move(owner)), bytes_(bytes) {}
    const std::shared_ptr<AnswersInFlight> owner_;
    const uint64_t bytes_;
  };

  // `limit_bytes` > 0.
  static std::shared_ptr<AnswersInFlight> Create(uint64_t limit_bytes);
  AnswersInFlight(const AnswersInFlight&) = delete;
  AnswersInFlight& operator=(const AnswersInFlight&) = delete;

  // Admits an answer of `bytes`, or UNAVAILABLE (see the top of this file).
  absl::StatusOr<std::shared_ptr<const Admission>> Admit(uint64_t bytes);

  uint64_t limit_bytes() const { return limit_bytes_; }
  // Bytes of the admitted answers not yet let go, and answers refused since
  // the start (for metrics and tests).
  uint64_t bytes_in_flight() const {
    return in_flight_.load(std::memory_order_relaxed);
  }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  explicit AnswersInFlight(uint64_t limit_bytes) : limit_bytes_(limit_bytes) {}
  void Release(uint64_t bytes);

  const uint64_t limit_bytes_;
  std::atomic<uint64_t> in_flight_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace taups

#endif  // TAUPS_SERVER_ANSWERS_IN_FLIGHT_H_

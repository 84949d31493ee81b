// FaultInjectingTransport: a ShardTransport decorator for tests that makes
// the network misbehave, reproducibly from a seed:
//   duplicate       the request is delivered a second time (a copy, sent
//                   after a random delay up to max_delay; its answer is
//                   thrown away), as a network or proxy that resends does;
//   delay           the request is held back a random time up to max_delay
//                   before it goes on, so calls overtake each other (slices
//                   of one push arrive in any order, a duplicate before or
//                   after the original);
//   lose_answer     the request is delivered and served, but its answer is
//                   lost: the caller gets DEADLINE_EXCEEDED for a push (the
//                   client resends it with the same seq) and UNAVAILABLE
//                   for any other call (retried as a connection failure).
// Each fault is drawn per call with its probability. The draws come from
// one seeded generator, so the faults a given call order meets are fixed;
// with several threads the order itself varies.
//
// Thread-safe. Delayed sends run on the transport's own timer thread; the
// destructor waits until every copy it sent has been answered. The inner
// transport must outlive it (it owns it).
#ifndef TAUPS_WORKER_SRC_FAULT_INJECTING_TRANSPORT_H_
#define TAUPS_WORKER_SRC_FAULT_INJECTING_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <random>

#include "absl/synchronization/mutex.h"
#include "worker/src/delayed_runner.h"
#include "worker/src/shard_transport.h"

namespace taups {

struct TransportFaults {
  uint64_t seed = 1;
  double duplicate = 0.0;    // probabilities, each in [0, 1]
  double delay = 0.0;
  double lose_answer = 0.0;
  absl::Duration max_delay = absl::Milliseconds(2);
};

// What a FaultInjectingTransport did, for a test to check the faults
// really happened.
struct FaultCounts {
  uint64_t calls = 0;
  uint64_t duplicated = 0;
  uint64_t delayed = 0;
  uint64_t answers_lost = 0;
};

class FaultInjectingTransport final : public ShardTransport {
 public:
  FaultInjectingTransport(std::unique_ptr<ShardTransport> inner,
                          const TransportFaults& faults);
  ~FaultInjectingTransport() override;

  void Send(Rpc rpc, absl::Duration timeout,
            const google::protobuf::Message& request,
            google::protobuf::Message* response, Done done) override;

  FaultCounts counts() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The faults drawn for one call.
  struct Draw {
    bool duplicate = false;
    absl::Duration duplicate_after;
    bool delay = false;
    absl::Duration delay_for;
    bool lose_answer = false;
  };
  Draw DrawFaults() ABSL_LOCKS_EXCLUDED(mu_);
  // Sends `copy` (of a caller's request); its answer lands in `answer`
  // (an empty response message), which nobody reads.
  void SendCopy(Rpc rpc, absl::Duration timeout,
                std::shared_ptr<const google::protobuf::Message> copy,
                std::shared_ptr<google::protobuf::Message> answer)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Forward(Rpc rpc, absl::Duration timeout,
               const google::protobuf::Message& request,
               google::protobuf::Message* response, bool lose_answer,
               Done done) ABSL_LOCKS_EXCLUDED(mu_);
  void BeginOwnCall() ABSL_LOCKS_EXCLUDED(mu_);
  void EndOwnCall() ABSL_LOCKS_EXCLUDED(mu_);

  const std::unique_ptr<ShardTransport> inner_;
  const TransportFaults faults_;
  mutable absl::Mutex mu_;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  FaultCounts counts_ ABSL_GUARDED_BY(mu_);
  // Copies and held-back calls not answered yet by the inner transport.
  int64_t own_calls_ ABSL_GUARDED_BY(mu_) = 0;
  // Declared last: its thread stops first, running what is still queued
  // (cancelled) before the members above go.
  DelayedRunner timer_;
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_FAULT_INJECTING_TRANSPORT_H_

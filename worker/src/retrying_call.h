// The client's call plumbing, over any ShardTransport: one unary call
// retried with exponential backoff while the shard answers UNAVAILABLE, and
// a join that completes when all calls of a fan-out have.
//
// Internal to the client library.
#ifndef TAUPS_WORKER_SRC_RETRYING_CALL_H_
#define TAUPS_WORKER_SRC_RETRYING_CALL_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "worker/src/client_events.h"
#include "worker/src/delayed_runner.h"
#include "worker/src/shard_transport.h"

namespace taups {

struct RetryPolicy {
  int max_attempts = 8;
  // Transient failures are retried for at least max_attempts attempts and
  // until this long after the first attempt.
  absl::Duration budget = absl::ZeroDuration();
  absl::Duration call_timeout = absl::Seconds(30);
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(2);
  // When set, counts every attempt made again (must outlive the calls).
  RetryCounter* retries = nullptr;

  // Delay before attempt number `attempt` (1-based; attempt 0 has none):
  // initial * 2^(attempt-1), capped, with up to 25% jitter from `salt`.
  absl::Duration Backoff(int attempt, uint64_t salt) const;
};

// Calls that may be resent when their deadline passed without an answer:
// pushes, which a shard applies at most once per (worker, incarnation, seq)
// and answers again when it sees one twice. Pulls are not: a pull that
// waits for its policy (a sync step) waits at most its deadline by design.
template <typename Request>
inline constexpr bool kResendOnDeadline = false;
template <>
inline constexpr bool kResendOnDeadline<v1::PushDenseRequest> = true;
template <>
inline constexpr bool kResendOnDeadline<v1::PushSparseRequest> = true;
template <>
inline constexpr bool kResendOnDeadline<DensePushCall> = true;

// One logical unary call: attempts it, and on UNAVAILABLE (or, for pushes,
// DEADLINE_EXCEEDED; see kResendOnDeadline) waits a backoff on `runner` and
// tries again, until it succeeds, fails otherwise, or runs out of attempts.
// `done` runs exactly once with the final status, the response and the
// request (both valid only during the callback; the request may be moved
// out, to send it again as another call). A resend is the same request: a
// push keeps its seq, so the shard answers it once. DensePushCall,
// DensePullCall and SparsePullCall go through the transport's
// SendPushDense / PullDenseInto / PullSparseInto (their tensor borrowed or
// landed, by every attempt); every other request through Send.
template <typename Request>
class RetryingCall
    : public std::enable_shared_from_this<RetryingCall<Request>> {
 public:
  using Response = ResponseOf<Request>;
  using Done = std::function<void(const absl::Status&, Response*, Request*)>;

  static void Start(ShardTransport* transport, DelayedRunner* runner,
                    const RetryPolicy& policy, Request request, Done done) {
    auto call = std::shared_ptr<RetryingCall>(new RetryingCall(
        transport, runner, policy, std::move(request), std::move(done)));
    call->Attempt();
  }

 private:
  RetryingCall(ShardTransport* transport, DelayedRunner* runner,
               const RetryPolicy& policy, Request request, Done done)
      : transport_(transport),
        runner_(runner),
        policy_(policy),
        request_(std::move(request)),
        done_(std::move(done)) {}

  void Attempt() {
    if (attempts_ == 0) first_attempt_ = absl::Now();
    ++attempts_;
    response_.Clear();
    auto self = this->shared_from_this();
    ShardTransport::Done done = [self](absl::Status status) {
      self->OnDone(std::move(status));
    };
    // The calls whose tensor travels beside the message (shard_transport.h).
    if constexpr (std::is_same_v<Request, DensePushCall>) {
      transport_->SendPushDense(policy_.call_timeout, request_.header,
                                request_.gradient, &response_, std::move(done));
    } else if constexpr (std::is_same_v<Request, DensePullCall>) {
      transport_->PullDenseInto(policy_.call_timeout, request_.header,
                                &response_, request_.values, &request_.landed,
                                std::move(done));
    } else if constexpr (std::is_same_v<Request, SparsePullCall>) {
      transport_->PullSparseInto(policy_.call_timeout, request_.header,
                                 &response_, request_.values_size,
                                 request_.land, &request_.landed,
                                 std::move(done));
    } else {
      transport_->Send(RpcOf<Request>::kRpc, policy_.call_timeout, request_,
                       &response_, std::move(done));
    }
  }

  void OnDone(absl::Status status) {
    const bool transient =
        absl::IsUnavailable(status) ||
        (kResendOnDeadline<Request> && absl::IsDeadlineExceeded(status));
    if (transient && (attempts_ < policy_.max_attempts ||
                      absl::Now() - first_attempt_ < policy_.budget)) {
      if (policy_.retries != nullptr) {
        policy_.retries->Count(RpcOf<Request>::kRpc, status.code());
      }
      auto self = this->shared_from_this();
      runner_->RunAfter(
          policy_.Backoff(attempts_, reinterpret_cast<uintptr_t>(this)),
          [self, status](bool cancelled) {
            if (cancelled) {
              self->done_(status, &self->response_, &self->request_);
            } else {
              self->Attempt();
            }
          });
      return;
    }
    done_(status, &response_, &request_);
  }

  ShardTransport* const transport_;
  DelayedRunner* const runner_;
  const RetryPolicy policy_;
  Request request_;
  Response response_;
  Done done_;
  int attempts_ = 0;
  absl::Time first_attempt_;
};

template <typename Request>
void StartCall(ShardTransport* transport, DelayedRunner* runner,
               const RetryPolicy& policy, Request request,
               typename RetryingCall<Request>::Done done) {
  RetryingCall<Request>::Start(transport, runner, policy, std::move(request),
                               std::move(done));
}

// Counts down the calls of one fan-out; when the last reports, runs
// `on_done` once with the first error seen (or OK). Thread-safe.
class FanIn {
 public:
  FanIn(size_t calls, std::function<void(absl::Status)> on_done)
      : remaining_(calls), on_done_(std::move(on_done)) {}

  void Report(const absl::Status& status) {
    if (!status.ok()) {
      absl::MutexLock lock(&mu_);
      if (first_error_.ok()) first_error_ = status;
    }
    if (remaining_.fetch_sub(1) == 1) {
      absl::Status result;
      {
        absl::MutexLock lock(&mu_);
        result = first_error_;
      }
      on_done_(result);
    }
  }

 private:
  std::atomic<size_t> remaining_;
  std::function<void(absl::Status)> on_done_;
  absl::Mutex mu_;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_RETRYING_CALL_H_

// The client's RPC plumbing: channels to a shard, one unary call retried with
// exponential backoff while the shard answers UNAVAILABLE, and a join that
// completes when all calls of a fan-out have.
//
// Internal to the client library; includes gRPC headers, so keep it out of
// public headers.
#ifndef TAUPS_WORKER_SRC_RETRYING_CALL_H_
#define TAUPS_WORKER_SRC_RETRYING_CALL_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "ps.grpc.pb.h"
#include "wire_convert.h"
#include "worker/src/delayed_runner.h"

namespace taups {

using Stub = v1::ParameterServer::Stub;

// Several channels (each its own TCP connection) to one shard; calls are
// spread round-robin. Thread-safe.
class ShardChannels {
 public:
  explicit ShardChannels(std::vector<std::unique_ptr<Stub>> stubs)
      : stubs_(std::move(stubs)) {}
  Stub* Pick() { return stubs_[next_.fetch_add(1) % stubs_.size()].get(); }

 private:
  std::vector<std::unique_ptr<Stub>> stubs_;
  std::atomic<uint32_t> next_{0};
};

struct RetryPolicy {
  int max_attempts = 8;
  // Transient failures are retried for at least max_attempts attempts and
  // until this long after the first attempt.
  absl::Duration budget = absl::ZeroDuration();
  absl::Duration call_timeout = absl::Seconds(30);
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(2);

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

// One logical unary call: attempts it, and on UNAVAILABLE (or, for pushes,
// DEADLINE_EXCEEDED; see kResendOnDeadline) waits a backoff on
// `runner` and tries again on a (possibly different) channel, until it
// succeeds, fails otherwise, or runs out of attempts. `done` runs exactly once
// with the final status and the response (valid only during the callback).
//
// Invoke: void(Stub*, grpc::ClientContext*, const Request*, Response*,
//              std::function<void(grpc::Status)>)
template <typename Request, typename Response, typename Invoke>
class RetryingCall
    : public std::enable_shared_from_this<
          RetryingCall<Request, Response, Invoke>> {
 public:
  using Done = std::function<void(const absl::Status&, Response*)>;

  static void Start(ShardChannels* channels, DelayedRunner* runner,
                    const RetryPolicy& policy, Request request, Invoke invoke,
                    Done done) {
    auto call = std::shared_ptr<RetryingCall>(
        new RetryingCall(channels, runner, policy, std::move(request),
                         std::move(invoke), std::move(done)));
    call->Attempt();
  }

 private:
  RetryingCall(ShardChannels* channels, DelayedRunner* runner,
               const RetryPolicy& policy, Request request, Invoke invoke,
               Done done)
      : channels_(channels),
        runner_(runner),
        policy_(policy),
        request_(std::move(request)),
        invoke_(std::move(invoke)),
        done_(std::move(done)) {}

  void Attempt() {
    if (attempts_ == 0) first_attempt_ = absl::Now();
    ++attempts_;
    context_ = std::make_unique<grpc::ClientContext>();
    context_->set_deadline(absl::ToChronoTime(absl::Now() + policy_.call_timeout));
    response_.Clear();
    auto self = this->shared_from_this();
    invoke_(channels_->Pick(), context_.get(), &request_, &response_,
            [self](grpc::Status status) { self->OnDone(std::move(status)); });
  }

  void OnDone(grpc::Status status) {
    const bool transient =
        status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        (kResendOnDeadline<Request> &&
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
    if (transient && (attempts_ < policy_.max_attempts ||
                      absl::Now() - first_attempt_ < policy_.budget)) {
      auto self = this->shared_from_this();
      runner_->RunAfter(
          policy_.Backoff(attempts_, reinterpret_cast<uintptr_t>(this)),
          [self, status](bool cancelled) {
            if (cancelled) {
              self->done_(FromGrpcStatus(status), &self->response_);
            } else {
              self->Attempt();
            }
          });
      return;
    }
    done_(FromGrpcStatus(status), &response_);
  }

  ShardChannels* const channels_;
  DelayedRunner* const runner_;
  const RetryPolicy policy_;
  Request request_;
  Response response_;
  Invoke invoke_;
  Done done_;
  std::unique_ptr<grpc::ClientContext> context_;
  int attempts_ = 0;
  absl::Time first_attempt_;
};

template <typename Request, typename Response, typename Invoke>
void StartCall(ShardChannels* channels, DelayedRunner* runner,
               const RetryPolicy& policy, Request request, Invoke invoke,
               std::function<void(const absl::Status&, Response*)> done) {
  RetryingCall<Request, Response, Invoke>::Start(
      channels, runner, policy, std::move(request), std::move(invoke),
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

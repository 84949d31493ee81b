// DensePullFlood: N PullDense calls of one table in flight at once through
// a stock stub's callback API (no client thread per call), each with its
// own context and no deadline, for tests and benchmarks that park pulls on
// a real shard. The destructor cancels what is still waiting and waits
// for every answer.
//
// Thread-safe: answers arrive on gRPC's threads; one mutex guards them.
#ifndef TAUPS_TESTS_DENSE_PULL_FLOOD_H_
#define TAUPS_TESTS_DENSE_PULL_FLOOD_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "ps.grpc.pb.h"

namespace taups {

class DensePullFlood {
 public:
  // `n` pulls of `count` floats from offset 0 of `table` by `worker` at
  // `clock`.
  DensePullFlood(v1::ParameterServer::Stub* stub, const std::string& table,
                 uint64_t count, uint32_t worker, uint64_t clock, int n)
      : calls_(n) {
    for (auto& call : calls_) {
      call = std::make_unique<Call>();
      call->request.set_table(table);
      call->request.set_count(count);
      call->request.set_worker_id(worker);
      call->request.set_clock(clock);
      Call* c = call.get();
      stub->async()->PullDense(&c->context, &c->request, &c->response,
                               [this, c](grpc::Status status) {
                                 absl::MutexLock lock(&mu_);
                                 c->status = std::move(status);
                                 c->done = true;
                                 ++done_;
                               });
    }
  }
  DensePullFlood(const DensePullFlood&) = delete;
  DensePullFlood& operator=(const DensePullFlood&) = delete;
  ~DensePullFlood() {
    CancelAll();
    AllDone(absl::InfiniteDuration());
  }

  void CancelAll() {
    for (auto& call : calls_) call->context.TryCancel();
  }
  // True once every call was answered; false if `timeout` passed first.
  bool AllDone(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto all = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return done_ == static_cast<int>(calls_.size());
    };
    return mu_.AwaitWithTimeout(absl::Condition(&all), timeout);
  }
  int Done() {
    absl::MutexLock lock(&mu_);
    return done_;
  }
  // Calls answered with `code` so far.
  int Count(grpc::StatusCode code) {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (auto& call : calls_) {
      n += call->done && call->status.error_code() == code ? 1 : 0;
    }
    return n;
  }
  // Every call answered OK, of `step`, holding `count` floats, each of
  // them `value`.
  bool AllAnswered(uint64_t step, float value, uint64_t count) {
    return AnsweredWith(value, count, step) == static_cast<int>(calls_.size());
  }
  // Calls answered OK holding `count` floats, each of them `value` (and of
  // `step`, when given).
  int AnsweredWith(float value, uint64_t count,
                   std::optional<uint64_t> step = std::nullopt) {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (auto& call : calls_) {
      const std::string& bytes = call->response.values();
      if (!call->done || !call->status.ok() ||
          (step.has_value() && call->response.step() != *step) ||
          bytes.size() != count * sizeof(float)) {
        continue;
      }
      bool all = true;
      for (uint64_t i = 0; i < count && all; ++i) {
        float got = 0;
        std::memcpy(&got, bytes.data() + i * sizeof(float), sizeof(float));
        all = got == value;
      }
      n += all ? 1 : 0;
    }
    return n;
  }

 private:
  struct Call {
    grpc::ClientContext context;
    v1::PullDenseRequest request;
    v1::PullDenseResponse response;
    grpc::Status status;
    bool done = false;
  };
  std::vector<std::unique_ptr<Call>> calls_;
  absl::Mutex mu_;
  int done_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace taups

#endif  // TAUPS_TESTS_DENSE_PULL_FLOOD_H_

#include "bench/lockstep_runner.h"

namespace taups::bench {

LockstepRunner::LockstepRunner(int lanes) : lanes_(lanes < 1 ? 1 : lanes) {
  {
    absl::MutexLock lock(&mu_);
    results_.resize(lanes_);
  }
  for (int lane = 1; lane < lanes_; ++lane) {
    threads_.emplace_back([this, lane] { Serve(lane); });
  }
}

LockstepRunner::~LockstepRunner() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

absl::Status LockstepRunner::Run(
    const std::function<absl::Status(int lane)>& op) {
  {
    absl::MutexLock lock(&mu_);
    op_ = &op;
    running_ = lanes_ - 1;
    ++generation_;
  }
  absl::Status first = op(0);
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* running) { return *running == 0; }, &running_));
  op_ = nullptr;
  for (int lane = 1; lane < lanes_; ++lane) {
    if (first.ok()) first = results_[lane];
  }
  return first;
}

void LockstepRunner::Serve(int lane) {
  uint64_t seen = 0;
  while (true) {
    const std::function<absl::Status(int)>* op = nullptr;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || generation_ != seen;
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      seen = generation_;
      op = op_;
    }
    absl::Status status = (*op)(lane);
    absl::MutexLock lock(&mu_);
    results_[lane] = std::move(status);
    --running_;
  }
}

}  // namespace taups::bench

#include "server/call_executor.h"

#include <utility>

namespace taups {

CallExecutor::CallExecutor(int threads) {
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

CallExecutor::~CallExecutor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void CallExecutor::Post(absl::AnyInvocable<void() &&> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

void CallExecutor::Run() {
  while (true) {
    absl::AnyInvocable<void() &&> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](CallExecutor* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return self->stopping_ || !self->tasks_.empty();
          },
          this));
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    std::move(task)();
  }
}

}  // namespace taups

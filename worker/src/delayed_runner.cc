#include "worker/src/delayed_runner.h"

#include <vector>

namespace taups {

DelayedRunner::DelayedRunner() : thread_([this] { Loop(); }) {}

DelayedRunner::~DelayedRunner() {
  std::multimap<absl::Time, Task> left;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
  {
    absl::MutexLock lock(&mu_);
    left.swap(tasks_);
  }
  for (auto& [when, task] : left) task(/*cancelled=*/true);
}

void DelayedRunner::RunAfter(absl::Duration delay, Task task) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      tasks_.emplace(absl::Now() + delay, std::move(task));
      ++generation_;
      return;
    }
  }
  task(/*cancelled=*/true);
}

void DelayedRunner::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time now = absl::Now();
    std::vector<Task> due;
    while (!tasks_.empty() && tasks_.begin()->first <= now) {
      due.push_back(std::move(tasks_.begin()->second));
      tasks_.erase(tasks_.begin());
    }
    if (!due.empty()) {
      mu_.Unlock();
      for (Task& task : due) task(/*cancelled=*/false);
      mu_.Lock();
      continue;
    }
    // Sleep until the earliest task is due (with none, without a deadline),
    // or a new task (possibly earlier) arrives, or we are stopping.
    const uint64_t seen = generation_;
    auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || generation_ != seen;
    };
    if (tasks_.empty()) {
      mu_.Await(absl::Condition(&changed));
    } else {
      mu_.AwaitWithDeadline(absl::Condition(&changed), tasks_.begin()->first);
    }
    wakeups_.fetch_add(1);
  }
}

}  // namespace taups

#include "common/task_pool.h"

#include <algorithm>
#include <atomic>

namespace taups {

// One Run call, on its caller's stack. Lives until the caller has taken
// back its unclaimed queue entries and no helper works on it any more.
struct TaskPool::Job {
  Job(size_t tasks, absl::FunctionRef<void(size_t)> fn) : tasks(tasks), fn(fn) {}
  const size_t tasks;
  const absl::FunctionRef<void(size_t)> fn;
  std::atomic<size_t> next{0};
  int working = 0;  // helpers inside Work(*this); guarded by the pool's mu_
  absl::CondVar idle;
};

TaskPool::TaskPool(int threads) {
  const int helpers = std::max(threads, 1) - 1;
  helpers_.reserve(helpers);
  for (int i = 0; i < helpers; ++i) helpers_.emplace_back([this] { HelperLoop(); });
}

TaskPool::~TaskPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.SignalAll();
  }
  for (std::thread& helper : helpers_) helper.join();
}

void TaskPool::Work(Job& job) {
  for (size_t i = job.next.fetch_add(1, std::memory_order_relaxed);
       i < job.tasks; i = job.next.fetch_add(1, std::memory_order_relaxed)) {
    job.fn(i);
  }
}

void TaskPool::HelperLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    while (!stopping_ && queue_.empty()) wake_.Wait(&mu_);
    if (stopping_) return;
    Job* job = queue_.front();
    queue_.pop_front();
    ++job->working;
    mu_.Unlock();
    Work(*job);
    mu_.Lock();
    if (--job->working == 0) job->idle.Signal();
  }
}

void TaskPool::Run(size_t tasks, absl::FunctionRef<void(size_t)> fn) {
  const size_t wanted = std::min(helpers_.size(), tasks > 0 ? tasks - 1 : 0);
  if (wanted == 0) {
    for (size_t i = 0; i < tasks; ++i) fn(i);
    return;
  }
  Job job(tasks, fn);
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < wanted; ++i) queue_.push_back(&job);
    if (wanted == 1) {
      wake_.Signal();
    } else {
      wake_.SignalAll();
    }
  }
  Work(job);
  absl::MutexLock lock(&mu_);
  // Entries no helper has taken yet: every task is claimed, so they would
  // find nothing to do.
  queue_.erase(std::remove(queue_.begin(), queue_.end(), &job), queue_.end());
  while (job.working > 0) job.idle.Wait(&mu_);
}

int TaskPool::AutoThreads() {
  const unsigned hardware = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(hardware, 1u, 4u));
}

namespace {

absl::Mutex shared_mu(absl::kConstInit);
int shared_threads ABSL_GUARDED_BY(shared_mu) = 0;
bool shared_made ABSL_GUARDED_BY(shared_mu) = false;

}  // namespace

TaskPool& TaskPool::Shared() {
  static TaskPool* const pool = [] {
    absl::MutexLock lock(&shared_mu);
    shared_made = true;
    return new TaskPool(shared_threads > 0 ? shared_threads : AutoThreads());
  }();
  return *pool;
}

bool TaskPool::SetSharedThreads(int threads) {
  absl::MutexLock lock(&shared_mu);
  if (shared_made) return false;
  shared_threads = std::max(threads, 0);
  return true;
}

}  // namespace taups

// DelayedRunner: runs callbacks after a delay on one background thread.
// The client uses it to re-issue RPCs after a backoff without blocking gRPC's
// callback threads.
//
// Thread-safe. The destructor runs nothing further: pending callbacks are
// run immediately with `cancelled == true` so their owners can finish.
// With nothing pending the thread sleeps until RunAfter or the destructor
// wakes it (no periodic wake-up: a process holding many clients, such as
// the load generator with 256, would otherwise pay one per client per
// second).
#ifndef TAUPS_WORKER_SRC_DELAYED_RUNNER_H_
#define TAUPS_WORKER_SRC_DELAYED_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace taups {

class DelayedRunner {
 public:
  using Task = std::function<void(bool cancelled)>;

  DelayedRunner();
  ~DelayedRunner();
  DelayedRunner(const DelayedRunner&) = delete;
  DelayedRunner& operator=(const DelayedRunner&) = delete;

  void RunAfter(absl::Duration delay, Task task) ABSL_LOCKS_EXCLUDED(mu_);

  // Tests: how many times the thread has woken from a wait.
  uint64_t WakeupsForTest() const { return wakeups_.load(); }

 private:
  void Loop();

  absl::Mutex mu_;
  std::multimap<absl::Time, Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // bumped by RunAfter
  std::atomic<uint64_t> wakeups_{0};
  std::thread thread_;
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_DELAYED_RUNNER_H_

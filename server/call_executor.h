// CallExecutor: a few threads that run short tasks posted from anywhere —
// the gRPC edge's work for pulls woken from their parking (read the
// values, encode, Finish), so that none of it runs on the thread that
// applied the change that woke them, nor under its locks.
//
// Tasks run in the order posted when there is one thread, concurrently
// otherwise. The destructor runs what was posted, then joins.
//
// Thread-safe.
#ifndef TAUPS_SERVER_CALL_EXECUTOR_H_
#define TAUPS_SERVER_CALL_EXECUTOR_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace taups {

class CallExecutor {
 public:
  explicit CallExecutor(int threads);
  CallExecutor(const CallExecutor&) = delete;
  CallExecutor& operator=(const CallExecutor&) = delete;
  ~CallExecutor();

  void Post(absl::AnyInvocable<void() &&> task) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_CALL_EXECUTOR_H_

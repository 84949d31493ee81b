// LockstepRunner: runs one operation on N lanes at once and returns when all
// of them are done, for benchmarks of N clients calling together. Lane 0
// runs on the calling thread, lanes 1..N-1 on threads the runner keeps (no
// thread is started per run), so tauPS and its raw reference pay the same
// small cost per run. Not common/task_pool.h: its caller takes tasks too
// and may run two of them one after the other before a helper wakes,
// which would serialize clients that are meant to call together.
//
// Thread-compatible: one Run at a time.
#ifndef TAUPS_BENCH_LOCKSTEP_RUNNER_H_
#define TAUPS_BENCH_LOCKSTEP_RUNNER_H_

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace taups::bench {

class LockstepRunner {
 public:
  explicit LockstepRunner(int lanes);  // lanes >= 1
  ~LockstepRunner();
  LockstepRunner(const LockstepRunner&) = delete;
  LockstepRunner& operator=(const LockstepRunner&) = delete;

  int lanes() const { return lanes_; }
  // op(lane) on every lane at once; the first lane's error, if any.
  absl::Status Run(const std::function<absl::Status(int lane)>& op);

 private:
  void Serve(int lane);

  const int lanes_;
  absl::Mutex mu_;
  const std::function<absl::Status(int)>* op_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<absl::Status> results_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace taups::bench

#endif  // TAUPS_BENCH_LOCKSTEP_RUNNER_H_

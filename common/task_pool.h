// TaskPool: a small fixed set of threads that share the work of one large
// call with the thread that made it.
//
// Users: a shard's apply, finite check and pull of a large request
// (DenseTable, SparseTable: the partition's ordered path still decides when
// a push applies and holds its lock for the whole of it; the pool only
// decides which cores touch which elements, and every optimizer rule is
// element-wise, so the bits are those of one serial call), and the client's
// sparse push, whose shards' parts are grouped and merged at once
// (ClientCore::PushSparse).
//
// Run(tasks, fn) calls fn(i) once for each i < tasks and returns when all
// have finished. The caller takes tasks itself, so a call always makes
// progress even when every helper is busy with another caller's tasks; the
// helpers it did not need are taken back before it returns. No thread is
// made per call: helpers are made once, in the constructor.
//
// Thread-safe: any number of threads may call Run at once (several
// partitions apply at the same time); fn must be safe to call concurrently
// for different i. fn must not call Run on the same pool.
#ifndef TAUPS_COMMON_TASK_POOL_H_
#define TAUPS_COMMON_TASK_POOL_H_

#include <cstddef>
#include <deque>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace taups {

class TaskPool {
 public:
  // `threads` cores share a call (the caller counts as one): threads - 1
  // helpers are started. Values below 1 mean 1 (no helper; Run is serial).
  explicit TaskPool(int threads);
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;
  ~TaskPool();  // joins the helpers; no Run may be in flight

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

  void Run(size_t tasks, absl::FunctionRef<void(size_t)> fn);

  // min(hardware threads, 4): what --apply_threads=0 means.
  static int AutoThreads();
  // The shards' pool (one per shard process; shards started in one process
  // share it), made on first use with the size set by SetSharedThreads, or
  // AutoThreads() when never set. Clients do not use it (ClientPool).
  static TaskPool& Shared();
  // Sizes the shared pool; `threads` 0 = AutoThreads(). Only before the
  // first Shared() (ps_server calls it while reading its flags); false,
  // and nothing changed, afterwards.
  static bool SetSharedThreads(int threads);

 private:
  struct Job;
  void HelperLoop();
  // Runs tasks of `job` until none is left unclaimed.
  static void Work(Job& job);

  absl::Mutex mu_;
  absl::CondVar wake_;
  // One entry per helper a Run asked for.
  std::deque<Job*> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> helpers_;
};

}  // namespace taups

#endif  // TAUPS_COMMON_TASK_POOL_H_

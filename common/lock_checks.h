// Abseil's mutex deadlock detection in the daemons.
//
// Debian's Abseil is built with its debug checks, so every absl::Mutex
// acquisition records the lock order in a global graph (GraphCycles) to
// report potential deadlocks. That graph costs a daemon 1-4 % of its CPU
// (more with many concurrent callers: 3.7 % of ps_server's samples with
// 256 workers, docs/BENCHMARKS.md) and guards nothing at run time that the
// tests do not already check: unit tests run in-process with the detection
// on, and the sanitizer stages (.ci/sanitizers.sh) check the same locks.
//
// SkipLockOrderChecks() turns the detection off for this process unless the
// environment sets TAUPS_LOCK_ORDER_CHECKS=1 (for debugging a hang in a
// deployed daemon). Call once at the start of main(), before any thread.
#ifndef TAUPS_COMMON_LOCK_CHECKS_H_
#define TAUPS_COMMON_LOCK_CHECKS_H_

#include <cstdlib>
#include <cstring>

#include "absl/synchronization/mutex.h"

namespace taups {

inline void SkipLockOrderChecks() {
  const char* keep = std::getenv("TAUPS_LOCK_ORDER_CHECKS");
  if (keep != nullptr && std::strcmp(keep, "1") == 0) return;
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace taups

#endif  // TAUPS_COMMON_LOCK_CHECKS_H_

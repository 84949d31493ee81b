// What ThreadSanitizer needs to know about Debian's Abseil: which calls
// synchronise. libabsl_synchronization is not built with TSan, so its Mutex,
// CondVar and Notification are invisible to it and every access they guard
// looks like a race. Preloaded into a TSan test (LD_PRELOAD, see
// .ci/sanitizers.sh), this library puts itself in front of those entry
// points, calls the real ones (dlsym RTLD_NEXT) and tells TSan the
// happens-before edges they make:
//
//   writer lock (Lock, TryLock, LockWhen*)   acquires W and R
//   writer unlock (Unlock)                   releases W
//   reader lock (ReaderLock, ReaderTryLock)  acquires W
//   reader unlock (ReaderUnlock)             releases R
//   Await*, CondVar::Wait* (mutex dropped)   release W, then acquire W and R
//   Notification::Notify / WaitFor*          release / acquire the object
//
// where W is the mutex's address and R the next byte, so readers are ordered
// after writers and writers after readers, but readers not after each other
// (a race between two holders of a shared lock is still reported). A
// Condition is evaluated with both acquired, on whichever thread Abseil
// evaluates it, and its reads released to R.
//
// Outside a TSan process (no __tsan_* symbols) it only forwards the calls.
// Not a general tool: it knows the symbols of Debian 12's Abseil
// (20220623, inline namespace debian3) and nothing else.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

extern "C" {
void __tsan_acquire(void* addr) __attribute__((weak));
void __tsan_release(void* addr) __attribute__((weak));
}

namespace {

void* Writers(const void* mu) { return const_cast<void*>(mu); }
void* Readers(const void* mu) {
  return static_cast<char*>(const_cast<void*>(mu)) + 1;
}
void Acquire(void* addr) {
  if (__tsan_acquire != nullptr) __tsan_acquire(addr);
}
void Release(void* addr) {
  if (__tsan_release != nullptr) __tsan_release(addr);
}
void AcquireAll(const void* mu) {
  Acquire(Writers(mu));
  Acquire(Readers(mu));
}

// Abseil's own lock-order (deadlock) detector keeps its graph under an
// internal SpinLock that TSan cannot see either, so two threads taking
// nested mutexes look like a race inside GraphCycles::InsertEdge. TSan
// checks lock order itself, so in a TSan process Abseil's detector is off.
__attribute__((constructor)) void IgnoreAbseilDeadlockGraph() {
  if (__tsan_acquire != nullptr) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
}

template <typename Fn>
Fn Real(const char* symbol) {
  void* fn = dlsym(RTLD_NEXT, symbol);
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found: %s\n", symbol,
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

// The real function `symbol` of type `Fn`, looked up once.
#define TAUPS_REAL(Fn, symbol)             \
  static const Fn real = Real<Fn>(symbol); \
  (void)0

// The body of a LockWhen or Await variant taking `cond` (and maybe a
// timeout or deadline): the real function, called with the condition
// guarded.
#define TAUPS_GUARDED(Fn, hold, symbol, ...) \
  TAUPS_REAL(Fn, symbol);                    \
  return CallWithCondition(real, this, hold, cond __VA_OPT__(, ) __VA_ARGS__)

// A Condition that makes TSan see what the mutex orders before it.
struct GuardedCondition {
  const absl::Condition* condition;
  const absl::Mutex* mu;
  static bool Eval(void* arg) {
    auto* self = static_cast<GuardedCondition*>(arg);
    AcquireAll(self->mu);
    const bool result = self->condition->Eval();
    Release(Readers(self->mu));
    return result;
  }
};

using Mutex = absl::Mutex;
using Condition = absl::Condition;
using VoidFn = void (*)(Mutex*);
using BoolFn = bool (*)(Mutex*);
using CondFn = void (*)(Mutex*, const Condition&);
using CondTimeoutFn = bool (*)(Mutex*, const Condition&, absl::Duration);
using CondDeadlineFn = bool (*)(Mutex*, const Condition&, absl::Time);

// How a call that takes a Condition holds the mutex around it.
enum class Hold {
  kNone,    // LockWhen*: not held before, held as a writer after
  kReader,  // ReaderLockWhen: not held before, held as a reader after
  kWriter,  // Await*: held before, dropped while waiting, held after
};

// Calls `real` (a LockWhen or Await variant) with `cond` guarded.
template <typename R, typename... Args>
R CallWithCondition(R (*real)(Mutex*, const Condition&, Args...), Mutex* mu,
                    Hold hold, const Condition& cond, Args... args) {
  GuardedCondition guarded{&cond, mu};
  const Condition wrapped(&GuardedCondition::Eval, &guarded);
  if (hold == Hold::kWriter) Release(Writers(mu));
  auto acquire = [&] {
    if (hold == Hold::kReader) {
      Acquire(Writers(mu));
    } else {
      AcquireAll(mu);
    }
  };
  if constexpr (std::is_void_v<R>) {
    real(mu, wrapped, args...);
    acquire();
  } else {
    const R result = real(mu, wrapped, args...);
    acquire();
    return result;
  }
}

// Calls `real` (a CondVar wait), which drops and retakes `mu`.
template <typename R, typename... Args>
R CallWaiting(R (*real)(absl::CondVar*, Mutex*, Args...), absl::CondVar* cv,
              Mutex* mu, Args... args) {
  Release(Writers(mu));
  if constexpr (std::is_void_v<R>) {
    real(cv, mu, args...);
    AcquireAll(mu);
  } else {
    const R result = real(cv, mu, args...);
    AcquireAll(mu);
    return result;
  }
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  TAUPS_REAL(VoidFn, "_ZN4absl7debian35Mutex4LockEv");
  real(this);
  AcquireAll(this);
}

void Mutex::Unlock() {
  TAUPS_REAL(VoidFn, "_ZN4absl7debian35Mutex6UnlockEv");
  Release(Writers(this));
  real(this);
}

void Mutex::ReaderLock() {
  TAUPS_REAL(VoidFn, "_ZN4absl7debian35Mutex10ReaderLockEv");
  real(this);
  Acquire(Writers(this));
}

void Mutex::ReaderUnlock() {
  TAUPS_REAL(VoidFn, "_ZN4absl7debian35Mutex12ReaderUnlockEv");
  Release(Readers(this));
  real(this);
}

bool Mutex::TryLock() {
  TAUPS_REAL(BoolFn, "_ZN4absl7debian35Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) AcquireAll(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  TAUPS_REAL(BoolFn, "_ZN4absl7debian35Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) Acquire(Writers(this));
  return locked;
}

void Mutex::LockWhen(const Condition& cond) {
  TAUPS_GUARDED(CondFn, Hold::kNone,
                "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE");
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  TAUPS_GUARDED(CondTimeoutFn, Hold::kNone,
                "_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE",
                timeout);
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  TAUPS_GUARDED(CondDeadlineFn, Hold::kNone,
                "_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE",
                deadline);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  TAUPS_GUARDED(CondFn, Hold::kReader,
                "_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE");
}

void Mutex::Await(const Condition& cond) {
  TAUPS_GUARDED(CondFn, Hold::kWriter,
                "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE");
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  TAUPS_GUARDED(CondTimeoutFn, Hold::kWriter,
                "_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE",
                timeout);
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  TAUPS_GUARDED(CondDeadlineFn, Hold::kWriter,
                "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE",
                deadline);
}

void CondVar::Wait(Mutex* mu) {
  using Fn = void (*)(CondVar*, Mutex*);
  TAUPS_REAL(Fn, "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  CallWaiting(real, this, mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  using Fn = bool (*)(CondVar*, Mutex*, absl::Duration);
  TAUPS_REAL(Fn, "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return CallWaiting(real, this, mu, timeout);
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  using Fn = bool (*)(CondVar*, Mutex*, absl::Time);
  TAUPS_REAL(Fn, "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return CallWaiting(real, this, mu, deadline);
}

void Notification::Notify() {
  using Fn = void (*)(Notification*);
  TAUPS_REAL(Fn, "_ZN4absl7debian312Notification6NotifyEv");
  Release(this);
  real(this);
}

void Notification::WaitForNotification() const {
  using Fn = void (*)(const Notification*);
  TAUPS_REAL(Fn, "_ZNK4absl7debian312Notification19WaitForNotificationEv");
  real(this);
  Acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(absl::Duration timeout) const {
  using Fn = bool (*)(const Notification*, absl::Duration);
  TAUPS_REAL(Fn,
             "_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_"
             "8DurationE");
  const bool notified = real(this, timeout);
  if (notified) Acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  using Fn = bool (*)(const Notification*, absl::Time);
  TAUPS_REAL(Fn,
             "_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_"
             "4TimeE");
  const bool notified = real(this, deadline);
  if (notified) Acquire(const_cast<Notification*>(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl

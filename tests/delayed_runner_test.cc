// DelayedRunner: tasks run once their delay has passed, in due order; an
// idle runner sleeps without waking; the destructor cancels what is left.
#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "worker/src/delayed_runner.h"

namespace taups {
namespace {

TEST_CASE("tasks run after their delay, the earliest due first") {
  DelayedRunner runner;
  absl::Mutex mu;
  std::vector<int> order;
  std::vector<absl::Duration> waited(2);
  absl::Notification both;
  const absl::Time start = absl::Now();
  auto task = [&](int id) {
    return [&, id](bool cancelled) {
      CHECK_FALSE(cancelled);
      absl::MutexLock lock(&mu);
      order.push_back(id);
      waited[id] = absl::Now() - start;
      if (order.size() == 2) both.Notify();
    };
  };
  runner.RunAfter(absl::Milliseconds(300), task(0));
  runner.RunAfter(absl::Milliseconds(100), task(1));
  REQUIRE(both.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&mu);
  CHECK(order == std::vector<int>{1, 0});
  CHECK(waited[1] >= absl::Milliseconds(100));
  CHECK(waited[0] >= absl::Milliseconds(300));
}

TEST_CASE("an idle runner does not wake, and a new task still runs at once") {
  DelayedRunner runner;
  absl::SleepFor(absl::Milliseconds(2500));  // the old loop woke every 1 s
  CHECK(runner.WakeupsForTest() == 0);
  absl::Notification ran;
  const absl::Time start = absl::Now();
  runner.RunAfter(absl::ZeroDuration(), [&](bool cancelled) {
    CHECK_FALSE(cancelled);
    ran.Notify();
  });
  REQUIRE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  CHECK(absl::Now() - start < absl::Seconds(1));
}

TEST_CASE("the destructor runs what is pending as cancelled, once each") {
  std::atomic<int> cancelled{0}, ran{0};
  {
    DelayedRunner runner;
    for (int i = 0; i < 3; ++i) {
      runner.RunAfter(absl::Hours(1), [&](bool was_cancelled) {
        ++(was_cancelled ? cancelled : ran);
      });
    }
  }
  CHECK(cancelled.load() == 3);
  CHECK(ran.load() == 0);
}

}  // namespace
}  // namespace taups

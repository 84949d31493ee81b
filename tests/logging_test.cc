// The log helpers: level names, journal detection, syslog priorities, the
// rate limiter of repeated lines (on a manual clock) and the worker's
// progress line.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/log_rate_limiter.h"
#include "common/logging.h"
#include "tests/process_harness.h"
#include "worker/trainer/training_progress.h"

namespace taups {
namespace {

TEST_CASE("log levels parse in any case; unknown ones are refused with the list") {
  CHECK(*ParseLogLevel("info") == spdlog::level::info);
  CHECK(*ParseLogLevel("INFO") == spdlog::level::info);
  CHECK(*ParseLogLevel("Debug") == spdlog::level::debug);
  CHECK(*ParseLogLevel("warn") == spdlog::level::warn);
  CHECK(*ParseLogLevel("WARNING") == spdlog::level::warn);
  CHECK(*ParseLogLevel("error") == spdlog::level::err);
  CHECK(*ParseLogLevel("off") == spdlog::level::off);
  for (const char* bad : {"", "inf", "verbose", "3"}) {
    const auto parsed = ParseLogLevel(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(parsed.status().message()) ==
          absl::StrCat("--log_level: unknown level '", bad,
                       "'; expected one of trace, debug, info, warn (or "
                       "warning), error, critical, off"));
  }
}

TEST_CASE("syslog priorities of the levels") {
  CHECK(SyslogPriority(spdlog::level::trace) == 7);
  CHECK(SyslogPriority(spdlog::level::debug) == 7);
  CHECK(SyslogPriority(spdlog::level::info) == 6);
  CHECK(SyslogPriority(spdlog::level::warn) == 4);
  CHECK(SyslogPriority(spdlog::level::err) == 3);
  CHECK(SyslogPriority(spdlog::level::critical) == 2);
}

TEST_CASE("JOURNAL_STREAM counts only when it names the descriptor's file") {
  testing::TempDir dir;
  const std::string path = dir.path() + "/out";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  struct stat st {};
  REQUIRE(fstat(fd, &st) == 0);
  const std::string same = absl::StrCat(st.st_dev, ":", st.st_ino);
  const std::string other_inode = absl::StrCat(st.st_dev, ":", st.st_ino + 1);
  CHECK(IsJournalStream(same.c_str(), fd));
  CHECK_FALSE(IsJournalStream(other_inode.c_str(), fd));
  CHECK_FALSE(IsJournalStream(nullptr, fd));
  CHECK_FALSE(IsJournalStream("", fd));
  CHECK_FALSE(IsJournalStream("12", fd));
  CHECK_FALSE(IsJournalStream("a:b", fd));
  CHECK_FALSE(IsJournalStream((same + ":1").c_str(), fd));
  close(fd);
  CHECK_FALSE(IsJournalStream(same.c_str(), fd));  // closed descriptor
}

TEST_CASE("the rate limiter logs the first, counts the rest, reports the count") {
  ManualClock clock;
  LogRateLimiter limiter(&clock, absl::Seconds(10));
  LogRateLimiter::Verdict v = limiter.Admit("reject");
  CHECK(v.log);
  CHECK(v.repeated == 0);
  // 57 more within the interval: held back.
  for (int i = 0; i < 57; ++i) {
    clock.Advance(absl::Milliseconds(100));
    CHECK_FALSE(limiter.Admit("reject").log);
  }
  // Another key is not affected.
  CHECK(limiter.Admit("heartbeat").log);
  // 10 s after the last logged one, the next is logged with the count.
  clock.Advance(absl::Seconds(10) - absl::Milliseconds(5700));
  v = limiter.Admit("reject");
  CHECK(v.log);
  CHECK(v.repeated == 57);
  CHECK(v.over == absl::Seconds(10));
  CHECK(RepeatSuffix(v.repeated, v.over) ==
        " (repeated 57 times in the last 10 s)");
  CHECK(RepeatSuffix(1, absl::Seconds(12.4)) ==
        " (repeated 1 time in the last 12 s)");
  CHECK(RepeatSuffix(0, absl::Seconds(10)).empty());
  // A fresh window: the next one at once is held back again, one later
  // than the interval logged with nothing held back.
  CHECK_FALSE(limiter.Admit("reject").log);
  clock.Advance(absl::Seconds(30));
  v = limiter.Admit("reject");
  CHECK(v.log);
  CHECK(v.repeated == 1);
  clock.Advance(absl::Seconds(11));
  v = limiter.Admit("reject");
  CHECK(v.log);
  CHECK(v.repeated == 0);
}

TEST_CASE("held-back lines with no later one are handed out once overdue") {
  ManualClock clock;
  LogRateLimiter limiter(&clock, absl::Seconds(10));
  REQUIRE(limiter.Admit("a").log);
  REQUIRE(limiter.Admit("b").log);
  for (int i = 0; i < 3; ++i) REQUIRE_FALSE(limiter.Admit("a").log);
  clock.Advance(absl::Seconds(9));
  CHECK(limiter.TakeOverdue().empty());  // not yet
  clock.Advance(absl::Seconds(1));
  std::vector<LogRateLimiter::Overdue> overdue = limiter.TakeOverdue();
  REQUIRE(overdue.size() == 1);  // "b" held nothing back
  CHECK(overdue[0].key == "a");
  CHECK(overdue[0].repeated == 3);
  CHECK(overdue[0].over == absl::Seconds(10));
  CHECK(limiter.TakeOverdue().empty());  // handed out once
  // The report opened a new window.
  CHECK_FALSE(limiter.Admit("a").log);
  // At exit, what is held back is handed out however recent.
  clock.Advance(absl::Seconds(2));
  CHECK(limiter.TakeOverdue().empty());
  overdue = limiter.TakeOverdue(/*include_recent=*/true);
  REQUIRE(overdue.size() == 1);
  CHECK(overdue[0].key == "a");
  CHECK(overdue[0].repeated == 1);
  CHECK(overdue[0].over == absl::Seconds(2));
}

TEST_CASE("the rate limiter tracks a bounded number of keys") {
  ManualClock clock;
  LogRateLimiter limiter(&clock, absl::Seconds(10), /*max_keys=*/2);
  REQUIRE(limiter.Admit("a").log);
  clock.Advance(absl::Seconds(1));
  REQUIRE(limiter.Admit("b").log);
  clock.Advance(absl::Seconds(1));
  REQUIRE(limiter.Admit("c").log);  // forgets "a", the oldest
  CHECK_FALSE(limiter.Admit("b").log);
  CHECK(limiter.Admit("a").log);  // a first occurrence again
}

TEST_CASE("the progress line says step N of total, rejections and the ETA") {
  const absl::Time start = absl::UnixEpoch();
  trainer::TrainingProgress progress("mlp", 3, /*total_steps=*/200,
                                     /*log_every=*/50, start);
  PushResult rejected;
  rejected.shards.resize(2);
  rejected.shards[0].touched = true;
  rejected.shards[0].accepted = true;
  rejected.shards[0].tau = 2;
  rejected.shards[1].touched = true;
  rejected.shards[1].accepted = false;
  rejected.shards[1].tau = 9;
  for (int step = 0; step < 50; ++step) {
    progress.RecordStep(64, 0.5);
    if (step < 2) progress.RecordPush(rejected);
  }
  // 50 steps in 10 s: 150 to go take 30 s.
  const absl::Time now = start + absl::Seconds(10);
  CHECK(progress.Eta(now) == absl::Seconds(30));
  CHECK(progress.WindowLine("train_acc", 0.75, now) ==
        "mlp worker 3 step 50/200 loss 0.5000 train_acc 0.7500 samples/s 320 "
        "tau mean 5.50 max 9 rejected 2 pull_wait 0.0 ms eta 30s");
  progress.LogWindow("train_acc", 0.75, now);
  for (int step = 0; step < 150; ++step) progress.RecordStep(64, 0.25);
  // 150 x 64 examples in 192 s: 50 per second.
  const absl::Time end = now + absl::Seconds(192);
  CHECK(progress.Eta(end) == absl::ZeroDuration());
  CHECK(progress.WindowLine("train_acc", 0.8, end) ==
        "mlp worker 3 step 200/200 loss 0.2500 train_acc 0.8000 samples/s 50 "
        "tau mean 5.50 max 9 rejected 2 pull_wait 0.0 ms eta 0s");
  // Minutes when long: 1 step in 2 s with 199 to go.
  trainer::TrainingProgress slow("ctr", 0, 200, 1, start);
  slow.RecordStep(1, 1.0);
  CHECK(slow.Eta(start + absl::Seconds(2)) == absl::Seconds(398));
  CHECK(absl::StrContains(slow.WindowLine("auc", 0.5, start + absl::Seconds(2)),
                          " eta 6m38s"));
}

}  // namespace
}  // namespace taups

// A flood of rejected pushes does not flood the log (issue 13 part 4): the
// shard's "push rejected" warning goes through the shared rate limiter, so
// 500 refusals within a few seconds give one line that still says why (the
// table, the worker, tau and the bound) and one "repeated N more times"
// summary with the exact count of the rest.
#include <catch2/catch.hpp>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log_rate_limiter.h"
#include "server/parameter_store.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

// Captures the default logger's lines while alive.
class CapturedLog {
 public:
  CapturedLog()
      : previous_(spdlog::default_logger()),
        sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    auto logger = std::make_shared<spdlog::logger>("captured", sink_);
    logger->set_pattern("%l %v");
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }

  std::vector<std::string> Lines() const {
    return absl::StrSplit(text_.str(), '\n', absl::SkipEmpty());
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

TEST_CASE("500 rejected pushes log one explained line and a count of the rest") {
  ParameterStore store(0, 1);
  TableConfig config = TableConfig::Dense("w", 4);
  config.staleness.reject_above_tau_max = true;
  config.staleness.tau_max = 2;
  bool created = false;
  REQUIRE(store.CreateTable(config, true, &created).ok());
  store.Register(7, 1, absl::ZeroDuration());
  const std::vector<float> g(4, 1.0f);
  uint64_t seq = 0;
  // Version 3: a push computed on version 0 has tau 3 > 2.
  for (uint64_t base = 0; base < 3; ++base) {
    PushMeta meta;
    meta.origin = PushOrigin{7, 1, ++seq};
    meta.base_version = base;
    REQUIRE(store.PushDense("w", 0, g, meta)->accepted);
  }
  // Held-back counts of earlier tests in this process are not ours.
  DefaultLogRateLimiter().TakeOverdue(/*include_recent=*/true);

  CapturedLog log;
  constexpr int kFlood = 500;
  for (int i = 0; i < kFlood; ++i) {
    PushMeta meta;
    meta.origin = PushOrigin{7, 1, ++seq};
    meta.base_version = 0;
    absl::StatusOr<PushOutcome> outcome = store.PushDense("w", 0, g, meta);
    REQUIRE(outcome.ok());
    REQUIRE_FALSE(outcome->accepted);
  }
  // What the shard's ticker (or its shutdown) reports of the held-back ones.
  LogOverdueRepeats(DefaultLogRateLimiter(), spdlog::level::warn,
                    /*include_recent=*/true);

  const std::vector<std::string> lines = log.Lines();
  INFO(absl::StrJoin(lines, "\n"));
  std::vector<std::string> rejected, summaries;
  for (const std::string& line : lines) {
    if (absl::StrContains(line, "repeated")) {
      summaries.push_back(line);
    } else if (absl::StrContains(line, "rejected")) {
      rejected.push_back(line);
    }
  }
  // The flood ran in well under the limiter's 10 s: one line, one summary.
  REQUIRE(rejected.size() == 1);
  const std::string& first = rejected[0];
  INFO(first);
  CHECK(absl::StartsWith(first, "warning "));
  CHECK(absl::StrContains(first, "table 'w'"));
  CHECK(absl::StrContains(first, "from worker 7"));
  CHECK(absl::StrContains(first, "(tau 3)"));
  CHECK(absl::StrContains(first, "tau_max=2"));
  REQUIRE(summaries.size() == 1);
  INFO(summaries[0]);
  CHECK(absl::StartsWith(summaries[0], "warning table 'w': push rejected: repeated 499 more times"));
  CHECK(lines.size() == 2);
}

}  // namespace
}  // namespace taups

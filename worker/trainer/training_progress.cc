#include "worker/trainer/training_progress.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "worker/src/client_events.h"
#include "absl/time/clock.h"
#include "common/log_rate_limiter.h"
#include "spdlog/spdlog.h"

namespace taups::trainer {

void TauStats::Add(const PushResult& result) {
  for (const ShardPushResult& shard : result.shards) {
    if (!shard.touched) continue;
    ++count_;
    sum_ += static_cast<double>(shard.tau);
    max_ = std::max(max_, shard.tau);
    if (!shard.accepted) ++rejected_;
  }
}

TrainingProgress::TrainingProgress(std::string model, uint32_t worker_id,
                                   int64_t total_steps, int64_t log_every,
                                   absl::Time start)
    : model_(std::move(model)),
      worker_id_(worker_id),
      total_steps_(total_steps),
      log_every_(log_every),
      start_(start),
      window_start_(start) {}

void TrainingProgress::RecordStep(int examples, double loss) {
  ++steps_;
  examples_ += examples;
  window_examples_ += examples;
  window_loss_sum_ += loss * examples;
  if (metrics_ != nullptr) metrics_->RecordStep(examples);
}

bool TrainingProgress::ShouldLog() const {
  return log_every_ > 0 && steps_ > 0 && steps_ % log_every_ == 0;
}

double TrainingProgress::recent_loss() const {
  return window_examples_ > 0 ? window_loss_sum_ / window_examples_
                              : last_window_loss_;
}

double TrainingProgress::samples_per_sec(absl::Time now) const {
  const double seconds = absl::ToDoubleSeconds(now - start_);
  return seconds > 0.0 ? static_cast<double>(examples_) / seconds : 0.0;
}

absl::Duration TrainingProgress::Eta(absl::Time now) const {
  if (steps_ <= 0 || steps_ >= total_steps_) return absl::ZeroDuration();
  return (now - start_) / steps_ * (total_steps_ - steps_);
}

std::string TrainingProgress::WindowLine(std::string_view metric_name,
                                         double metric, absl::Time now) const {
  const double seconds = absl::ToDoubleSeconds(now - window_start_);
  const double rate =
      seconds > 0.0 ? static_cast<double>(window_examples_) / seconds : 0.0;
  const double wait_ms =
      window_pulls_ > 0
          ? absl::ToDoubleMilliseconds(window_wait_ / window_pulls_)
          : 0.0;
  // Whole seconds: "12s", "3m20s", "0s".
  const absl::Duration eta =
      absl::Seconds(std::llround(absl::ToDoubleSeconds(Eta(now))));
  std::string line = absl::StrFormat(
      "%s worker %u step %d/%d loss %.4f %s %.4f samples/s %.0f tau mean "
      "%.2f max %u rejected %d pull_wait %.1f ms eta %s",
      model_, worker_id_, steps_, total_steps_, recent_loss(), metric_name,
      metric, rate, tau_.mean(), tau_.max(), tau_.rejected(), wait_ms,
      eta == absl::ZeroDuration() ? "0s" : absl::FormatDuration(eta));
  const std::optional<ClientEvents> events =
      client_ != nullptr ? EventsOf(*client_) : std::nullopt;
  if (events.has_value() &&
      (events->total_restarts() > 0 || events->total_retries() > 0)) {
    absl::StrAppendFormat(&line, " shard_restarts %d rpc_retries %d",
                          events->total_restarts(), events->total_retries());
  }
  return line;
}

void TrainingProgress::LogWindow(std::string_view metric_name, double metric,
                                 absl::Time now) {
  spdlog::info("{}", WindowLine(metric_name, metric, now));
  LogOverdueRepeats(DefaultLogRateLimiter(), spdlog::level::warn);
  window_wait_ = absl::ZeroDuration();
  window_pulls_ = 0;
  last_window_loss_ = recent_loss();
  window_start_ = now;
  window_examples_ = 0;
  window_loss_sum_ = 0.0;
}

void StallForSlowdown(double slowdown, absl::Duration compute) {
  if (slowdown > 1.0) absl::SleepFor(compute * (slowdown - 1.0));
}

}  // namespace taups::trainer

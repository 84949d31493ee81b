// Bookkeeping of a training loop: staleness seen in push results, loss and
// throughput per logging window, and the periodic progress line (step N of
// total, ETA, rejected pushes so far).
//
// Time is passed in by the caller (absl::Time arguments), so tests control it.
// Thread-compatible: owned and called by the one training thread.
#ifndef TAUPS_WORKER_TRAINER_TRAINING_PROGRESS_H_
#define TAUPS_WORKER_TRAINER_TRAINING_PROGRESS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "taups/client.h"
#include "worker/trainer/worker_metrics.h"

namespace taups::trainer {

// Staleness over every (push, touched shard) pair.
class TauStats {
 public:
  void Add(const PushResult& result);

  double mean() const { return count_ > 0 ? sum_ / count_ : 0.0; }
  uint64_t max() const { return max_; }
  int64_t rejected() const { return rejected_; }  // shard answers, not pushes

 private:
  int64_t count_ = 0;
  double sum_ = 0.0;
  uint64_t max_ = 0;
  int64_t rejected_ = 0;
};

class TrainingProgress {
 public:
  // `total_steps`: the steps the run will take (for N/total and the ETA).
  // `log_every` 0 disables the progress line.
  TrainingProgress(std::string model, uint32_t worker_id, int64_t total_steps,
                   int64_t log_every, absl::Time start);

  // Also feeds every record below to `metrics` (ps_worker --metrics_port),
  // which then exports the traffic of `tables`; null: none. It must outlive
  // this object.
  void AttachMetrics(WorkerMetrics* metrics,
                     std::initializer_list<std::string> tables) {
    metrics_ = metrics;
    if (metrics_ == nullptr) return;
    for (const std::string& table : tables) metrics_->WatchTable(table);
  }

  // Progress lines also report the shard restarts `client` rode through and
  // the calls it retried, once there are any (EventsOf; nothing for other
  // clients). It must outlive this object.
  void AttachClient(const Client* client) { client_ = client; }

  // Accounts one finished step over `examples` examples with mean `loss`.
  void RecordStep(int examples, double loss);
  void RecordPush(const PushResult& result) {
    tau_.Add(result);
    if (metrics_ != nullptr) metrics_->RecordPush(result);
  }
  // Accounts the time a pull took (for barrier policies, mostly waiting).
  void RecordPull(const PullInfo& info) {
    window_wait_ += info.elapsed;
    total_wait_ += info.elapsed;
    ++window_pulls_;
    ++total_pulls_;
    if (metrics_ != nullptr) metrics_->RecordPull(info);
  }
  // Mean pull time per pull since start.
  absl::Duration mean_pull_wait() const {
    return total_pulls_ > 0 ? total_wait_ / total_pulls_ : absl::ZeroDuration();
  }

  // True when the step just recorded closes a logging window.
  bool ShouldLog() const;
  // The progress line of the current window:
  //   mlp worker 0 step 500/1000 loss 0.4050 train_acc 0.8530 samples/s 3267
  //   tau mean 2.31 max 8 rejected 0 pull_wait 1.2 ms eta 12s
  // (one line): step N/total, window loss, `metric_name` `metric`, samples/s
  // of the window, tau mean/max and rejected shard answers so far, mean pull
  // time of the window and the ETA; then, once the attached client rode
  // through a shard restart or retried a call, "shard_restarts N rpc_retries
  // M" (totals so far).
  std::string WindowLine(std::string_view metric_name, double metric,
                         absl::Time now) const;
  // Logs WindowLine() and the overdue repeats of DefaultLogRateLimiter(),
  // then opens a new window.
  void LogWindow(std::string_view metric_name, double metric, absl::Time now);
  // Time the remaining steps take at the mean pace since start; zero when
  // done or before the first step.
  absl::Duration Eta(absl::Time now) const;

  int64_t steps() const { return steps_; }
  const TauStats& tau() const { return tau_; }
  // Mean loss of the current window, or of the last closed one when the
  // current one is empty.
  double recent_loss() const;
  // Examples per second since `start`.
  double samples_per_sec(absl::Time now) const;

 private:
  std::string model_;
  uint32_t worker_id_;
  int64_t total_steps_;
  int64_t log_every_;
  absl::Time start_;
  int64_t steps_ = 0;
  int64_t examples_ = 0;
  TauStats tau_;
  // Current window.
  absl::Time window_start_;
  int64_t window_examples_ = 0;
  double window_loss_sum_ = 0.0;  // sum of per-example losses
  double last_window_loss_ = 0.0;
  absl::Duration window_wait_, total_wait_;
  int64_t window_pulls_ = 0, total_pulls_ = 0;
  WorkerMetrics* metrics_ = nullptr;
  const Client* client_ = nullptr;
};

// Stalls the calling thread for (slowdown - 1) x `compute`: the straggler of
// the consistency demonstration (ps_worker --slowdown).
void StallForSlowdown(double slowdown, absl::Duration compute);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_TRAINING_PROGRESS_H_

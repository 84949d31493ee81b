// Stragglers ([S2], [S8], [S14], [S17]): softmax regression, 16 workers with
// lognormal(0, 0.5) compute times, one of them (worker 15) 4x slower; every
// run closes the same number of steps (same gradient budget). Sync pays the
// straggler on every step; semi-sync with a 15/16 quorum (late = drop or
// reuse_last) does not; semi-sync with a full quorum and a 2 s timeout
// ([S14]'s 1-2 s) exercises the timeout path.
#include <algorithm>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/sim/experiment.h"
#include "common/status_macros.h"

namespace taups::sim {
namespace {

constexpr uint32_t kWorkers = 16;
constexpr uint32_t kStraggler = 15;
constexpr double kSlowFactor = 4.0;
constexpr float kLr = 0.5f;
constexpr double kTimeoutS = 2.0;

SimConfig Base(const ExperimentOptions& options, std::string label,
               bool straggler) {
  SimConfig c;
  c.label = std::move(label);
  c.seed = options.seed;
  c.num_shards = options.num_shards;
  c.num_workers = kWorkers;
  c.model = ModelKind::kSoftmax;
  c.init_scale = 0.0f;
  c.batch_size = 32;
  c.learning_rate = kLr;
  // Full: 1,000 steps of 16 x 32 examples (8.5 epochs); short: 300 steps.
  // Both evaluate on all 10,000 test images (cheap for this model).
  c.budget_gradients = options.short_version ? 300 * kWorkers : 1000 * kWorkers;
  c.eval_examples = 0;
  c.eval_points = options.short_version ? 10 : 25;
  c.compute.mu = 0.0;
  c.compute.sigma = 0.5;
  if (straggler) {
    c.compute.slow_workers = {kStraggler};
    c.compute.slow_factor = kSlowFactor;
  }
  c.consistency = Policy(ConsistencyKind::kSync, kWorkers);
  return c;
}

ConsistencyConfig SemiSync(float quorum, LatePolicy late, double timeout_s) {
  ConsistencyConfig c = Policy(ConsistencyKind::kSemiSync, kWorkers);
  c.quorum = quorum;
  c.late = late;
  c.step_timeout_s = timeout_s;
  return c;
}

}  // namespace

absl::StatusOr<ExperimentReport> RunStragglersExperiment(
    const ExperimentOptions& options, const SimData& data) {
  std::vector<SimConfig> configs;
  configs.push_back(Base(options, "sync_no_straggler", false));
  configs.push_back(Base(options, "sync_straggler", true));
  const float quorum = 15.0f / 16.0f;
  SimConfig drop = Base(options, "semisync_q15_drop", true);
  drop.consistency = SemiSync(quorum, LatePolicy::kDrop, 0.0);
  configs.push_back(drop);
  SimConfig reuse = Base(options, "semisync_q15_reuse_last", true);
  reuse.consistency = SemiSync(quorum, LatePolicy::kReuseLast, 0.0);
  configs.push_back(reuse);
  // late = drop here: with reuse_last and several workers missing a step the
  // shard core adds their stand-ins in hash-set order, which is not
  // reproducible bit for bit (see tests/sim_experiments_test.cc).
  SimConfig timeout = Base(options, "semisync_q16_timeout2s_drop", true);
  timeout.consistency = SemiSync(1.0f, LatePolicy::kDrop, kTimeoutS);
  configs.push_back(timeout);

  ExperimentReport report;
  report.experiment = "stragglers";
  report.short_version = options.short_version;
  ASSIGN_OR_RETURN(report.runs, RunConfigs(configs, data, options.jobs));
  const SimResult& clean = report.runs[0];
  const SimResult& sync = report.runs[1];

  report.checks.push_back(MakeCheck(
      "sync with a 4x straggler is >= 1.5x slower than without",
      sync.sim_time_s >= 1.5 * clean.sim_time_s,
      absl::StrFormat("%.0f s vs %.0f s (%.2fx)", sync.sim_time_s,
                      clean.sim_time_s, sync.sim_time_s / clean.sim_time_s)));
  for (int i : {2, 3}) {
    const SimResult& semi = report.runs[i];
    const std::string late = LatePolicyName(semi.config.consistency.late);
    report.checks.push_back(MakeCheck(
        absl::StrCat("semi-sync 15/16 ", late,
                     ": within 5% of the straggler-free time"),
        semi.sim_time_s <= 1.05 * clean.sim_time_s,
        absl::StrFormat("%.0f s vs %.0f s (%.3fx)", semi.sim_time_s,
                        clean.sim_time_s, semi.sim_time_s / clean.sim_time_s)));
    report.checks.push_back(MakeCheck(
        absl::StrCat("semi-sync 15/16 ", late,
                     ": within 0.3 points of sync accuracy"),
        std::abs(Points(semi.final_accuracy) - Points(sync.final_accuracy)) <= 0.3,
        absl::StrFormat("%.2f%% vs sync %.2f%% (%+.2f points)",
                        Points(semi.final_accuracy), Points(sync.final_accuracy),
                        Points(semi.final_accuracy - sync.final_accuracy))));
  }
  const SimResult& t = report.runs[4];
  const TableStats& ts = t.table_stats;
  report.checks.push_back(MakeCheck(
      "timeout path exercised; steps never wait longer than the timeout",
      ts.timeout_closes > 0 && Quantile(t.step_durations_s, 1.0) <= kTimeoutS + 1e-6,
      absl::StrFormat("%d of %d steps closed by the %.0f s timeout; step wait "
                      "p50 %.2f s, p99 %.2f s, max %.2f s; time %.0f s, "
                      "accuracy %.2f%%",
                      static_cast<int>(ts.timeout_closes),
                      static_cast<int>(ts.steps_closed), kTimeoutS,
                      Quantile(t.step_durations_s, 0.5),
                      Quantile(t.step_durations_s, 0.99),
                      Quantile(t.step_durations_s, 1.0), t.sim_time_s, Points(t.final_accuracy))));
  // [S17]: who closes the steps, and how long everybody waits.
  for (const SimResult& run : report.runs) {
    const SimResult* r = &run;
    const TableStats& s = r->table_stats;
    uint32_t top = 0;
    uint64_t top_count = 0;
    for (const auto& [w, ws] : s.workers) {
      if (ws.closed_steps_as_last > top_count) {
        top = w;
        top_count = ws.closed_steps_as_last;
      }
    }
    const WorkerSummary& slow = r->workers[kStraggler];
    report.notes.push_back(absl::StrFormat(
        "%s: step wait p50 %.2f s / p99 %.2f s / max %.2f s; worker %d closed "
        "%d of %d steps; straggler missed %d steps, waited %.0f s in pulls",
        r->config.label, Quantile(r->step_durations_s, 0.5),
        Quantile(r->step_durations_s, 0.99), Quantile(r->step_durations_s, 1.0),
        top,
        static_cast<int>(top_count), static_cast<int>(s.steps_closed),
        static_cast<int>(slow.missed_steps), slow.wait_s));
  }
  return report;
}

}  // namespace taups::sim

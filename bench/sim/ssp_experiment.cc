// Bounded staleness: SSP with s in {0, 2, 8} next to sync and async, 16
// workers, the staleness experiment's MLP and compute times. SSP applies
// every push at once, so it runs at the per-push rate a0/16: with s = 0 all
// workers read the same parameters each round and the round's 16 updates
// add up to one sync step at a0 on the mean gradient — s = 0 behaves as sync.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/sim/experiment.h"
#include "common/status_macros.h"

namespace taups::sim {
namespace {

constexpr uint32_t kWorkers = kMlpWorkers;
constexpr float kAlpha0 = 0.5f;

SimConfig Base(const ExperimentOptions& options, std::string label) {
  SimConfig c = MlpExperimentBase(options, std::move(label));
  c.learning_rate = kAlpha0 / kWorkers;
  return c;
}

}  // namespace

absl::StatusOr<ExperimentReport> RunSspExperiment(
    const ExperimentOptions& options, const SimData& data) {
  std::vector<SimConfig> configs;
  SimConfig sync = Base(options, "sync_a0");
  sync.consistency = Policy(ConsistencyKind::kSync, kWorkers);
  sync.learning_rate = kAlpha0;
  configs.push_back(sync);
  const uint32_t bounds[] = {0, 2, 8};
  for (uint32_t s : bounds) {
    SimConfig ssp = Base(options, absl::StrCat("ssp_s", s));
    ssp.consistency = Policy(ConsistencyKind::kSsp, kWorkers);
    ssp.consistency.staleness_bound = s;
    configs.push_back(ssp);
  }
  SimConfig async = Base(options, "async");
  async.consistency = Policy(ConsistencyKind::kAsync, kWorkers);
  configs.push_back(async);

  ExperimentReport report;
  report.experiment = "ssp";
  report.short_version = options.short_version;
  ASSIGN_OR_RETURN(report.runs, RunConfigs(configs, data, options.jobs));
  const SimResult& r_sync = report.runs[0];
  const SimResult& s0 = report.runs[1];
  const SimResult& s2 = report.runs[2];
  const SimResult& s8 = report.runs[3];

  report.checks.push_back(MakeCheck(
      "s=0 behaves as sync: same time (1%) and accuracy (0.3 points)",
      std::abs(s0.sim_time_s - r_sync.sim_time_s) <= 0.01 * r_sync.sim_time_s &&
          std::abs(Points(s0.final_accuracy - r_sync.final_accuracy)) <= 0.3,
      absl::StrFormat("time %.0f s vs %.0f s; accuracy %.2f%% vs %.2f%%",
                      s0.sim_time_s, r_sync.sim_time_s,
                      Points(s0.final_accuracy), Points(r_sync.final_accuracy))));
  report.checks.push_back(MakeCheck(
      "larger s: more staleness, less time",
      s0.tau.mean() < s2.tau.mean() && s2.tau.mean() < s8.tau.mean() &&
          s8.sim_time_s < s2.sim_time_s && s2.sim_time_s < s0.sim_time_s,
      absl::StrFormat("tau mean %.2f / %.2f / %.2f; time %.0f / %.0f / %.0f s",
                      s0.tau.mean(), s2.tau.mean(), s8.tau.mean(),
                      s0.sim_time_s, s2.sim_time_s, s8.sim_time_s)));
  bool bounded = true;
  std::string taus;
  for (int i = 0; i < 3; ++i) {
    const SimResult& r = report.runs[1 + i];
    const double limit = (2.0 * bounds[i] + 1.0) * (kWorkers - 1);
    bounded = bounded && r.tau.max() <= limit;
    absl::StrAppend(&taus, absl::StrFormat("s=%d: max %.0f <= %.0f; ", bounds[i],
                                           r.tau.max(), limit));
  }
  report.checks.push_back(MakeCheck(
      "tau never exceeds the SSP bound (2s+1)(N-1)", bounded, taus));
  for (const SimResult& r : report.runs) {
    report.notes.push_back(absl::StrFormat(
        "%s: accuracy %.2f%%, tau mean %.2f / p99 %.0f / max %.0f, time %.0f s, "
        "mean pull wait %.3f s",
        r.config.label, Points(r.final_accuracy), r.tau.mean(),
        r.tau.Percentile(0.99), r.tau.max(), r.sim_time_s, r.pull_wait_s.mean()));
  }
  return report;
}

}  // namespace taups::sim

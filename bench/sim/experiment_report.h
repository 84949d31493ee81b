// Writing an ExperimentReport: CSV files that bench/sim/plot_experiments.py
// turns into the plots of docs/EXPERIMENTS.md, and a text summary for the
// terminal.
//
//   <experiment>_curves.csv   run, time_s, progress, pushes, version,
//                             test_accuracy, test_loss, train_loss
//   <experiment>_tau.csv      run, tau, count   (non-empty buckets)
//   <experiment>_steps.csv    run, step, duration_s   (sync / semi-sync runs:
//                             how long each step stayed open)
//   <experiment>_summary.csv  one row per run (see SummaryColumns())
//   <experiment>_workers.csv  run, worker, pushes, not_applied, tau_mean,
//                             tau_max, wait_s, closed_steps_as_last,
//                             missed_steps
//   <experiment>_checks.csv   check, passed, measured
//
// Thread-compatible.
#ifndef TAUPS_BENCH_SIM_EXPERIMENT_REPORT_H_
#define TAUPS_BENCH_SIM_EXPERIMENT_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "bench/sim/experiment.h"

namespace taups::sim {

// Writes the CSV files into `dir` (created if missing).
absl::Status WriteReportCsv(const ExperimentReport& report,
                            const std::string& dir);

// A human-readable table of the runs, the checks and the notes.
std::string FormatReport(const ExperimentReport& report);

// A short description of a run's policy, e.g. "async lr=0.5 f=1/max(1,tau)".
std::string DescribePolicy(const SimConfig& config);

}  // namespace taups::sim

#endif  // TAUPS_BENCH_SIM_EXPERIMENT_REPORT_H_

// sim_experiments: runs one of the deterministic experiments of
// docs/EXPERIMENTS.md (or all of them), writes its CSV files and a text
// report into --out_dir, and optionally the plots (PNG) into --plots_dir.
//
//   build/bin/sim_experiments --experiment=staleness [--short]
//       [--out_dir=sim_results] [--plots_dir=docs/plots] [--seed=1] [--jobs=0] [--shards=1]
//       [--python=/usr/bin/python3]
//
// Exit status: 0 when every check of the expected shape passed, 2 when one
// failed (the files are written either way), 1 on errors.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/sim/experiment.h"
#include "bench/sim/experiment_report.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, experiment, "",
          "staleness | spikes | stragglers | ssp | compression_softmax | "
          "compression_mlp | accumulation | all");
ABSL_FLAG(bool, short, false, "run the short (CI) version");
ABSL_FLAG(std::string, out_dir, "sim_results", "where the CSV files go");
ABSL_FLAG(std::string, plots_dir, "",
          "if set, run the plotting script and write PNG files here");
ABSL_FLAG(std::string, plot_script, TAUPS_SIM_PLOT_SCRIPT,
          "the plotting script (python3 + matplotlib)");
ABSL_FLAG(std::string, python, "/usr/bin/python3",
          "the Python interpreter that has matplotlib");
ABSL_FLAG(std::string, data_dir, taups::trainer::kDefaultFashionMnistDir,
          "Fashion-MNIST directory");
ABSL_FLAG(uint64_t, seed, 1, "seed of batches, compute times and init");
ABSL_FLAG(uint32_t, shards, 1, "parameter-server shards in every run");
ABSL_FLAG(int, jobs, 0, "simulations run at once; 0 = one per CPU");
ABSL_FLAG(bool, verbose, false, "let the shard core log (warnings and up)");

namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs a deterministic tauPS experiment in simulated time; see "
      "docs/EXPERIMENTS.md.");
  absl::ParseCommandLine(argc, argv);
  spdlog::set_level(absl::GetFlag(FLAGS_verbose) ? spdlog::level::warn
                                                 : spdlog::level::err);
  const std::string which = absl::GetFlag(FLAGS_experiment);
  std::vector<std::string> names;
  if (which == "all") {
    names = taups::sim::ExperimentNames();
  } else if (!which.empty()) {
    names = {which};
  } else {
    std::fprintf(stderr, "--experiment is required: one of %s, or all\n",
                 absl::StrJoin(taups::sim::ExperimentNames(), ", ").c_str());
    return 1;
  }
  auto data = taups::sim::LoadSimData(absl::GetFlag(FLAGS_data_dir));
  if (!data.ok()) {
    std::fprintf(stderr, "loading Fashion-MNIST: %s\n",
                 data.status().ToString().c_str());
    return 1;
  }
  taups::sim::ExperimentOptions options;
  options.short_version = absl::GetFlag(FLAGS_short);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.jobs = absl::GetFlag(FLAGS_jobs);
  options.num_shards = absl::GetFlag(FLAGS_shards);
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  bool all_passed = true;
  for (const std::string& name : names) {
    auto report = taups::sim::RunExperiment(name, options, *data);
    if (!report.ok()) {
      std::fprintf(stderr, "experiment %s: %s\n", name.c_str(),
                   report.status().ToString().c_str());
      return 1;
    }
    const std::string text = taups::sim::FormatReport(*report);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    if (absl::Status s = taups::sim::WriteReportCsv(*report, out_dir); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::ofstream(absl::StrCat(out_dir, "/", name, "_report.txt")) << text;
    all_passed = all_passed && report->all_passed();
  }
  const std::string plots_dir = absl::GetFlag(FLAGS_plots_dir);
  if (!plots_dir.empty()) {
    const std::string command = absl::StrCat(
        ShellQuote(absl::GetFlag(FLAGS_python)), " ",
        ShellQuote(absl::GetFlag(FLAGS_plot_script)), " --csv_dir ",
        ShellQuote(out_dir), " --out_dir ", ShellQuote(plots_dir),
        " --experiments ", absl::StrJoin(names, " "));
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "plotting failed: %s\n", command.c_str());
      return 1;
    }
  }
  return all_passed ? 0 : 2;
}

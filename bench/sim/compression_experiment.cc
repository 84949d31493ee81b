// Gradient compression ([S9]-[S12]) and accumulation ([S11], [S16]).
//
// compression_softmax / compression_mlp: one ladder of push codecs, with and
// without error feedback, under sync training with 8 workers; every run has
// the same gradient budget, learning-rate schedule and seed, so the runs
// differ only in what the pushes lose on the way.
//   softmax regression: batch 32, lr 1, 10 epochs (short: 2 epochs)
//   784-128-10 MLP:     batch 16, lr 0.5, 5 epochs (short: half an epoch)
// The short versions run only the rungs their checks compare.
// accumulation: the MLP setup with k = 1, 4, 8 mini-batch gradients summed
// per push (fp32 pushes). "_mean" runs divide the server's learning rate by
// k, so a push applies the mean gradient of a k-times larger batch; "_sum"
// runs keep it (k times the step). Sync, and async with lr / max(1, tau); the
// short version runs sync k = 1 and the two _mean runs.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/sim/experiment.h"
#include "common/status_macros.h"

namespace taups::sim {
namespace {

constexpr uint32_t kWorkers = 8;

// One rung of the ladder.
struct Rung {
  std::string label;
  CodecKind codec = CodecKind::kNone;
  Rounding rounding = Rounding::kNearest;
  bool error_feedback = false;
  double topk_ratio = 0.0;
};

std::vector<Rung> Ladder() {
  return {
      {"fp32", CodecKind::kNone},
      {"int8", CodecKind::kInt8},
      {"int4", CodecKind::kInt4},
      {"int4_ef", CodecKind::kInt4, Rounding::kNearest, true},
      {"int2_nearest", CodecKind::kInt2, Rounding::kNearest},
      {"int2_stochastic", CodecKind::kInt2, Rounding::kStochastic},
      {"int2_ef", CodecKind::kInt2, Rounding::kNearest, true},
      {"sign", CodecKind::kSign},
      {"sign_ef", CodecKind::kSign, Rounding::kNearest, true},
      {"top0.1%", CodecKind::kTopK, Rounding::kNearest, false, 0.001},
      {"top0.1%_ef", CodecKind::kTopK, Rounding::kNearest, true, 0.001},
  };
}

CompressionConfig CompressionFor(const Rung& rung) {
  CompressionConfig c;
  c.push.codec = rung.codec;
  c.push.rounding = rung.rounding;
  c.push.bucket_size = kDefaultBucketSize;
  if (rung.codec == CodecKind::kTopK) {
    c.push.topk_ratio = rung.topk_ratio;
    c.push.topk_values = CodecKind::kNone;
  }
  c.error_feedback = rung.error_feedback;
  return c;
}

// Sync, 8 workers, lognormal(0, 0.5) compute times, linear decay to 0.
SimConfig CompressionBase(const ExperimentOptions& options, ModelKind model,
                          std::string label) {
  SimConfig c;
  c.label = std::move(label);
  c.seed = options.seed;
  c.num_shards = options.num_shards;
  c.num_workers = kWorkers;
  c.model = model;
  c.final_lr_fraction = 0.0f;
  c.compute.mu = 0.0;
  c.compute.sigma = 0.5;
  c.consistency = Policy(ConsistencyKind::kSync, kWorkers);
  if (model == ModelKind::kSoftmax) {
    c.init_scale = 0.0f;
    c.batch_size = 32;
    c.learning_rate = 1.0f;
    // 10 epochs of 60,000 / 32 (short: 2 epochs), a multiple of 8 * 8.
    c.budget_gradients = options.short_version ? 3776 : 18752;
    c.eval_examples = 0;  // all 10,000: cheap for this model
    c.eval_points = options.short_version ? 5 : 20;
  } else {
    c.batch_size = 16;
    c.learning_rate = 0.5f;
    // 5 epochs of 60,000 / 16 (short: half an epoch), a multiple of 8 * 8.
    c.budget_gradients = options.short_version ? 1856 : 18752;
    c.eval_examples = options.short_version ? 2000 : 0;
    c.eval_points = options.short_version ? 3 : 20;
  }
  return c;
}

double WireFraction(const SimResult& r) {
  return r.push_bytes.raw > 0 ? static_cast<double>(r.push_bytes.wire) /
                                    static_cast<double>(r.push_bytes.raw)
                              : 0.0;
}

std::string AccuracyVs(const SimResult& run, const SimResult& reference) {
  return absl::StrFormat("%s %.2f%% vs %s %.2f%% (%+.2f points)",
                         run.config.label, Points(run.final_accuracy),
                         reference.config.label, Points(reference.final_accuracy),
                         Points(run.final_accuracy - reference.final_accuracy));
}

// Checks `run` ends at least `points` below `reference` (or diverged).
Check Below(const SimResult& run, const SimResult& reference, double points) {
  return MakeCheck(
      absl::StrFormat("%s ends >= %.1f points below %s", run.config.label,
                      points, reference.config.label),
      run.diverged ||
          Points(reference.final_accuracy) - Points(run.final_accuracy) >= points,
      AccuracyVs(run, reference) + (run.diverged ? " (diverged)" : ""));
}

// Checks `run` ends no more than `points` below `reference`.
Check Within(const SimResult& run, const SimResult& reference, double points) {
  return MakeCheck(
      absl::StrFormat("%s within %.1f points of %s (or above)", run.config.label,
                      points, reference.config.label),
      !run.diverged &&
          Points(run.final_accuracy) >= Points(reference.final_accuracy) - points,
      AccuracyVs(run, reference));
}

// Checks `better` ends above `worse` by more than `margin` points.
Check Beats(const SimResult& better, const SimResult& worse, double margin) {
  return MakeCheck(
      margin > 0 ? absl::StrFormat("%s beats %s by > %.1f points",
                                   better.config.label, worse.config.label, margin)
                 : absl::StrFormat("%s beats %s", better.config.label,
                                   worse.config.label),
      !better.diverged && (worse.diverged || Points(better.final_accuracy) >
                                                 Points(worse.final_accuracy) + margin),
      AccuracyVs(better, worse));
}

void AddWireNotes(ExperimentReport& report) {
  std::string text = "wire bytes / fp32 bytes per push:";
  for (const SimResult& r : report.runs) {
    absl::StrAppend(&text, absl::StrFormat(" %s %.4f;", r.config.label,
                                           WireFraction(r)));
  }
  report.notes.push_back(text);
}

// `short_rungs`: the labels the short version runs (all rungs when empty).
absl::StatusOr<ExperimentReport> RunLadder(
    const ExperimentOptions& options, const SimData& data, ModelKind model,
    std::string name, const std::vector<std::string>& short_rungs) {
  std::vector<SimConfig> configs;
  for (const Rung& rung : Ladder()) {
    if (options.short_version && !short_rungs.empty() &&
        std::find(short_rungs.begin(), short_rungs.end(), rung.label) ==
            short_rungs.end()) {
      continue;
    }
    SimConfig c = CompressionBase(options, model, rung.label);
    c.compression = CompressionFor(rung);
    configs.push_back(c);
  }
  ExperimentReport report;
  report.experiment = std::move(name);
  report.short_version = options.short_version;
  ASSIGN_OR_RETURN(report.runs, RunConfigs(configs, data, options.jobs));
  AddWireNotes(report);
  return report;
}

const SimResult& Get(const ExperimentReport& report, absl::string_view label) {
  const SimResult* run = report.Find(label);
  return *run;  // every label comes from Ladder()
}

}  // namespace

absl::StatusOr<ExperimentReport> RunCompressionSoftmaxExperiment(
    const ExperimentOptions& options, const SimData& data) {
  ASSIGN_OR_RETURN(ExperimentReport report,
                   RunLadder(options, data, ModelKind::kSoftmax,
                             "compression_softmax",
                             {"fp32", "int8", "int2_nearest", "int2_ef", "sign",
                              "sign_ef", "top0.1%", "top0.1%_ef"}));
  const SimResult& fp32 = Get(report, "fp32");
  auto& checks = report.checks;
  if (!options.short_version) {
    // The targets.
    for (const char* label : {"int8", "int4_ef", "int2_ef", "sign_ef", "top0.1%_ef"}) {
      checks.push_back(Within(Get(report, label), fp32, 0.5));
    }
    checks.push_back(Below(Get(report, "int2_nearest"), fp32, 1.0));
    checks.push_back(Below(Get(report, "sign"), fp32, 3.0));
    checks.push_back(Below(Get(report, "top0.1%"), fp32, 3.0));
    checks.push_back(
        Beats(Get(report, "int2_stochastic"), Get(report, "int2_nearest"), 0.0));
  } else {
    // The shape, with margins, on 2 epochs.
    checks.push_back(Within(Get(report, "int8"), fp32, 0.5));
    checks.push_back(Beats(Get(report, "int2_ef"), Get(report, "int2_nearest"), 1.0));
    checks.push_back(Beats(Get(report, "sign_ef"), Get(report, "sign"), 1.0));
    checks.push_back(Beats(Get(report, "top0.1%_ef"), Get(report, "top0.1%"), 1.0));
  }
  return report;
}

absl::StatusOr<ExperimentReport> RunCompressionMlpExperiment(
    const ExperimentOptions& options, const SimData& data) {
  ASSIGN_OR_RETURN(ExperimentReport report,
                   RunLadder(options, data, ModelKind::kMlp, "compression_mlp",
                             {"fp32", "int8", "int2_nearest", "int2_ef",
                              "top0.1%", "top0.1%_ef"}));
  const SimResult& fp32 = Get(report, "fp32");
  auto& checks = report.checks;
  if (!options.short_version) {
    checks.push_back(MakeCheck(
        "fp32 reaches >= 85.5%", Points(fp32.final_accuracy) >= 85.5,
        absl::StrFormat("%.2f%%", Points(fp32.final_accuracy))));
    for (const char* label : {"int4_ef", "int2_ef", "sign_ef", "top0.1%_ef"}) {
      checks.push_back(Within(Get(report, label), fp32, 0.7));
    }
    for (const char* label : {"int2_nearest", "sign", "top0.1%"}) {
      checks.push_back(Below(Get(report, label), fp32, 2.0));
    }
  } else {
    // Half an epoch, 2,000 test images (1 point = 20 images).
    checks.push_back(Within(Get(report, "int8"), fp32, 1.0));
    checks.push_back(Beats(Get(report, "int2_ef"), Get(report, "int2_nearest"), 1.0));
    checks.push_back(Beats(Get(report, "top0.1%_ef"), Get(report, "top0.1%"), 1.0));
  }
  return report;
}

absl::StatusOr<ExperimentReport> RunAccumulationExperiment(
    const ExperimentOptions& options, const SimData& data) {
  // Each group starts with its k = 1 reference.
  struct Group {
    ConsistencyKind kind;
    std::vector<std::pair<uint32_t, bool>> runs;  // (k, lr divided by k)
  };
  std::vector<Group> groups = {
      {ConsistencyKind::kSync, {{1, false}, {4, true}, {8, true}}}};
  if (!options.short_version) {
    groups[0].runs.push_back({4, false});
    groups[0].runs.push_back({8, false});
    groups.push_back({ConsistencyKind::kAsync, {{1, false}, {4, true}, {8, true}}});
  }
  std::vector<SimConfig> configs;
  std::vector<size_t> reference;  // per config: index of its k = 1 run
  for (const Group& group : groups) {
    const size_t first = configs.size();
    for (const auto& [k, divide] : group.runs) {
      SimConfig c = CompressionBase(
          options, ModelKind::kMlp,
          absl::StrCat(ConsistencyKindName(group.kind), "_k", k,
                       k == 1 ? "" : (divide ? "_mean" : "_sum")));
      c.consistency = Policy(group.kind, kWorkers);
      if (group.kind == ConsistencyKind::kAsync) {
        c.staleness.downweight = DownweightKind::kInverse;
      }
      c.compression.accumulate_steps = k;
      if (divide) c.learning_rate /= static_cast<float>(k);
      configs.push_back(c);
      reference.push_back(first);
    }
  }
  ExperimentReport report;
  report.experiment = "accumulation";
  report.short_version = options.short_version;
  ASSIGN_OR_RETURN(report.runs, RunConfigs(configs, data, options.jobs));
  for (size_t i = 0; i < report.runs.size(); ++i) {
    const SimResult& r = report.runs[i];
    const SimResult& k1 = report.runs[reference[i]];
    const uint64_t k = r.config.compression.accumulate_steps;
    if (k == 1) continue;
    report.checks.push_back(MakeCheck(
        absl::StrFormat("%s: bytes on the wire fall exactly %d-fold",
                        r.config.label, k),
        k1.push_bytes.wire == k * r.push_bytes.wire &&
            k1.push_bytes.raw == k * r.push_bytes.raw &&
            k1.pushes == static_cast<int64_t>(k) * r.pushes,
        absl::StrFormat("wire %d vs %d bytes, pushes %d vs %d",
                        k1.push_bytes.wire, r.push_bytes.wire, k1.pushes,
                        r.pushes)));
    report.notes.push_back(absl::StrFormat(
        "accuracy cost of %s: %s%s; simulated time %.0f s vs %.0f s",
        r.config.label, AccuracyVs(r, k1), r.diverged ? " (diverged)" : "",
        r.sim_time_s, k1.sim_time_s));
  }
  return report;
}

}  // namespace taups::sim

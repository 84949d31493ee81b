#include "bench/sim/experiment_report.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/codec_format.h"

namespace taups::sim {
namespace {

// Quotes a CSV field when needed.
std::string Field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

double WireFraction(const PushBytes& bytes) {
  return bytes.raw > 0
             ? static_cast<double>(bytes.wire) / static_cast<double>(bytes.raw)
             : 0.0;
}

// "int2/stochastic", "topk 0.1%", "sign", ...; "fp32" for codec none.
std::string DescribeCodec(const CodecOptions& push) {
  if (push.codec == CodecKind::kNone) return "fp32";
  std::string text = CodecKindName(push.codec);
  if (push.codec == CodecKind::kTopK) {
    absl::StrAppend(&text, " ", Num(100 * push.topk_ratio), "%");
    if (push.topk_values != CodecKind::kNone) {
      absl::StrAppend(&text, "/", CodecKindName(push.topk_values));
    }
  }
  const CodecKind scaled =
      push.codec == CodecKind::kTopK ? push.topk_values : push.codec;
  if (LevelsOf(scaled) > 0 && push.rounding == Rounding::kStochastic) {
    absl::StrAppend(&text, "/stochastic");
  }
  return text;
}

double Mean(const std::vector<double>& v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

std::string DescribePolicy(const SimConfig& config) {
  const ConsistencyConfig& c = config.consistency;
  const StalenessConfig& s = config.staleness;
  std::string text = ConsistencyKindName(c.kind);
  if (c.kind == ConsistencyKind::kSemiSync) {
    absl::StrAppend(&text, " quorum=", Num(c.quorum), " late=",
                    LatePolicyName(c.late));
    if (c.step_timeout_s > 0) absl::StrAppend(&text, " timeout=", Num(c.step_timeout_s), "s");
  }
  if (c.kind == ConsistencyKind::kSsp) absl::StrAppend(&text, " s=", c.staleness_bound);
  if (config.num_workers == 1) text = "sequential";
  absl::StrAppend(&text, " lr=", Num(config.learning_rate));
  if (s.downweight != DownweightKind::kNone) {
    absl::StrAppend(&text, " f=", DownweightKindName(s.downweight));
  }
  if (s.reject_above_tau_max) absl::StrAppend(&text, " reject>", s.tau_max);
  if (s.clip_norm > 0) absl::StrAppend(&text, " clip=", Num(s.clip_norm));
  if (s.warmup_versions > 0) absl::StrAppend(&text, " warmup=", s.warmup_versions);
  if (s.delay_compensation) absl::StrAppend(&text, " dc");
  const CompressionConfig& z = config.compression;
  if (z.push.codec != CodecKind::kNone) {
    absl::StrAppend(&text, " push=", DescribeCodec(z.push));
  }
  if (z.error_feedback) absl::StrAppend(&text, " +ef");
  if (z.accumulate_steps > 1) absl::StrAppend(&text, " k=", z.accumulate_steps);
  return text;
}

absl::Status WriteReportCsv(const ExperimentReport& report,
                            const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  const std::string base = absl::StrCat(dir, "/", report.experiment);

  std::string curves = "run,time_s,progress,pushes,version,test_accuracy,test_loss,train_loss\n";
  std::string tau = "run,tau,count\n";
  std::string steps = "run,step,duration_s\n";
  std::string workers =
      "run,worker,pushes,not_applied,tau_mean,tau_max,wait_s,"
      "closed_steps_as_last,missed_steps\n";
  std::string summary =
      "run,policy,workers,model,batch,lr,budget_gradients,final_accuracy,"
      "final_loss,sim_time_s,pushes,tau_mean,tau_p50,tau_p99,tau_max,"
      "not_applied,server_rejected,over_tau_max,downweighted,late,"
      "steps_closed,quorum_closes,timeout_closes,step_wait_mean_s,"
      "step_wait_p50_s,step_wait_p99_s,step_wait_max_s,pull_wait_mean_s,"
      "pull_wait_total_s,push_norm_mean,spiked_steps,refused_errors,diverged,stalled,wall_s,"
      "codec,error_feedback,accumulate_steps,push_raw_bytes,push_wire_bytes,"
      "wire_fraction\n";
  for (const SimResult& r : report.runs) {
    const std::string run = Field(r.config.label);
    for (const CurvePoint& p : r.curve) {
      absl::StrAppend(&curves, run, ",", Num(p.time_s), ",", Num(p.progress),
                      ",", p.pushes, ",", p.version, ",", Num(p.test_accuracy),
                      ",", Num(p.test_loss), ",", Num(p.train_loss), "\n");
    }
    for (size_t i = 0; i < r.step_durations_s.size(); ++i) {
      absl::StrAppend(&steps, run, ",", i, ",", Num(r.step_durations_s[i]), "\n");
    }
    const auto& counts = r.tau.counts();
    const auto& bounds = r.tau.bounds();
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] == 0) continue;
      const double value = i < bounds.size() ? bounds[i] : r.tau.max();
      absl::StrAppend(&tau, run, ",", Num(value), ",", counts[i], "\n");
    }
    for (const WorkerSummary& w : r.workers) {
      absl::StrAppend(&workers, run, ",", w.id, ",", w.pushes, ",",
                      w.not_applied, ",", Num(w.tau_mean), ",", w.tau_max, ",",
                      Num(w.wait_s), ",", w.closed_steps_as_last, ",",
                      w.missed_steps, "\n");
    }
    const TableStats& s = r.table_stats;
    absl::StrAppend(
        &summary, run, ",", Field(DescribePolicy(r.config)), ",",
        r.config.num_workers, ",", ModelKindName(r.config.model), ",",
        r.config.batch_size, ",", Num(r.config.learning_rate), ",",
        r.config.budget_gradients, ",", Num(r.final_accuracy), ",",
        Num(r.final_loss), ",", Num(r.sim_time_s), ",", r.pushes, ",",
        Num(r.tau.mean()), ",", Num(r.tau.Percentile(0.5)), ",",
        Num(r.tau.Percentile(0.99)), ",", Num(r.tau.max()), ",",
        r.not_applied, ",", s.rejected, ",", r.over_tau_max, ",",
        s.downweighted, ",", s.late, ",", s.steps_closed, ",",
        s.quorum_closes, ",", s.timeout_closes, ",",
        Num(Mean(r.step_durations_s)), ",",
        Num(Quantile(r.step_durations_s, 0.5)), ",",
        Num(Quantile(r.step_durations_s, 0.99)), ",",
        Num(Quantile(r.step_durations_s, 1.0)),
        ",", Num(r.pull_wait_s.mean()), ",", Num(r.pull_wait_s.sum()), ",",
        Num(r.push_norm_mean), ",", r.spiked_steps, ",", r.refused_errors, ",", r.diverged ? 1 : 0, ",",
        r.stalled ? 1 : 0, ",", Num(r.wall_s), ",",
        Field(DescribeCodec(r.config.compression.push)), ",",
        r.config.compression.error_feedback ? 1 : 0, ",",
        r.config.compression.accumulate_steps, ",", r.push_bytes.raw, ",",
        r.push_bytes.wire, ",", Num(WireFraction(r.push_bytes)), "\n");
  }
  std::string checks = "check,passed,measured\n";
  for (const Check& c : report.checks) {
    absl::StrAppend(&checks, Field(c.name), ",", c.passed ? 1 : 0, ",",
                    Field(c.measured), "\n");
  }
  if (absl::Status s = WriteFile(base + "_curves.csv", curves); !s.ok()) return s;
  if (absl::Status s = WriteFile(base + "_tau.csv", tau); !s.ok()) return s;
  if (absl::Status s = WriteFile(base + "_steps.csv", steps); !s.ok()) return s;
  if (absl::Status s = WriteFile(base + "_workers.csv", workers); !s.ok()) return s;
  if (absl::Status s = WriteFile(base + "_summary.csv", summary); !s.ok()) return s;
  return WriteFile(base + "_checks.csv", checks);
}

std::string FormatReport(const ExperimentReport& report) {
  std::string text = absl::StrCat("experiment ", report.experiment,
                                  report.short_version ? " (short)" : "", "\n");
  absl::StrAppend(&text,
                  absl::StrFormat("%-22s %-44s %8s %9s %8s %6s %5s %7s %9s %7s\n",
                                  "run", "policy", "acc %", "sim s", "tau mean",
                                  "p99", "max", "unappl", "wire/fp32", "wall s"));
  for (const SimResult& r : report.runs) {
    absl::StrAppend(
        &text,
        absl::StrFormat("%-22s %-44s %8.2f %9.1f %8.2f %6.0f %5.0f %7d %9.4f %7.1f%s\n",
                        r.config.label, DescribePolicy(r.config),
                        Points(r.final_accuracy), r.sim_time_s, r.tau.mean(),
                        r.tau.Percentile(0.99), r.tau.max(),
                        static_cast<int>(r.not_applied),
                        WireFraction(r.push_bytes), r.wall_s,
                        r.diverged ? "  DIVERGED" : (r.stalled ? "  STALLED" : "")));
  }
  for (const Check& c : report.checks) {
    absl::StrAppend(&text, c.passed ? "  PASS  " : "  FAIL  ", c.name, ": ",
                    c.measured, "\n");
  }
  for (const std::string& note : report.notes) {
    absl::StrAppend(&text, "  note: ", note, "\n");
  }
  return text;
}

}  // namespace taups::sim

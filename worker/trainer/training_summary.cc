#include "worker/trainer/training_summary.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace taups::trainer {
namespace {

std::string Number(double x) {
  return std::isfinite(x) ? absl::StrFormat("%.6g", x) : "null";
}

// Model and device names are fixed identifiers; no escaping is needed, but
// quote them defensively by dropping characters JSON would need escaped.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out + "\"";
}

std::string GroupJson(const RowTauGroupStats& g) {
  return absl::StrCat("{\"count\":", g.count, ",\"zero\":",
                      Number(g.zero_share), ",\"mean\":", Number(g.mean),
                      ",\"p50\":", Number(g.p50), ",\"p99\":", Number(g.p99),
                      ",\"max\":", Number(g.max), "}");
}

}  // namespace

std::string TrainingSummary::ToJson() const {
  std::string json = absl::StrCat(
      "{\"model\":", Quoted(model), ",\"worker_id\":", worker_id,
      ",\"steps\":", steps, ",\"device\":", Quoted(device));
  const auto add = [&json](const char* key, std::optional<double> value) {
    if (value.has_value()) absl::StrAppend(&json, ",\"", key, "\":", Number(*value));
  };
  add("test_accuracy", test_accuracy);
  add("test_logloss", test_logloss);
  add("planted_logloss", planted_logloss);
  add("excess_logloss", excess_logloss);
  add("auc", auc);
  add("planted_auc", planted_auc);
  add("constant_logloss", constant_logloss);
  add("epochs", epochs);
  absl::StrAppend(&json, ",\"final_loss\":", Number(final_loss),
                  ",\"samples_per_sec\":", Number(samples_per_sec),
                  ",\"tau_mean\":", Number(tau_mean), ",\"tau_max\":", tau_max,
                  ",\"rejected_pushes\":", rejected_pushes,
                  ",\"pull_wait_ms\":", Number(pull_wait_ms),
                  ",\"push_raw_bytes\":", push_raw_bytes,
                  ",\"push_wire_bytes\":", push_wire_bytes);
  if (!evals.empty()) {
    absl::StrAppend(&json, ",\"evals\":[");
    for (size_t i = 0; i < evals.size(); ++i) {
      const CtrEvalRecord& e = evals[i];
      absl::StrAppend(&json, i > 0 ? "," : "", "{\"step\":", e.step,
                      ",\"epoch\":", Number(e.epoch),
                      ",\"logloss\":", Number(e.logloss),
                      ",\"excess_logloss\":", Number(e.excess_logloss),
                      ",\"auc\":", Number(e.auc), "}");
    }
    absl::StrAppend(&json, "]");
  }
  if (row_tau.has_value()) {
    absl::StrAppend(&json, ",\"row_tau\":{\"head_min_prob\":",
                    Number(row_tau->head_min_probability),
                    ",\"head_ids\":", row_tau->head_ids,
                    ",\"head\":", GroupJson(row_tau->head),
                    ",\"tail\":", GroupJson(row_tau->tail),
                    ",\"table\":", GroupJson(row_tau->table), "}");
  }
  if (client_events.has_value()) {
    const ClientEvents& events = *client_events;
    absl::StrAppend(&json, ",\"shard_restarts\":", events.total_restarts(),
                    ",\"shard_restarts_by_shard\":[",
                    absl::StrJoin(events.shard_restarts, ","),
                    "],\"updates_lost\":", events.total_updates_lost(),
                    ",\"updates_lost_by_shard\":[",
                    absl::StrJoin(events.updates_lost, ","),
                    "],\"rpc_retries\":", events.total_retries(),
                    ",\"rpc_retries_by\":[");
    for (size_t i = 0; i < events.retries.size(); ++i) {
      const RetryCount& r = events.retries[i];
      absl::StrAppend(&json, i > 0 ? "," : "", "{\"method\":", Quoted(std::string(RpcName(r.rpc))),
                      ",\"reason\":", Quoted(RetryReasonName(r.code)),
                      ",\"retries\":", r.retries, "}");
    }
    absl::StrAppend(&json, "],\"push_redos\":", events.total_redos(),
                    ",\"push_redos_by_shard\":[",
                    absl::StrJoin(events.push_redos, ","), "]");
  }
  return json + "}";
}

}  // namespace taups::trainer

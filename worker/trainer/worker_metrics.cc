#include "worker/trainer/worker_metrics.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "worker/src/client_events.h"

namespace taups::trainer {
namespace {

constexpr char kPushHelp[] =
    "Pushes of the table: sent to the shards, or deferred (added to the "
    "local accumulation only).";
constexpr char kPushBytesHelp[] =
    "Gradient bytes this worker pushed: raw (float32 size) and wire (as "
    "encoded and sent).";
constexpr char kPullBytesHelp[] =
    "Parameter bytes this worker pulled: raw (float32 size) and wire (as "
    "received).";

}  // namespace

WorkerMetrics::WorkerMetrics(uint32_t worker_id, Client* client)
    : worker_id_(worker_id),
      client_(client),
      tau_(Histogram::IntegerBounds(1024)),
      // 100 us to ~105 s: a pull that waits on a sync step or the SSP bound
      // takes as long as the slowest worker's step.
      pull_wait_(Histogram::ExponentialBounds(1e-4, 2, 120)) {}

void WorkerMetrics::WatchTable(const std::string& table) {
  absl::MutexLock lock(&mu_);
  if (std::find(tables_.begin(), tables_.end(), table) == tables_.end()) {
    tables_.push_back(table);
  }
}

void WorkerMetrics::RecordPull(const PullInfo& info) {
  absl::MutexLock lock(&mu_);
  pull_wait_.Add(absl::ToDoubleSeconds(info.elapsed));
}

void WorkerMetrics::RecordPush(const PushResult& result) {
  absl::MutexLock lock(&mu_);
  for (const ShardPushResult& shard : result.shards) {
    if (!shard.touched) continue;
    if (shard.duplicate) {
      ++answers_duplicate_;
    } else if (shard.accepted) {
      ++answers_accepted_;
      if (shard.lr_factor < 1.0f) ++downweighted_;
    } else {
      ++answers_rejected_;
    }
    tau_.Add(static_cast<double>(shard.tau));
  }
}

void WorkerMetrics::RecordStep(int examples) {
  absl::MutexLock lock(&mu_);
  ++steps_;
  examples_ += static_cast<uint64_t>(std::max(examples, 0));
}

void WorkerMetrics::Write(MetricsWriter& out) const {
  std::vector<std::string> tables;
  {
    absl::MutexLock lock(&mu_);
    tables = tables_;
    out.Gauge("taups_worker_info", "This worker's id.",
              {{"worker", absl::StrCat(worker_id_)}}, 1);
    out.Counter("taups_worker_steps_total", "Training steps finished.", {},
                steps_);
    out.Counter("taups_worker_examples_total",
                "Training examples consumed (rate(): samples per second).", {},
                examples_);
    const char* kAnswerHelp =
        "Shard answers to pushes (one per shard a push reached): accepted, "
        "rejected by the staleness policy or a limit, or duplicate (a resend "
        "the shard had applied already).";
    out.Counter("taups_worker_push_answers_total", kAnswerHelp,
                {{"result", "accepted"}}, answers_accepted_);
    out.Counter("taups_worker_push_answers_total", kAnswerHelp,
                {{"result", "rejected"}}, answers_rejected_);
    out.Counter("taups_worker_push_answers_total", kAnswerHelp,
                {{"result", "duplicate"}}, answers_duplicate_);
    out.Counter("taups_worker_push_downweighted_total",
                "Accepted shard answers whose gradient was scaled down for "
                "staleness.",
                {}, downweighted_);
    out.Histogram("taups_worker_staleness",
                  "Staleness (tau, in table versions) of each shard answer to "
                  "this worker's pushes.",
                  {}, tau_);
    out.Histogram("taups_worker_pull_wait_seconds",
                  "Time each step's first pull took, waits for the table's "
                  "policy (sync step, SSP bound) included.",
                  {}, pull_wait_);
  }
  if (client_ == nullptr) return;
  // Outside mu_: Transfers and EventsOf take the client's own locks.
  WriteClientEvents(out);
  for (const std::string& table : tables) {
    absl::StatusOr<TransferCounters> t = client_->Transfers(table);
    if (!t.ok()) continue;
    out.Counter("taups_worker_pulls_total", "Pulls of the table.",
                {{"table", table}}, t->pulls);
    // name, help, the sample's second label, its value
    const struct {
      const char* name;
      const char* help;
      std::pair<const char*, const char*> label;
      uint64_t value;
    } rows[] = {
        {"taups_worker_pushes_total", kPushHelp, {"result", "sent"}, t->pushes_sent},
        {"taups_worker_pushes_total", kPushHelp, {"result", "deferred"},
         t->pushes_deferred},
        {"taups_worker_push_bytes_total", kPushBytesHelp, {"form", "raw"},
         t->push_raw_bytes},
        {"taups_worker_push_bytes_total", kPushBytesHelp, {"form", "wire"},
         t->push_wire_bytes},
        {"taups_worker_pull_bytes_total", kPullBytesHelp, {"form", "raw"},
         t->pull_raw_bytes},
        {"taups_worker_pull_bytes_total", kPullBytesHelp, {"form", "wire"},
         t->pull_wire_bytes},
    };
    for (const auto& series : rows) {
      out.Counter(series.name, series.help,
                  {{"table", table}, {series.label.first, series.label.second}},
                  static_cast<double>(series.value));
    }
  }
}

void WorkerMetrics::WriteClientEvents(MetricsWriter& out) const {
  const std::optional<ClientEvents> events = EventsOf(*client_);
  if (!events.has_value()) return;
  // Counters kept per shard, one series each labelled with the shard.
  const struct {
    const char* name;
    const char* help;
    const std::vector<uint64_t>* by_shard;
  } per_shard[] = {
      {"taups_worker_shard_restarts_total",
       "Shard restarts this worker rode through (a shard answering with a "
       "new incarnation).",
       &events->shard_restarts},
      {"taups_worker_updates_lost_total",
       "Updates a restart of this shard lost, as this worker saw them: per "
       "table, the version it last saw before the restart minus the version "
       "the restored shard first answered.",
       &events->updates_lost},
      {"taups_worker_push_redos_total",
       "Pushes whose part for this shard it refused for not knowing the "
       "worker (restarted, or the lease ran out), sent again with a fresh "
       "seq after registering again.",
       &events->push_redos},
      {"taups_worker_heartbeat_failures_total",
       "Heartbeats to this shard that failed (down, hung past the "
       "heartbeat's deadline, or refused); the next round sends a fresh one.",
       &events->heartbeat_failures},
  };
  for (const auto& series : per_shard) {
    for (size_t s = 0; s < series.by_shard->size(); ++s) {
      out.Counter(series.name, series.help, {{"shard", absl::StrCat(s)}},
                  static_cast<double>((*series.by_shard)[s]));
    }
  }
  // The data calls' series exist from the start (at 0); any other retried
  // call joins them once it retried.
  std::map<std::pair<Rpc, absl::StatusCode>, uint64_t> retries;
  for (Rpc rpc : {Rpc::kPullDense, Rpc::kPushDense, Rpc::kPullSparse,
                  Rpc::kPushSparse}) {
    retries[{rpc, absl::StatusCode::kUnavailable}] = 0;
  }
  for (const RetryCount& r : events->retries) retries[{r.rpc, r.code}] = r.retries;
  for (const auto& [key, count] : retries) {
    out.Counter("taups_worker_rpc_retries_total",
                "Attempts this worker sent again, by call and by why the one "
                "before failed (unavailable: shard unreachable; "
                "deadline_exceeded: a push resent after its deadline).",
                {{"method", std::string(RpcName(key.first))},
                 {"reason", RetryReasonName(key.second)}},
                static_cast<double>(count));
  }
}

MetricsRegistry::Collector WorkerMetrics::Collector() const {
  return [this](MetricsWriter& out) { Write(out); };
}

}  // namespace taups::trainer

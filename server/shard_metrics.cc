#include "server/shard_metrics.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace taups {

namespace {

void WriteResourceMetrics(const ResourceStats& r, MetricsWriter& out) {
  out.Gauge("taups_memory_budget_bytes",
            "The shard's memory budget (--memory_budget_mb).", {}, r.budget_bytes);
  const char* kUsedHelp =
      "Bytes charged to the memory budget, by use: tables (values, optimizer "
      "state, sparse rows at their row limit), worker_state (per-worker "
      "bookkeeping, delay-compensation copies) and staged (slices of "
      "unfinished multi-slice pushes).";
  out.Gauge("taups_memory_used_bytes", kUsedHelp, {{"use", "tables"}},
            r.table_bytes);
  out.Gauge("taups_memory_used_bytes", kUsedHelp, {{"use", "worker_state"}},
            r.worker_state_bytes);
  out.Gauge("taups_memory_used_bytes", kUsedHelp, {{"use", "staged"}},
            r.staged_bytes);
  out.Counter("taups_memory_budget_refusals_total",
              "Tables and worker state refused because the budget was full.", {},
              r.budget_refusals);
  out.Gauge("taups_waiting_pulls",
            "Pulls waiting for their policy (sync step, SSP bound) now.", {},
            r.waiting_calls);
  const char* kWaitHelp =
      "Pulls that would have waited, refused past --max_waiting_per_worker "
      "(limit=per_worker) or --max_waiting_calls (limit=total).";
  out.Counter("taups_waiting_pulls_refused_total", kWaitHelp,
              {{"limit", "per_worker"}}, r.waiting_refused_per_worker);
  out.Counter("taups_waiting_pulls_refused_total", kWaitHelp,
              {{"limit", "total"}}, r.waiting_refused_total);
  out.Counter("taups_tables_dropped_total", "Tables dropped (DropTable).", {},
              r.tables_dropped);
}

}  // namespace

void WriteShardMetrics(const StoreStats& stats, const WireTraffic* traffic,
                       const BuildLabels& build, MetricsWriter& out) {
  WriteBuildInfoMetric({build.version, build.commit, build.build_type}, out);
  out.Gauge("taups_shard_info", "This shard's index and the shard count.",
            {{"shard", absl::StrCat(stats.shard_index)}}, 1);
  size_t live = 0, dead = 0, left = 0, awaited = 0;
  for (const WorkerStatus& w : stats.workers) {
    if (w.live) {
      ++live;
    } else if (w.awaited) {
      ++awaited;
    } else if (w.left) {
      ++left;
    } else {
      ++dead;
    }
  }
  const char* kWorkersHelp =
      "Registered workers by state: live (lease held), dead (lease expired), "
      "left (said goodbye), awaited (known to a restored checkpoint, not "
      "registered again yet).";
  out.Gauge("taups_workers", kWorkersHelp, {{"state", "live"}}, live);
  out.Gauge("taups_workers", kWorkersHelp, {{"state", "dead"}}, dead);
  out.Gauge("taups_workers", kWorkersHelp, {{"state", "left"}}, left);
  out.Gauge("taups_workers", kWorkersHelp, {{"state", "awaited"}}, awaited);
  out.Counter("taups_lease_expirations_total",
              "Workers declared dead because their lease ran out.", {},
              stats.lease_expirations);
  out.Counter("taups_nonfinite_gradients_total",
              "Pushes refused because a gradient held NaN or Inf.", {},
              stats.nonfinite_rejections);
  WriteResourceMetrics(stats.resources, out);
  for (const auto& [name, lost] : stats.updates_lost) {
    out.Gauge("taups_updates_lost",
              "Restored tables only: updates applied after the restored "
              "checkpoint that workers saw before the restart (0 until one "
              "registers again and reports more).",
              {{"table", name}}, lost);
  }

  for (const auto& [info, t] : stats.tables) {
    const MetricLabels table = {{"table", info.config.name}};
    out.Gauge("taups_table_version", "Updates applied to the table on this shard.",
              table, info.version);
    out.Gauge("taups_table_open_step",
              "sync/semi_sync: the step being gathered (0 for other policies).",
              table, info.open_step);
    const StalenessConfig& staleness = info.config.staleness;
    out.Gauge("taups_table_tau_max",
              "Largest tau a push may have before it is rejected (-1: no limit).",
              table,
              staleness.reject_above_tau_max ? static_cast<double>(staleness.tau_max)
                                             : -1.0);
    out.Gauge("taups_table_staleness_bound",
              "ssp: the bound s between worker clocks (-1 for other policies).",
              table,
              info.config.consistency.kind == ConsistencyKind::kSsp
                  ? static_cast<double>(info.config.consistency.staleness_bound)
                  : -1.0);
    out.Counter("taups_pushes_total", "Pushes stamped (accepted or not).", table,
                t.pushes);
    out.Counter("taups_push_rejected_total",
                "Pushes refused as too stale (tau above tau_max).", table,
                t.rejected);
    out.Counter("taups_push_downweighted_total",
                "Pushes applied with a learning rate scaled down by f(tau).",
                table, t.downweighted);
    out.Counter("taups_push_late_total",
                "Pushes for a sync/semi-sync step that had already closed.",
                table, t.late);
    out.Counter("taups_push_duplicates_total",
                "Pushes or slices seen before, answered again and not applied.",
                table, t.duplicates);
    out.Counter("taups_push_nonfinite_refused_total",
                "Updates refused because their result would not be finite.",
                table, t.nonfinite_refused);
    out.Histogram("taups_staleness",
                  "Staleness tau (versions) of the pushes, at arrival.", table,
                  t.tau);
    out.Histogram("taups_sparse_row_staleness",
                  "Per-row staleness of sparse pushes that carried row versions.",
                  table, t.row_tau);
    out.Counter("taups_steps_closed_total",
                "sync/semi_sync steps closed (each applies one mean update).",
                table, t.steps_closed);
    out.Counter("taups_step_timeout_closes_total",
                "semi_sync steps closed by the timeout rather than by quorum.",
                table, t.timeout_closes);
    out.Histogram("taups_step_wait_seconds",
                  "Time from a step opening to its closing.", table, t.step_wait_s);
    out.Gauge("taups_step_straggler_worker",
              "The worker whose arrival closed the last step (-1: none yet).",
              table, static_cast<double>(t.last_straggler));
    for (const auto& [worker, w] : t.workers) {
      out.Counter("taups_worker_closed_steps_total",
                  "Steps a worker's arrival closed: the straggler count.",
                  {{"table", info.config.name}, {"worker", absl::StrCat(worker)}},
                  w.closed_steps_as_last);
    }
    if (traffic != nullptr) {
      const TableTraffic bytes = traffic->Of(info.config.name);
      const char* kPushHelp =
          "Gradient bytes pushed: raw (float32 size) and as received.";
      const char* kPullHelp = "Parameter bytes pulled: raw and as sent.";
      out.Counter("taups_push_bytes_total", kPushHelp,
                  {{"table", info.config.name}, {"form", "raw"}},
                  bytes.push_raw_bytes);
      out.Counter("taups_push_bytes_total", kPushHelp,
                  {{"table", info.config.name}, {"form", "wire"}},
                  bytes.push_wire_bytes);
      out.Counter("taups_pull_bytes_total", kPullHelp,
                  {{"table", info.config.name}, {"form", "raw"}},
                  bytes.pull_raw_bytes);
      out.Counter("taups_pull_bytes_total", kPullHelp,
                  {{"table", info.config.name}, {"form", "wire"}},
                  bytes.pull_wire_bytes);
      out.Counter("taups_bad_blocks_total",
                  "Encoded blocks refused as malformed.", table, bytes.bad_blocks);
    }
    out.Gauge("taups_table_workers",
              "Workers with state in the table on this shard "
              "(--max_workers_per_table).",
              table, info.workers);
    out.Gauge("taups_table_budget_bytes",
              "What the table is charged to the shard's memory budget.", table,
              info.reserved_bytes);
    if (info.config.kind == TableKind::kDense) {
      out.Counter("taups_dense_block_copies_total",
                  "Blocks of 64 Ki values a push copied first because a pull "
                  "answer was still being sent from them.",
                  table, info.dense_block_copies);
    }
    if (info.config.kind == TableKind::kSparse) {
      out.Gauge("taups_sparse_rows", "Rows the sparse table holds on this shard.",
                table, info.sparse_rows);
      out.Gauge("taups_sparse_bytes", "Bytes the sparse rows' storage holds.",
                table, info.sparse_bytes);
      out.Gauge("taups_sparse_row_limit",
                "Rows allowed on this shard (0: unbounded).", table,
                info.sparse_row_limit);
      out.Counter("taups_sparse_evictions_total",
                  "Rows evicted to stay under the row limit.", table,
                  info.sparse_evictions);
      out.Counter("taups_sparse_ttl_expired_total",
                  "Rows removed after being idle for the ttl.", table,
                  info.sparse_ttl_expired);
      out.Counter("taups_sparse_admission_refused_total",
                  "Touches of keys not admitted yet.", table, info.sparse_refused);
    }
  }
}

void WritePullAnswerMetrics(const PullAnswerMemory& memory, MetricsWriter& out) {
  const char* kHelp =
      "Memory of large pull answers (not charged to the memory budget): "
      "in_flight holds answers being written or sent, kept is freed and "
      "waiting for the next answers (64 MiB at most), lent is dense table "
      "memory that pushes replaced while answers were still sending it.";
  out.Gauge("taups_pull_answer_bytes", kHelp, {{"state", "in_flight"}},
            static_cast<double>(memory.buffers_in_flight));
  out.Gauge("taups_pull_answer_bytes", kHelp, {{"state", "kept"}},
            static_cast<double>(memory.buffers_kept));
  out.Gauge("taups_pull_answer_bytes", kHelp, {{"state", "lent"}},
            static_cast<double>(memory.displaced_lent));
  out.Gauge("taups_pull_answers_in_flight_bytes",
            "Bytes of every pull answer made and not yet let go by gRPC "
            "(answers sent from a table's memory at their full size).",
            {}, static_cast<double>(memory.admitted));
  out.Gauge("taups_pull_answers_in_flight_limit_bytes",
            "The most taups_pull_answers_in_flight_bytes may reach "
            "(--max_pull_in_flight_mb; one answer alone always goes).",
            {}, static_cast<double>(memory.admitted_limit));
  out.Counter("taups_pull_answers_refused_total",
              "Pulls refused UNAVAILABLE because the answers in flight were "
              "at their limit (callers reading slowly, or too many pulls at "
              "once); the client library retries them.",
              {}, memory.refused);
}

MetricsRegistry::Collector ShardMetricsCollector(const ParameterStore* store,
                                                 const WireTraffic* traffic,
                                                 BuildLabels build) {
  return [store, traffic, build = std::move(build)](MetricsWriter& out) {
    WriteShardMetrics(store->Stats(), traffic, build, out);
  };
}

}  // namespace taups

// The shard's Prometheus series, written from the core's own figures
// (ParameterStore::Stats, the wire traffic counters) when /metrics is
// scraped. Names follow Prometheus' rules: base units, `_total` counters,
// `_seconds` histograms, one `table` label (never a key or a worker id as a
// label of a high-cardinality series: per-worker figures are limited to the
// registered workers).
//
// Series (all prefixed taups_):
//   build_info{version,commit,build_type}                      gauge 1
//   shard_info{shard}                                          gauge 1
//   workers{state=live|dead|left}                              gauge
//   lease_expirations_total                                    counter
//   nonfinite_gradients_total                                  counter
//   memory_budget_bytes, memory_used_bytes{use=tables|worker_state|staged}
//                                                              gauge
//   memory_budget_refusals_total                               counter
//   waiting_pulls                                              gauge
//   waiting_pulls_refused_total{limit=per_worker|total}        counter
//   tables_dropped_total                                       counter
//   table_workers{table}, table_budget_bytes{table}            gauge
//   table_version{table}, table_open_step{table}               gauge
//   table_tau_max{table}, table_staleness_bound{table}         gauge (-1: none)
//   pushes_total{table}, push_rejected_total{table},
//   push_downweighted_total{table}, push_late_total{table},
//   push_duplicates_total{table}, push_nonfinite_refused_total{table}
//                                                              counter
//   staleness{table}                                           histogram (tau)
//   sparse_row_staleness{table}                                histogram
//   steps_closed_total{table}, step_timeout_closes_total{table} counter
//   step_wait_seconds{table}                                   histogram
//   step_straggler_worker{table}                               gauge (-1: none yet)
//   worker_closed_steps_total{table,worker}                    counter
//   push_bytes_total{table,form=raw|wire}, pull_bytes_total{...} counter
//   bad_blocks_total{table}                                    counter
//   dense_block_copies_total{table}                            counter
//   sparse_rows{table}, sparse_bytes{table}, sparse_row_limit{table} gauge
//   sparse_evictions_total{table}, sparse_ttl_expired_total{table},
//   sparse_admission_refused_total{table}                      counter
//   pull_answer_bytes{state=in_flight|kept|lent}               gauge
//     (WritePullAnswerMetrics: the shard's answer buffers and the dense
//     table memory only answers still hold, outside the memory budget)
//   pull_answers_in_flight_bytes, pull_answers_in_flight_limit_bytes gauge
//   pull_answers_refused_total                                 counter
//     (every answer not yet let go, against --max_pull_in_flight_mb)
#ifndef TAUPS_SERVER_SHARD_METRICS_H_
#define TAUPS_SERVER_SHARD_METRICS_H_

#include <functional>

#include "common/metrics.h"
#include "server/parameter_store.h"
#include "server/wire_traffic.h"

namespace taups {

struct BuildLabels {
  std::string version;
  std::string commit;
  std::string build_type;
};

// Writes the series above for `stats` (and `traffic`, when given).
void WriteShardMetrics(const StoreStats& stats, const WireTraffic* traffic,
                       const BuildLabels& build, MetricsWriter& out);

// What the shard's pull answers hold, as WritePullAnswerMetrics exports it.
struct PullAnswerMemory {
  // The answer buffers (server/answer_buffers.h): bytes lent to answers
  // being written or sent, and bytes kept for the next ones.
  uint64_t buffers_in_flight = 0;
  uint64_t buffers_kept = 0;
  // Table blocks that only answers being sent still hold
  // (DisplacedLentBytes, server/lent_values.h).
  uint64_t displaced_lent = 0;
  // Every answer admitted and not yet let go, its bound, and the pulls
  // refused at it (server/answers_in_flight.h).
  uint64_t admitted = 0;
  uint64_t admitted_limit = 0;
  uint64_t refused = 0;
};
void WritePullAnswerMetrics(const PullAnswerMemory& memory, MetricsWriter& out);

// A collector for MetricsRegistry::Add reading `store` (and `traffic`) at
// each scrape; both must outlive the registry.
MetricsRegistry::Collector ShardMetricsCollector(const ParameterStore* store,
                                                 const WireTraffic* traffic,
                                                 BuildLabels build);

}  // namespace taups

#endif  // TAUPS_SERVER_SHARD_METRICS_H_

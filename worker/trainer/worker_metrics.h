// WorkerMetrics: what one ps_worker saw of the cluster while training,
// exposed as Prometheus series (ps_worker --metrics_port) through the same
// MetricsRegistry and MetricsHttpServer the shards use.
//
// The training loop records each pull, push and step; a scrape reads the
// figures, plus the bytes the client moved per table (Client::Transfers),
// at that moment. Names follow Prometheus' rules: base units, `_total`
// counters, `_seconds` histograms, only `table` / `result` / `form` /
// `shard` / `method` / `reason` labels. The restarts and retries come from
// the client (EventsOf: the library's own client only).
//
// Series (besides taups_build_info{version,commit,build_type}):
//   taups_worker_info{worker}                                   gauge 1
//   taups_worker_steps_total, taups_worker_examples_total       counter
//   taups_worker_push_answers_total{result=accepted|rejected|duplicate}
//                                 (one per shard a push reached) counter
//   taups_worker_push_downweighted_total                        counter
//   taups_worker_staleness       (tau of each shard answer)      histogram
//   taups_worker_pull_wait_seconds (each step's timed pull, policy waits
//                                 included)                     histogram
//   taups_worker_shard_restarts_total{shard} (a shard answering with a new
//                                 incarnation: restarts ridden through) counter
//   taups_worker_updates_lost_total{shard} (versions a restart took its
//                                 tables back, as this worker saw them) counter
//   taups_worker_push_redos_total{shard} (push parts that shard refused
//                                 for not knowing the worker, redone with a
//                                 fresh seq after registering again) counter
//   taups_worker_heartbeat_failures_total{shard} (heartbeats that failed:
//                                 the shard down, hung or refusing) counter
//   taups_worker_rpc_retries_total{method,reason=unavailable|
//                                 deadline_exceeded} (attempts sent again;
//                                 the four data calls' unavailable series
//                                 always, the rest once non-zero)   counter
//   taups_worker_pulls_total{table}                             counter
//   taups_worker_pushes_total{table,result=sent|deferred}       counter
//   taups_worker_push_bytes_total{table,form=raw|wire},
//   taups_worker_pull_bytes_total{table,form=raw|wire}          counter
//
// Thread-safe: the training thread records while the HTTP thread scrapes.
#ifndef TAUPS_WORKER_TRAINER_WORKER_METRICS_H_
#define TAUPS_WORKER_TRAINER_WORKER_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/histogram.h"
#include "common/metrics.h"
#include "taups/client.h"

namespace taups::trainer {

class WorkerMetrics {
 public:
  // `client` (may be null: no byte series) must outlive every scrape.
  WorkerMetrics(uint32_t worker_id, Client* client);

  // Byte series are written for the tables named here (the trainer's).
  void WatchTable(const std::string& table) ABSL_LOCKS_EXCLUDED(mu_);
  void RecordPull(const PullInfo& info) ABSL_LOCKS_EXCLUDED(mu_);
  void RecordPush(const PushResult& result) ABSL_LOCKS_EXCLUDED(mu_);
  void RecordStep(int examples) ABSL_LOCKS_EXCLUDED(mu_);

  // Writes the series above as they stand now.
  void Write(MetricsWriter& out) const ABSL_LOCKS_EXCLUDED(mu_);
  // A collector for MetricsRegistry::Add; `this` must outlive the registry.
  MetricsRegistry::Collector Collector() const;

 private:
  // The client's shard restarts and retries (client_ not null).
  void WriteClientEvents(MetricsWriter& out) const;

  const uint32_t worker_id_;
  Client* const client_;

  // Everything below is guarded by mu_.
  mutable absl::Mutex mu_;
  std::vector<std::string> tables_ ABSL_GUARDED_BY(mu_);
  uint64_t steps_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t examples_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t answers_accepted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t answers_rejected_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t answers_duplicate_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t downweighted_ ABSL_GUARDED_BY(mu_) = 0;
  Histogram tau_ ABSL_GUARDED_BY(mu_);
  Histogram pull_wait_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_WORKER_METRICS_H_

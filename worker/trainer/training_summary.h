// The one-line JSON summary ps_worker prints on stdout when training ends.
//
// Plain value type; no thread-safety concerns.
#ifndef TAUPS_WORKER_TRAINER_TRAINING_SUMMARY_H_
#define TAUPS_WORKER_TRAINER_TRAINING_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "worker/src/client_events.h"

namespace taups::trainer {

// One evaluation of a ctr model during training.
struct CtrEvalRecord {
  int64_t step = 0;     // steps this worker had done
  double epoch = 0.0;   // passes over this worker's shard of the training set
  double logloss = 0.0;
  double excess_logloss = 0.0;  // logloss - planted (Bayes) logloss
  double auc = 0.0;
};

// Staleness of one group of measurements (ps_worker --row_tau): how many,
// the share of them that was 0, their mean, p50, p99 and max.
struct RowTauGroupStats {
  uint64_t count = 0;
  double zero_share = 0.0;
  double mean = 0.0;
  double p50 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
};

// Per-row τ of the ctr embedding pushes, head ids vs tail ids, and the
// table-level τ of the same pushes (see head_tail_row_tau.h).
struct RowTauSummary {
  double head_min_probability = 0.0;  // an id is head at or above this
  uint64_t head_ids = 0;              // head ids over all fields
  RowTauGroupStats head;   // one value per (push, distinct head row)
  RowTauGroupStats tail;   // one value per (push, distinct tail row)
  RowTauGroupStats table;  // one value per (push, touched shard)
};

struct TrainingSummary {
  std::string model;   // "mlp" | "ctr"
  uint32_t worker_id = 0;
  int64_t steps = 0;
  std::string device;  // "cpu" | "cuda"
  double final_loss = 0.0;  // mean training loss of the last log window
  double samples_per_sec = 0.0;
  double tau_mean = 0.0;
  uint64_t tau_max = 0;
  int64_t rejected_pushes = 0;  // shard answers with accepted=false
  double pull_wait_ms = 0.0;    // mean time per pull, waits included
  // Gradient bytes pushed (all tables): float32 size, and as sent.
  uint64_t push_raw_bytes = 0;
  uint64_t push_wire_bytes = 0;
  // mlp
  std::optional<double> test_accuracy;
  // ctr
  std::optional<double> test_logloss;
  std::optional<double> planted_logloss;
  std::optional<double> excess_logloss;
  std::optional<double> auc;
  std::optional<double> planted_auc;
  std::optional<double> constant_logloss;  // best constant predictor
  std::optional<double> epochs;            // passes over the worker's shard
  std::vector<CtrEvalRecord> evals;        // in step order; last = final
  std::optional<RowTauSummary> row_tau;    // ctr with --row_tau
  // What the client rode through (shard restarts, retries); set when the
  // client is the library's own (EventsOf). The shards send no count of the
  // updates a restart lost (each shard logs its own); this is what the
  // worker can know.
  std::optional<ClientEvents> client_events;

  // One line of JSON, no trailing newline; optional fields only when set,
  // "evals" (an array of objects) only when not empty; "row_tau" (an object
  // with head_min_prob, head_ids and head / tail / table objects of count,
  // zero (share of τ = 0), mean, p50, p99, max) only when set.
  // With client_events: "shard_restarts" (total), "shard_restarts_by_shard"
  // (an array indexed by shard), "updates_lost" (total) and
  // "updates_lost_by_shard" (versions a restart took a table back, as this
  // worker saw them), "rpc_retries" (total), "rpc_retries_by"
  // (an array of {"method","reason","retries"}), "push_redos" (total) and
  // "push_redos_by_shard" (pushes a shard refused for not knowing the
  // worker, redone with a fresh seq).
  // Non-finite numbers are written as null.
  std::string ToJson() const;
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_TRAINING_SUMMARY_H_

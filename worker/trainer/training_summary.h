// The one-line JSON summary ps_worker prints on stdout when training ends.
//
// Plain value type; no thread-safety concerns.
#ifndef TAUPS_WORKER_TRAINER_TRAINING_SUMMARY_H_
#define TAUPS_WORKER_TRAINER_TRAINING_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taups::trainer {

// One evaluation of a ctr model during training.
struct CtrEvalRecord {
  int64_t step = 0;     // steps this worker had done
  double epoch = 0.0;   // passes over this worker's shard of the training set
  double logloss = 0.0;
  double excess_logloss = 0.0;  // logloss - planted (Bayes) logloss
  double auc = 0.0;
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

  // One line of JSON, no trailing newline; optional fields only when set,
  // "evals" (an array of objects) only when not empty.
  // Non-finite numbers are written as null.
  std::string ToJson() const;
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_TRAINING_SUMMARY_H_

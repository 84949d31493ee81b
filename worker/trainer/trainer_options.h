// Settings of one ps_worker training run. Filled from flags in worker_main.cc
// (and directly by tests); validated once with Validate().
//
// Plain value type; no thread-safety concerns.
#ifndef TAUPS_WORKER_TRAINER_TRAINER_OPTIONS_H_
#define TAUPS_WORKER_TRAINER_TRAINER_OPTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/trainer/fashion_mnist.h"

namespace taups::trainer {

enum class ModelKind { kMlp, kCtr };

// "mlp" | "ctr"; INVALID_ARGUMENT otherwise.
absl::StatusOr<ModelKind> ParseModelKind(std::string_view text);
std::string_view ModelKindName(ModelKind kind);

// Server-side learning rates used when TrainerOptions::learning_rate is 0.
inline constexpr float kDefaultMlpLearningRate = 0.2f;  // SGD
inline constexpr float kDefaultCtrLearningRate = 0.05f;  // Adagrad

struct TrainerOptions {
  ModelKind model = ModelKind::kMlp;
  uint32_t worker_id = 0;    // < num_workers
  uint32_t num_workers = 1;  // workers sharing the training set
  int64_t steps = 500;       // pull-compute-push steps this worker runs
  int batch_size = 64;       // examples per step
  // The tables' server-side learning rate; 0 = the model's default above.
  // Every worker must pass the same value (it is part of the table config).
  float learning_rate = 0.0f;
  uint64_t seed = 1;         // data order, synthetic data, table init
  int64_t log_every = 100;   // steps between progress lines; 0 = never
  std::string data_dir = kDefaultFashionMnistDir;  // mlp only
  // Create the tables (idempotent for identical configs); when false, wait up
  // to `table_wait` for another worker to create them.
  bool create_tables = true;
  absl::Duration table_wait = absl::Seconds(60);
  int64_t eval_examples = 0;  // test examples to evaluate; 0 = all

  // The learning rate actually used (resolves 0 to the model's default).
  float EffectiveLearningRate() const;
  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_TRAINER_OPTIONS_H_

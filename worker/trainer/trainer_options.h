// Settings of one ps_worker training run. Filled from flags in worker_main.cc
// (and directly by tests); validated once with Validate().
//
// Plain value type; no thread-safety concerns.
#ifndef TAUPS_WORKER_TRAINER_TRAINER_OPTIONS_H_
#define TAUPS_WORKER_TRAINER_TRAINER_OPTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taups/compression.h"
#include "taups/table_config.h"
#include "worker/trainer/fashion_mnist.h"

namespace taups::trainer {

class WorkerMetrics;

enum class ModelKind { kMlp, kCtr };

// "mlp" | "ctr"; INVALID_ARGUMENT otherwise.
absl::StatusOr<ModelKind> ParseModelKind(std::string_view text);
std::string_view ModelKindName(ModelKind kind);

// Server-side learning rates used when TrainerOptions::learning_rate is 0.
inline constexpr float kDefaultMlpLearningRate = 0.2f;  // SGD
inline constexpr float kDefaultCtrLearningRate = 0.1f;  // Adagrad
// Smallest factor of the mlp learning-rate decay (see lr_decay).
inline constexpr float kMinLrDecayFactor = 0.05f;
// Batch sizes used when TrainerOptions::batch_size is 0.
inline constexpr int kDefaultMlpBatchSize = 64;
inline constexpr int kDefaultCtrBatchSize = 256;
// ctr defaults (see TrainerOptions).
inline constexpr int kDefaultCtrEmbeddingDim = 16;
inline constexpr int64_t kDefaultCtrExamples = 1000000;
// Learning-rate warm-up that ps_worker gives the model's tables when
// --warmup_versions is not set, in steps of each worker. Under async and SSP
// every worker's push is one version of a table shard, so the tables warm up
// over steps x num_workers versions (StalenessConfig::warmup_versions);
// under sync and semi-sync a step is one version, so over `steps`. The DLRM
// needs one: its first Adagrad steps move every weight by about the learning
// rate, once per worker, and without a warm-up about a third of asynchronous
// runs (2 shards x 4 workers, lr 0.1) stalled near AUC 0.64 from the first
// 200 steps on, against 0.73 at step 300 for the rest; with 400 versions
// (100 steps of each worker) none did in 12 runs.
inline constexpr uint64_t kDefaultMlpWarmupStepsPerWorker = 0;
inline constexpr uint64_t kDefaultCtrWarmupStepsPerWorker = 100;
uint64_t DefaultWarmupVersions(ModelKind model, ConsistencyKind consistency,
                               uint32_t num_workers);
// ctr --row_tau: an id in at least 1 of 256 examples is a head id.
inline constexpr double kDefaultRowTauHeadMinProbability = 1.0 / 256.0;

// ctr: bounded memory of the embedding table on each shard; the fields of
// the same names (sparse_*) in TableConfig, which says what each does. The
// defaults leave the table unbounded and admit every key.
struct EmbeddingMemoryOptions {
  uint64_t max_rows = 0;
  uint64_t max_bytes = 0;
  SparseEvictionKind eviction = SparseEvictionKind::kLru;
  double ttl_s = 0.0;
  uint32_t admit_after = 0;
  float admit_probability = 1.0f;

  // True when any field differs from its default.
  bool IsSet() const;
  // Copies the fields into `config`'s sparse_* fields.
  void ApplyTo(TableConfig& config) const;
};

struct TrainerOptions {
  ModelKind model = ModelKind::kMlp;
  uint32_t worker_id = 0;    // < num_workers
  uint32_t num_workers = 1;  // workers sharing the training set
  int64_t steps = 500;       // pull-compute-push steps this worker runs
  int batch_size = 0;        // examples per step; 0 = the model's default
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
  // mlp: scale each pushed gradient by LrDecayFactor(step), so the effective
  // learning rate decays linearly over `steps` while the server's SGD rate
  // stays constant (the server has no schedule). The final parameters are
  // then far less noisy than with a constant rate.
  bool lr_decay = true;
  // The tables' consistency policy and staleness treatment (every worker
  // must pass the same; they are part of the table config).
  ConsistencyConfig consistency;
  StalenessConfig staleness;
  // Worker-side compression of the dense table's pushes and pulls (mlp; ctr
  // uses its codecs for every table but error feedback and accumulation only
  // for the dense one). With accumulate_steps > 1 the worker's clock moves
  // once per push actually sent.
  CompressionConfig compression;
  // ctr only. Width of every embedding row (and of the bottom MLP's output).
  int embedding_dim = kDefaultCtrEmbeddingDim;
  // Size of the synthetic training set; worker w of W trains on the examples
  // i < ctr_examples with i % W == w, reshuffled every epoch.
  int64_t ctr_examples = kDefaultCtrExamples;
  // Hidden-layer widths of the DLRM's bottom and top MLPs.
  std::vector<int> ctr_bottom_mlp = {32};
  std::vector<int> ctr_top_mlp = {64};
  // Steps between evaluations on the eval set; 0 = only when an epoch over
  // this worker's shard ends and after the last step (both happen anyway).
  int64_t eval_every = 0;
  // ctr only. Pull embedding rows with their row versions and report the
  // per-row τ of the embedding pushes, head ids against tail ids (an id is
  // head when its probability per example is at least
  // row_tau_head_min_probability; see head_tail_row_tau.h).
  bool row_tau = false;
  double row_tau_head_min_probability = kDefaultRowTauHeadMinProbability;
  // ctr only. Pull the next batch's embedding rows while the current batch
  // computes, as early as the tables' consistency policy allows
  // (ctr_batch_feed.h); off: at the start of each step.
  bool prefetch = true;
  // ctr only (INVALID_ARGUMENT for mlp when set). The shards check the
  // values when the table is created.
  EmbeddingMemoryOptions embedding_memory;
  // Straggler demonstration: after computing each step's gradient, stall for
  // (slowdown - 1) times the time the computation took. 1 = no stall.
  double slowdown = 1.0;
  // Where the training loop also records its pulls, pushes and steps for
  // Prometheus (ps_worker --metrics_port); not owned, null: nowhere.
  WorkerMetrics* metrics = nullptr;

  // The learning rate actually used (resolves 0 to the model's default).
  float EffectiveLearningRate() const;
  // The batch size actually used (resolves 0 to the model's default).
  int EffectiveBatchSize() const;
  // 1 - step / steps, floored at kMinLrDecayFactor, for step in [0, steps);
  // 1 when lr_decay is off or the model is not mlp.
  float LrDecayFactor(int64_t step) const;
  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_TRAINER_OPTIONS_H_

#include "worker/trainer/ctr_trainer.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"
#include "worker/trainer/binary_metrics.h"
#include "worker/trainer/deterministic_rng.h"
#include "worker/trainer/status_context.h"
#include "worker/trainer/table_setup.h"
#include "worker/trainer/training_progress.h"

namespace taups::trainer {
namespace {

constexpr uint64_t kTrainStream = 0x747261696e;  // "train"
constexpr uint64_t kTestStream = 0x74657374;     // "test"
constexpr int kEvalChunk = 4096;

void KeysOf(const CtrExamples& examples, std::vector<uint64_t>& keys) {
  const int fields = examples.num_fields;
  keys.resize(examples.ids.size());
  for (size_t i = 0; i < examples.ids.size(); ++i) {
    keys[i] = EmbeddingKey(static_cast<int>(i % fields), examples.ids[i]);
  }
}

// AUC of a window of training predictions; NaN while only one class is in.
double WindowAuc(const std::vector<float>& scores,
                 const std::vector<float>& labels) {
  absl::StatusOr<double> auc = Auc(scores, labels);
  return auc.ok() ? *auc : std::nan("");
}

struct CtrEvaluation {
  double logloss = 0.0;
  double planted_logloss = 0.0;
  double auc = 0.0;
  double planted_auc = 0.0;
};

absl::StatusOr<CtrEvaluation> Evaluate(Client& client, CtrModel& model,
                                       absl::Span<const float> dense,
                                       const CtrExamples& test) {
  const int dim = model.shape().embedding_dim;
  const int fields = test.num_fields;
  std::vector<float> probs(test.size());
  std::vector<uint64_t> keys;
  std::vector<float> rows;
  CtrExamples chunk;
  for (int start = 0; start < test.size(); start += kEvalChunk) {
    const int count = std::min(kEvalChunk, test.size() - start);
    chunk.num_fields = fields;
    chunk.ids.assign(test.ids.begin() + static_cast<size_t>(start) * fields,
                     test.ids.begin() + static_cast<size_t>(start + count) * fields);
    KeysOf(chunk, keys);
    rows.resize(keys.size() * dim);
    absl::StatusOr<PullInfo> pulled =
        client.PullSparse(kCtrEmbeddingTableName, keys, absl::MakeSpan(rows));
    if (!pulled.ok()) return WithContext(pulled.status(), "eval PullSparse");
    RETURN_IF_ERROR(
        model.Predict(dense, rows, absl::MakeSpan(probs).subspan(start, count)));
  }
  CtrEvaluation eval;
  ASSIGN_OR_RETURN(eval.logloss, LogLoss(probs, test.labels));
  ASSIGN_OR_RETURN(eval.planted_logloss, LogLoss(test.planted_probs, test.labels));
  ASSIGN_OR_RETURN(eval.auc, Auc(probs, test.labels));
  ASSIGN_OR_RETURN(eval.planted_auc, Auc(test.planted_probs, test.labels));
  return eval;
}

}  // namespace

CtrSpec DefaultCtrSpec(uint64_t seed) {
  CtrSpec spec;
  spec.seed = seed;
  return spec;
}

CtrModelShape DefaultCtrModelShape() {
  CtrModelShape shape;
  shape.num_fields = DefaultCtrSpec(0).num_fields();
  return shape;
}

TableConfig CtrDenseTableConfig(const TrainerOptions& options) {
  TableConfig config = TableConfig::Dense(
      kCtrDenseTableName, DefaultCtrModelShape().num_dense_params());
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.optimizer.learning_rate = options.EffectiveLearningRate();
  config.optimizer.adagrad_initial_accumulator = kCtrAdagradInitialAccumulator;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = kCtrDenseInitScale;
  config.initializer.seed = options.seed;
  config.consistency = options.consistency;
  config.staleness = options.staleness;
  return config;
}

TableConfig CtrEmbeddingTableConfig(const TrainerOptions& options) {
  TableConfig config = TableConfig::Sparse(
      kCtrEmbeddingTableName, DefaultCtrModelShape().embedding_dim);
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.optimizer.learning_rate = options.EffectiveLearningRate();
  config.optimizer.adagrad_initial_accumulator = kCtrAdagradInitialAccumulator;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = kCtrEmbeddingInitScale;
  config.initializer.seed = options.seed;
  config.consistency = options.consistency;
  config.staleness = options.staleness;
  return config;
}

absl::StatusOr<TrainingSummary> RunCtrTraining(Client& client,
                                               MathBackend& backend,
                                               const TrainerOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(CtrDataGenerator generator,
                   CtrDataGenerator::Create(DefaultCtrSpec(options.seed)));
  const TableConfig dense_config = CtrDenseTableConfig(options);
  const TableConfig sparse_config = CtrEmbeddingTableConfig(options);
  RETURN_IF_ERROR(EnsureTable(client, dense_config, options.create_tables,
                              options.table_wait));
  RETURN_IF_ERROR(EnsureTable(client, sparse_config, options.create_tables,
                              options.table_wait));

  const CtrModelShape shape = DefaultCtrModelShape();
  const int batch = options.EffectiveBatchSize();
  const int input = shape.input();
  spdlog::info("ctr worker {}/{}: {} fields, embedding dim {}, dense table "
               "'{}' ({} floats), sparse table '{}', Adagrad lr {}, device {}",
               options.worker_id, options.num_workers, shape.num_fields,
               shape.embedding_dim, dense_config.name,
               dense_config.dense_size, sparse_config.name,
               dense_config.optimizer.learning_rate, backend.description());

  CtrModel model(shape, &backend);
  std::vector<float> dense(shape.num_dense_params());
  std::vector<float> dense_grad(dense.size());
  std::vector<float> rows(static_cast<size_t>(batch) * input);
  std::vector<float> row_grad(rows.size());
  std::vector<float> probs(batch);
  std::vector<uint64_t> keys;
  std::vector<float> window_scores, window_labels;
  CtrExamples examples;
  Rng train_rng(MixSeed(options.seed, {kTrainStream, options.worker_id}));
  TrainingProgress progress("ctr", options.worker_id, options.log_every,
                            absl::Now());

  for (int64_t step = 0; step < options.steps; ++step) {
    examples.Clear();
    generator.Generate(batch, train_rng, examples);
    KeysOf(examples, keys);
    const std::string where = absl::StrCat("step ", step);
    // Both pulls in flight at once; the spans outlive the futures.
    std::future<absl::StatusOr<PullInfo>> dense_future =
        client.PullDenseAsync(dense_config.name, absl::MakeSpan(dense));
    absl::StatusOr<PullInfo> sparse_pull =
        client.PullSparse(sparse_config.name, keys, absl::MakeSpan(rows));
    absl::StatusOr<PullInfo> dense_pull = dense_future.get();
    if (!sparse_pull.ok()) {
      return WithContext(sparse_pull.status(), where + ": PullSparse");
    }
    if (!dense_pull.ok()) {
      return WithContext(dense_pull.status(), where + ": PullDense");
    }
    progress.RecordPull(*dense_pull);
    const absl::Time compute_start = absl::Now();
    ASSIGN_OR_RETURN(double loss,
                     model.LossAndGradient(dense, rows, examples.labels,
                                           absl::MakeSpan(probs),
                                           absl::MakeSpan(dense_grad),
                                           absl::MakeSpan(row_grad)));
    if (!std::isfinite(loss)) {
      return absl::InternalError(absl::StrCat(
          where, ": training loss is ", loss, " (diverged; try a lower --lr)"));
    }
    StallForSlowdown(options.slowdown, absl::Now() - compute_start);
    std::future<absl::StatusOr<PushResult>> dense_push =
        client.PushDenseAsync(dense_config.name, dense_grad, &*dense_pull);
    absl::StatusOr<PushResult> sparse_push = client.PushSparse(
        sparse_config.name, keys, row_grad, &*sparse_pull);
    absl::StatusOr<PushResult> dense_pushed = dense_push.get();
    if (!sparse_push.ok()) {
      return WithContext(sparse_push.status(), where + ": PushSparse");
    }
    if (!dense_pushed.ok()) {
      return WithContext(dense_pushed.status(), where + ": PushDense");
    }
    client.Clock();  // both tables pushed: the step is done
    progress.RecordPush(*dense_pushed);
    progress.RecordPush(*sparse_push);
    progress.RecordStep(batch, loss);
    window_scores.insert(window_scores.end(), probs.begin(), probs.end());
    window_labels.insert(window_labels.end(), examples.labels.begin(),
                         examples.labels.end());
    if (progress.ShouldLog()) {
      progress.LogWindow("train_auc", WindowAuc(window_scores, window_labels),
                         absl::Now());
      window_scores.clear();
      window_labels.clear();
    }
  }
  const absl::Time train_end = absl::Now();

  CtrExamples test;
  Rng test_rng(MixSeed(options.seed, {kTestStream}));
  const int test_n = options.eval_examples > 0
                         ? static_cast<int>(std::min<int64_t>(
                               options.eval_examples, 1 << 24))
                         : kCtrDefaultTestExamples;
  generator.Generate(test_n, test_rng, test);
  absl::StatusOr<PullInfo> final_pull =
      client.PullDense(dense_config.name, absl::MakeSpan(dense));
  if (!final_pull.ok()) {
    return WithContext(final_pull.status(), "final PullDense");
  }
  ASSIGN_OR_RETURN(CtrEvaluation eval, Evaluate(client, model, dense, test));
  spdlog::info("ctr worker {}: test logloss {:.5f} (planted {:.5f}, excess "
               "{:.5f}), AUC {:.4f} (planted {:.4f}) on {} examples",
               options.worker_id, eval.logloss, eval.planted_logloss,
               eval.logloss - eval.planted_logloss, eval.auc, eval.planted_auc,
               test.size());

  TrainingSummary summary;
  summary.model = "ctr";
  summary.worker_id = options.worker_id;
  summary.steps = progress.steps();
  summary.device = std::string(backend.name());
  summary.final_loss = progress.recent_loss();
  summary.samples_per_sec = progress.samples_per_sec(train_end);
  summary.tau_mean = progress.tau().mean();
  summary.tau_max = progress.tau().max();
  summary.rejected_pushes = progress.tau().rejected();
  summary.pull_wait_ms = absl::ToDoubleMilliseconds(progress.mean_pull_wait());
  summary.test_logloss = eval.logloss;
  summary.planted_logloss = eval.planted_logloss;
  summary.excess_logloss = eval.logloss - eval.planted_logloss;
  summary.auc = eval.auc;
  summary.planted_auc = eval.planted_auc;
  return summary;
}

}  // namespace taups::trainer

#include "worker/trainer/ctr_trainer.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"
#include "worker/trainer/binary_metrics.h"
#include "worker/trainer/ctr_batch_feed.h"
#include "worker/trainer/ctr_evaluation.h"
#include "worker/trainer/deterministic_rng.h"
#include "worker/trainer/head_tail_row_tau.h"
#include "worker/trainer/shard_sampler.h"
#include "worker/trainer/status_context.h"
#include "worker/trainer/table_setup.h"
#include "worker/trainer/training_progress.h"

namespace taups::trainer {
namespace {

constexpr uint64_t kOrderStream = 0x6f72646572;  // "order"

// AUC of a window of training predictions; NaN while only one class is in.
double WindowAuc(const std::vector<float>& scores,
                 const std::vector<float>& labels) {
  absl::StatusOr<double> auc = Auc(scores, labels);
  return auc.ok() ? *auc : std::nan("");
}

// The embedding table gets the same codecs; error feedback and
// accumulation are per-table dense state, so they stay with the dense table.
CompressionConfig SparseCompression(const CompressionConfig& dense) {
  CompressionConfig sparse = dense;
  sparse.error_feedback = false;
  sparse.accumulate_steps = 1;
  return sparse;
}

}  // namespace

CtrSpec DefaultCtrSpec(uint64_t seed) {
  CtrSpec spec;
  spec.seed = seed;
  return spec;
}

CtrModelShape CtrModelShapeFor(const TrainerOptions& options) {
  const CtrSpec spec = DefaultCtrSpec(options.seed);
  CtrModelShape shape;
  shape.num_dense = spec.num_dense();
  shape.num_fields = spec.num_fields();
  shape.embedding_dim = options.embedding_dim;
  shape.bottom_hidden = options.ctr_bottom_mlp;
  shape.top_hidden = options.ctr_top_mlp;
  return shape;
}

TableConfig CtrDenseTableConfig(const TrainerOptions& options) {
  TableConfig config = TableConfig::Dense(
      kCtrDenseTableName, CtrModelShapeFor(options).num_dense_params());
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
      kCtrEmbeddingTableName, static_cast<uint32_t>(options.embedding_dim));
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.optimizer.learning_rate = options.EffectiveLearningRate();
  config.optimizer.adagrad_initial_accumulator = kCtrAdagradInitialAccumulator;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = kCtrEmbeddingInitScale;
  config.initializer.seed = options.seed;
  config.consistency = options.consistency;
  config.staleness = options.staleness;
  options.embedding_memory.ApplyTo(config);
  return config;
}

absl::StatusOr<TrainingSummary> RunCtrTraining(Client& client,
                                               MathBackend& backend,
                                               const TrainerOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const CtrModelShape shape = CtrModelShapeFor(options);
  RETURN_IF_ERROR(shape.Validate());
  ASSIGN_OR_RETURN(CtrDataGenerator generator,
                   CtrDataGenerator::Create(DefaultCtrSpec(options.seed)));
  ASSIGN_OR_RETURN(
      ShardSampler sampler,
      ShardSampler::Create(static_cast<int>(options.ctr_examples),
                           options.worker_id, options.num_workers,
                           MixSeed(options.seed, {kOrderStream})));
  // Read once: the batch feed's thread advances the sampler from here on.
  const int shard_size = sampler.shard_size();
  const TableConfig dense_config = CtrDenseTableConfig(options);
  const TableConfig sparse_config = CtrEmbeddingTableConfig(options);
  RETURN_IF_ERROR(EnsureTable(client, dense_config, options.create_tables,
                              options.table_wait));
  RETURN_IF_ERROR(EnsureTable(client, sparse_config, options.create_tables,
                              options.table_wait));
  RETURN_IF_ERROR(client.SetCompression(dense_config.name, options.compression));
  RETURN_IF_ERROR(client.SetCompression(
      sparse_config.name, SparseCompression(options.compression)));

  CtrExamples eval_set;
  const int eval_n = options.eval_examples > 0
                         ? static_cast<int>(std::min<int64_t>(
                               options.eval_examples, 1 << 24))
                         : kCtrDefaultTestExamples;
  generator.AppendRange(CtrSplit::kEval, 0, eval_n, eval_set);

  const int batch = options.EffectiveBatchSize();
  spdlog::info(
      "ctr worker {}/{}: DLRM, {} dense features, {} fields, embedding dim "
      "{}, dense table '{}' ({} floats), sparse table '{}', Adagrad lr {} "
      "(warm-up over {} updates per table shard), {} training examples ({} "
      "in this worker's shard), {} eval examples, device {}",
      options.worker_id, options.num_workers, shape.num_dense,
      shape.num_fields, shape.embedding_dim, dense_config.name,
      dense_config.dense_size, sparse_config.name,
      dense_config.optimizer.learning_rate,
      dense_config.staleness.warmup_versions, options.ctr_examples,
      shard_size, eval_n, backend.description());

  // --row_tau: pull rows with their versions, sort the pushes' per-row τ
  // into head and tail ids.
  std::optional<HeadTailRowTau> row_tau;
  SparsePullOptions sparse_pull_options;
  if (options.row_tau) {
    ASSIGN_OR_RETURN(std::vector<uint32_t> cutoffs,
                     HeadRankCutoffs(generator.spec().schema,
                                     options.row_tau_head_min_probability));
    row_tau.emplace(std::move(cutoffs), options.row_tau_head_min_probability);
    sparse_pull_options.row_versions = true;
    spdlog::info(
        "ctr worker {}: per-row tau on; {} head ids (in >= {:.3g} of "
        "examples), the rest tail",
        options.worker_id, row_tau->head_ids(),
        options.row_tau_head_min_probability);
  }

  CtrModel model(shape, &backend);
  std::vector<float> dense(shape.num_dense_params());
  std::vector<float> dense_grad(dense.size());
  std::vector<float> row_grad(static_cast<size_t>(batch) *
                              shape.embedding_width());
  std::vector<float> probs(batch);
  std::vector<float> window_scores, window_labels;
  const absl::Time progress_start = absl::Now();
  TrainingProgress progress("ctr", options.worker_id, options.steps,
                            options.log_every, progress_start);
  progress.AttachMetrics(options.metrics, {dense_config.name, sparse_config.name});
  progress.AttachClient(&client);
  TrainingSummary summary;
  absl::Duration eval_time;
  CtrEvaluation last_eval;
  int64_t examples_done = 0;
  int64_t epochs_evaluated = 0;

  const auto evaluate = [&](int64_t step) -> absl::Status {
    const absl::Time eval_start = absl::Now();
    ASSIGN_OR_RETURN(last_eval,
                     EvaluateCtrModel(client, model, dense_config.name,
                                      sparse_config.name, eval_set));
    eval_time += absl::Now() - eval_start;
    const double epoch =
        static_cast<double>(examples_done) / shard_size;
    spdlog::info(
        "ctr worker {} eval step {} epoch {:.2f}: logloss {:.4f} excess "
        "{:.4f} auc {:.4f} (planted logloss {:.4f} auc {:.4f}; constant "
        "logloss {:.4f}; {} examples)",
        options.worker_id, step, epoch, last_eval.logloss,
        last_eval.excess_logloss, last_eval.auc, last_eval.planted_logloss,
        last_eval.planted_auc, last_eval.constant_logloss, last_eval.examples);
    summary.evals.push_back({step, epoch, last_eval.logloss,
                             last_eval.excess_logloss, last_eval.auc});
    return absl::OkStatus();
  };

  CtrBatchFeed::Config feed_config;
  feed_config.table = sparse_config.name;
  feed_config.pull_options = sparse_pull_options;
  feed_config.batch = batch;
  feed_config.embedding_dim = shape.embedding_dim;
  feed_config.steps = options.steps;
  feed_config.start = PrefetchStartFor(options.prefetch, options.consistency.kind);
  CtrBatchFeed feed(client, sampler, generator, feed_config);
  spdlog::info("ctr worker {}: embedding prefetch {}", options.worker_id,
               PrefetchStartName(feed_config.start));

  for (int64_t step = 0; step < options.steps; ++step) {
    const std::string where = absl::StrCat("step ", step);
    // The dense pull and the batch's rows (pulled now, or prefetched) in
    // flight at once; the span outlives the future.
    std::future<absl::StatusOr<PullInfo>> dense_future =
        client.PullDenseAsync(dense_config.name, absl::MakeSpan(dense));
    absl::StatusOr<const CtrBatch*> next = feed.Next();
    absl::StatusOr<PullInfo> dense_pull = dense_future.get();
    if (!next.ok()) return WithContext(next.status(), where + ": PullSparse");
    if (!dense_pull.ok()) {
      return WithContext(dense_pull.status(), where + ": PullDense");
    }
    const CtrBatch& current = **next;
    const CtrExamples& examples = current.examples;
    const std::vector<uint64_t>& keys = current.keys;
    progress.RecordPull(*dense_pull);
    const absl::Time compute_start = absl::Now();
    ASSIGN_OR_RETURN(
        double loss,
        model.LossAndGradient(dense, examples.dense, current.rows,
                              examples.labels, absl::MakeSpan(probs),
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
        sparse_config.name, keys, row_grad, &current.pull);
    absl::StatusOr<PushResult> dense_pushed = dense_push.get();
    if (!sparse_push.ok()) {
      return WithContext(sparse_push.status(), where + ": PushSparse");
    }
    if (!dense_pushed.ok()) {
      return WithContext(dense_pushed.status(), where + ": PushDense");
    }
    // Both tables pushed: the step is done. With accumulation, the clock
    // moves once per dense push actually sent.
    if (!dense_pushed->deferred) {
      client.Clock();
      progress.RecordPush(*dense_pushed);
    }
    feed.StepDone();
    progress.RecordPush(*sparse_push);
    if (row_tau.has_value()) row_tau->Add(keys, *sparse_push);
    progress.RecordStep(batch, loss);
    examples_done += batch;
    window_scores.insert(window_scores.end(), probs.begin(), probs.end());
    window_labels.insert(window_labels.end(), examples.labels.begin(),
                         examples.labels.end());
    if (progress.ShouldLog()) {
      progress.LogWindow("train_auc", WindowAuc(window_scores, window_labels),
                         absl::Now());
      window_scores.clear();
      window_labels.clear();
      if (row_tau.has_value()) {
        spdlog::info("ctr worker {} step {} row tau {}", options.worker_id,
                     progress.steps(), row_tau->Describe());
      }
    }
    const int64_t done = step + 1;
    const int64_t epochs_done = examples_done / shard_size;
    if (done == options.steps || epochs_done > epochs_evaluated ||
        (options.eval_every > 0 && done % options.eval_every == 0)) {
      epochs_evaluated = epochs_done;
      RETURN_IF_ERROR(WithContext(evaluate(done), where + ": evaluation"));
    }
  }
  const absl::Time train_end = absl::Now();
  if (options.steps == 0) RETURN_IF_ERROR(evaluate(0));
  if (feed.start_changes() > 0) {
    spdlog::info("ctr worker {}: embedding prefetch followed {} policy "
                 "change(s), pulled {} early batch(es) again; ended {}",
                 options.worker_id, feed.start_changes(), feed.repulls(),
                 PrefetchStartName(feed.start()));
  }

  summary.model = "ctr";
  summary.worker_id = options.worker_id;
  summary.steps = progress.steps();
  summary.device = std::string(backend.name());
  summary.final_loss = progress.recent_loss();
  // Throughput of training alone: the evaluations' time is left out.
  const double train_seconds =
      absl::ToDoubleSeconds(train_end - progress_start - eval_time);
  summary.samples_per_sec =
      train_seconds > 0.0 ? static_cast<double>(examples_done) / train_seconds
                          : 0.0;
  summary.tau_mean = progress.tau().mean();
  summary.tau_max = progress.tau().max();
  summary.rejected_pushes = progress.tau().rejected();
  summary.pull_wait_ms = absl::ToDoubleMilliseconds(progress.mean_pull_wait());
  summary.test_logloss = last_eval.logloss;
  summary.planted_logloss = last_eval.planted_logloss;
  summary.excess_logloss = last_eval.excess_logloss;
  summary.auc = last_eval.auc;
  summary.planted_auc = last_eval.planted_auc;
  summary.constant_logloss = last_eval.constant_logloss;
  summary.epochs = static_cast<double>(examples_done) / shard_size;
  if (row_tau.has_value()) summary.row_tau = row_tau->Summary();
  summary.client_events = EventsOf(client);
  for (const TableConfig* table : {&dense_config, &sparse_config}) {
    ASSIGN_OR_RETURN(TransferCounters transfers, client.Transfers(table->name));
    summary.push_raw_bytes += transfers.push_raw_bytes;
    summary.push_wire_bytes += transfers.push_wire_bytes;
  }
  return summary;
}

}  // namespace taups::trainer

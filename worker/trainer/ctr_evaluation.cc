#include "worker/trainer/ctr_evaluation.h"

#include <algorithm>
#include <vector>

#include "common/status_macros.h"
#include "worker/trainer/binary_metrics.h"
#include "worker/trainer/status_context.h"

namespace taups::trainer {
namespace {

constexpr int kEvalChunk = 4096;

}  // namespace

void CtrEmbeddingKeys(const CtrExamples& examples, int first, int count,
                      std::vector<uint64_t>& keys) {
  const int fields = examples.num_fields;
  keys.resize(static_cast<size_t>(count) * fields);
  const uint32_t* ids = examples.ids.data() + static_cast<size_t>(first) * fields;
  for (size_t i = 0; i < keys.size(); ++i) {
    keys[i] = EmbeddingKey(static_cast<int>(i % fields), ids[i]);
  }
}

absl::StatusOr<CtrEvaluation> EvaluateCtrModel(
    Client& client, CtrModel& model, const std::string& dense_table,
    const std::string& embedding_table, const CtrExamples& examples) {
  const CtrModelShape& shape = model.shape();
  std::vector<float> params(shape.num_dense_params());
  absl::StatusOr<PullInfo> dense_pull =
      client.PullDense(dense_table, absl::MakeSpan(params));
  if (!dense_pull.ok()) return WithContext(dense_pull.status(), "eval PullDense");

  const int n = examples.size();
  std::vector<float> probs(n);
  std::vector<uint64_t> keys;
  std::vector<float> rows;
  for (int start = 0; start < n; start += kEvalChunk) {
    const int count = std::min(kEvalChunk, n - start);
    CtrEmbeddingKeys(examples, start, count, keys);
    rows.resize(keys.size() * shape.embedding_dim);
    absl::StatusOr<PullInfo> pulled =
        client.PullSparse(embedding_table, keys, absl::MakeSpan(rows));
    if (!pulled.ok()) return WithContext(pulled.status(), "eval PullSparse");
    const absl::Span<const float> features =
        absl::MakeConstSpan(examples.dense)
            .subspan(static_cast<size_t>(start) * shape.num_dense,
                     static_cast<size_t>(count) * shape.num_dense);
    RETURN_IF_ERROR(model.Predict(params, features, rows,
                                  absl::MakeSpan(probs).subspan(start, count)));
  }
  CtrEvaluation eval;
  eval.examples = n;
  ASSIGN_OR_RETURN(eval.logloss, LogLoss(probs, examples.labels));
  ASSIGN_OR_RETURN(eval.planted_logloss,
                   LogLoss(examples.planted_probs, examples.labels));
  eval.excess_logloss = eval.logloss - eval.planted_logloss;
  ASSIGN_OR_RETURN(eval.auc, Auc(probs, examples.labels));
  ASSIGN_OR_RETURN(eval.planted_auc, Auc(examples.planted_probs, examples.labels));
  double clicks = 0.0;
  for (float y : examples.labels) clicks += y;
  const std::vector<float> constant(n, static_cast<float>(clicks / n));
  ASSIGN_OR_RETURN(eval.constant_logloss, LogLoss(constant, examples.labels));
  return eval;
}

}  // namespace taups::trainer

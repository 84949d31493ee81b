// Synthetic click logs in the Criteo-like schema of ctr_schema.h, labelled
// by a known ("planted") model, so a learned model can be compared with the
// best achievable (Bayes) log-loss on the same examples.
//
// Generator. Example `index` of a split (train or eval) is a pure function of
// (spec.seed, split, index): an Rng seeded from those three values draws,
// in order,
//   1. the dense features: u_j ~ N(0, 1), count c_j = floor(exp(mu_j +
//      sigma_j u_j)), feature x_j = log(1 + c_j), for j = 0..D-1;
//   2. the ids: id_f ~ Zipf(s) over [0, cardinality_f), for f = 0..F-1;
//   3. the label: y = 1 if U[0, 1) < p, where p = sigmoid(planted logit).
// So any worker can produce any slice of the data on its own, in any order.
//
// Planted model. With s_j = (x_j - m_j) / d_j the dense features
// standardised by their exact mean m_j and standard deviation d_j (computed
// once by numerical integration over u; d_j = 0 gives s_j = 0),
//   logit = bias + sum_j a_j s_j + sum_f w_f(id_f)
//         + sum_{f<g} <v_f(id_f), v_g(id_g)> + <P s, sum_f v_f(id_f)>
// a linear term on the dense features, a weight per id, a factorisation
// machine of rank R over the ids, and a dense x categorical cross term. The
// bias is solved for (bisection) so that the mean planted P(click) over
// kCtrCalibrationExamples examples of a third split is spec.click_rate.
// a (D values) and the R x D matrix P are normal draws from the seed,
// rescaled so that |a|^2 = D dense_weight_stddev^2 and |P|^2 =
// R D cross_stddev^2 exactly (every seed plants an equally strong signal).
// w_f(id) and the R components of v_f(id) are uniform with mean 0 and
// standard deviation weight_stddev and interaction_stddev, taken from hash
// bits of (seed, f, id), so the 4.3M ids' parameters are never stored. The
// Bayes log-loss of a set of examples is the mean of -log P(y | planted p)
// over it (from planted_probs).
//
// Immutable after Create(); every method is const and thread-safe.
#ifndef TAUPS_WORKER_TRAINER_CTR_DATA_H_
#define TAUPS_WORKER_TRAINER_CTR_DATA_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/trainer/ctr_schema.h"
#include "worker/trainer/zipf_sampler.h"

namespace taups::trainer {

struct CtrSpec {
  CtrSchema schema = CriteoLikeSchema();
  // Defaults chosen to resemble Criteo: click rate 0.25, planted (Bayes)
  // log-loss ~0.44 against ~0.56 for the best constant, planted AUC ~0.80.
  double click_rate = 0.25;           // mean planted P(click); sets the bias
  double dense_weight_stddev = 0.25;  // a_j
  double weight_stddev = 0.15;        // w_f(id)
  int interaction_rank = 4;           // R
  double interaction_stddev = 0.13;   // each component of v_f(id)
  double cross_stddev = 0.1;          // each entry of P
  uint64_t seed = 1;                  // fixes the planted model and the data

  int num_fields() const { return schema.num_fields(); }
  int num_dense() const { return schema.num_dense(); }
  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

// Which stream an example index refers to (kCalibration: the examples the
// bias is fitted on).
enum class CtrSplit : uint64_t { kTrain = 0, kEval = 1, kCalibration = 2 };
inline constexpr int kCtrCalibrationExamples = 8192;

// Examples stored row-wise: dense[i * num_dense + j], ids[i * num_fields + f].
struct CtrExamples {
  int num_fields = 0;
  int num_dense = 0;
  std::vector<float> dense;          // model inputs x_j = log(1 + count)
  std::vector<uint32_t> ids;         // id_f, which is also its frequency rank
  std::vector<float> labels;         // 0 or 1
  std::vector<float> planted_probs;  // the planted model's P(click)

  int size() const { return static_cast<int>(labels.size()); }
  void Clear() {
    dense.clear();
    ids.clear();
    labels.clear();
    planted_probs.clear();
  }
};

// What an embedding key stands for (for per-row analyses such as
// head-vs-tail staleness).
struct EmbeddingKeyInfo {
  int field = 0;
  uint32_t id = 0;
  uint32_t frequency_rank = 0;  // 0 = the field's most frequent id (== id)
  double probability = 0.0;     // chance that an example carries this id
};

class CtrDataGenerator {
 public:
  static absl::StatusOr<CtrDataGenerator> Create(const CtrSpec& spec);

  const CtrSpec& spec() const { return spec_; }
  // The planted model's bias (fitted to spec.click_rate).
  double bias() const { return bias_; }

  // Appends example `index` of `split` to `out` (sets out's shape fields).
  void Append(CtrSplit split, uint64_t index, CtrExamples& out) const;
  // Appends examples first .. first + count - 1.
  void AppendRange(CtrSplit split, uint64_t first, int count,
                   CtrExamples& out) const;
  // Appends the examples named by `indices`, in that order.
  void AppendIndices(CtrSplit split, absl::Span<const int> indices,
                     CtrExamples& out) const;

  // The planted logit for dense inputs `dense` (num_dense x_j values) and
  // `ids` (num_fields ids, each below its field's cardinality).
  double PlantedLogit(const float* dense, const uint32_t* ids) const;

  // The field, id, frequency rank and probability behind an embedding key;
  // INVALID_ARGUMENT if the key names no field or id of the schema.
  absl::StatusOr<EmbeddingKeyInfo> DescribeKey(uint64_t key) const;

 private:
  explicit CtrDataGenerator(const CtrSpec& spec) : spec_(spec) {}

  // Makes room for `more` examples in `out`.
  void Reserve(int more, CtrExamples& out) const;
  // Writes w_f(id) to *w and v_f(id) to v[0..R).
  void IdParameters(int field, uint32_t id, double* w, double* v) const;

  // Draws the features and ids of example `index` of `split` into `dense`
  // and `ids`; returns the Rng, positioned for the label's draw.
  Rng DrawInputs(CtrSplit split, uint64_t index, float* dense,
                 uint32_t* ids) const;
  // Sets bias_ so the mean planted P(click) of the calibration split is
  // spec_.click_rate.
  void FitBias();

  CtrSpec spec_;
  double bias_ = 0.0;
  std::vector<ZipfSampler> samplers_;  // per field
  std::vector<double> feature_means_;        // m_j
  std::vector<double> feature_inv_stddevs_;  // 1 / d_j (0 when d_j = 0)
  std::vector<double> dense_weights_;  // a, D
  std::vector<double> cross_;          // P, R x D row-major
  std::vector<uint64_t> field_salts_;  // per field, from the seed
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_DATA_H_

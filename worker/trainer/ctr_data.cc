#include "worker/trainer/ctr_data.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/binary_metrics.h"
#include "worker/trainer/deterministic_rng.h"

namespace taups::trainer {
namespace {

constexpr int kMaxRank = 64;
// Stream ids of MixSeed (ASCII tags).
constexpr uint64_t kExampleStream = 0x6578616d706c65;  // "example"
constexpr uint64_t kIdStream = 0x69647061726d;         // "idparm"
constexpr uint64_t kDenseStream = 0x64656e7365;        // "dense"
constexpr double kSqrt3 = 1.7320508075688772;

bool FiniteNonNegative(double x) { return std::isfinite(x) && x >= 0.0; }

// The model input of a dense feature for the standard normal draw u.
double DenseInput(const DenseFeatureSpec& d, double u) {
  return std::log1p(std::floor(std::exp(d.log_mean + d.log_stddev * u)));
}

// Mean and standard deviation of DenseInput(d, u) for u ~ N(0, 1): the
// midpoint rule over [-9, 9] (the input is a step function of u, so a fine
// grid is both simple and accurate to ~1e-5).
void FeatureMoments(const DenseFeatureSpec& d, double* mean, double* stddev) {
  constexpr int kPoints = 12000;
  constexpr double kLow = -9.0, kHigh = 9.0;
  const double step = (kHigh - kLow) / kPoints;
  double weight_sum = 0.0, sum = 0.0, sum_sq = 0.0;
  for (int i = 0; i < kPoints; ++i) {
    const double u = kLow + (i + 0.5) * step;
    const double weight = std::exp(-0.5 * u * u);
    const double x = DenseInput(d, u);
    weight_sum += weight;
    sum += weight * x;
    sum_sq += weight * x * x;
  }
  *mean = sum / weight_sum;
  *stddev = std::sqrt(std::max(0.0, sum_sq / weight_sum - *mean * *mean));
}

// Rescales `values` (i.i.d. standard normal draws) so that their squared
// norm is exactly values.size() * stddev^2, its expectation for
// N(0, stddev^2) entries: every seed then plants an equally strong signal.
void ScaleToNorm(double stddev, std::vector<double>& values) {
  double norm_sq = 0.0;
  for (double v : values) norm_sq += v * v;
  if (norm_sq == 0.0) return;
  const double factor = stddev * std::sqrt(values.size() / norm_sq);
  for (double& v : values) v *= factor;
}

}  // namespace

absl::Status CtrSpec::Validate() const {
  RETURN_IF_ERROR(schema.Validate());
  if (interaction_rank < 0 || interaction_rank > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR spec: interaction_rank ", interaction_rank, " outside 0..",
        kMaxRank));
  }
  if (!FiniteNonNegative(dense_weight_stddev) ||
      !FiniteNonNegative(weight_stddev) ||
      !FiniteNonNegative(interaction_stddev) ||
      !FiniteNonNegative(cross_stddev)) {
    return absl::InvalidArgumentError(
        "CTR spec: stddevs must be finite and >= 0");
  }
  if (!(click_rate >= 0.001 && click_rate <= 0.999)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR spec: click_rate ", click_rate, " outside [0.001, 0.999]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CtrDataGenerator> CtrDataGenerator::Create(const CtrSpec& spec) {
  RETURN_IF_ERROR(spec.Validate());
  CtrDataGenerator gen(spec);
  for (uint32_t card : spec.schema.cardinalities) {
    ASSIGN_OR_RETURN(ZipfSampler sampler,
                     ZipfSampler::Create(card, spec.schema.zipf_exponent));
    gen.samplers_.push_back(std::move(sampler));
  }
  const int dims = spec.num_dense();
  for (const DenseFeatureSpec& d : spec.schema.dense) {
    double mean, stddev;
    FeatureMoments(d, &mean, &stddev);
    gen.feature_means_.push_back(mean);
    gen.feature_inv_stddevs_.push_back(stddev > 0.0 ? 1.0 / stddev : 0.0);
  }
  Rng rng(MixSeed(spec.seed, {kDenseStream}));
  gen.dense_weights_.resize(dims);
  for (double& a : gen.dense_weights_) a = rng.Normal();
  ScaleToNorm(spec.dense_weight_stddev, gen.dense_weights_);
  gen.cross_.resize(static_cast<size_t>(spec.interaction_rank) * dims);
  for (double& p : gen.cross_) p = rng.Normal();
  ScaleToNorm(spec.cross_stddev, gen.cross_);
  for (int f = 0; f < spec.num_fields(); ++f) {
    gen.field_salts_.push_back(
        MixSeed(spec.seed, {kIdStream, static_cast<uint64_t>(f)}));
  }
  gen.FitBias();
  return gen;
}

void CtrDataGenerator::IdParameters(int field, uint32_t id, double* w,
                                    double* v) const {
  // 1 + R values, three 21-bit uniforms from each 64-bit hash word.
  Rng rng(Mix64(field_salts_[field] ^ id));
  uint64_t word = 0;
  const auto next_symmetric = [&rng, &word](int i) {
    if (i % 3 == 0) word = rng.NextU64();
    const double u = (static_cast<double>((word >> (21 * (i % 3))) & 0x1fffff) +
                      0.5) / 2097152.0;
    return kSqrt3 * (2.0 * u - 1.0);  // mean 0, variance 1
  };
  *w = spec_.weight_stddev * next_symmetric(0);
  for (int r = 0; r < spec_.interaction_rank; ++r) {
    v[r] = spec_.interaction_stddev * next_symmetric(r + 1);
  }
}

double CtrDataGenerator::PlantedLogit(const float* dense,
                                      const uint32_t* ids) const {
  const CtrSchema& schema = spec_.schema;
  const int dims = schema.num_dense();
  const int rank = spec_.interaction_rank;
  double logit = bias_;
  double standardized[kMaxCtrDenseFeatures];
  for (int j = 0; j < dims; ++j) {
    standardized[j] = (dense[j] - feature_means_[j]) * feature_inv_stddevs_[j];
    logit += dense_weights_[j] * standardized[j];
  }
  // sum_{f<g} <v_f, v_g> = (|sum_f v_f|^2 - sum_f |v_f|^2) / 2.
  double sum_v[kMaxRank] = {};
  double sum_sq = 0.0;
  double v[kMaxRank];
  for (int f = 0; f < schema.num_fields(); ++f) {
    double w;
    IdParameters(f, ids[f], &w, v);
    logit += w;
    for (int r = 0; r < rank; ++r) {
      sum_v[r] += v[r];
      sum_sq += v[r] * v[r];
    }
  }
  double sq_sum = 0.0, cross = 0.0;
  for (int r = 0; r < rank; ++r) {
    sq_sum += sum_v[r] * sum_v[r];
    double projected = 0.0;  // (P s)_r
    for (int j = 0; j < dims; ++j) {
      projected += cross_[static_cast<size_t>(r) * dims + j] * standardized[j];
    }
    cross += projected * sum_v[r];
  }
  return logit + 0.5 * (sq_sum - sum_sq) + cross;
}

Rng CtrDataGenerator::DrawInputs(CtrSplit split, uint64_t index, float* dense,
                                 uint32_t* ids) const {
  const CtrSchema& schema = spec_.schema;
  Rng rng(MixSeed(spec_.seed,
                  {kExampleStream, static_cast<uint64_t>(split), index}));
  for (int j = 0; j < schema.num_dense(); ++j) {
    dense[j] = static_cast<float>(DenseInput(schema.dense[j], rng.Normal()));
  }
  for (int f = 0; f < schema.num_fields(); ++f) {
    ids[f] = static_cast<uint32_t>(samplers_[f].Sample(rng));
  }
  return rng;
}

void CtrDataGenerator::FitBias() {
  // Logits without the bias, then bisection on the monotone mean sigmoid.
  std::vector<double> logits(kCtrCalibrationExamples);
  float dense[kMaxCtrDenseFeatures];
  uint32_t ids[kMaxCtrFields];
  bias_ = 0.0;
  for (int i = 0; i < kCtrCalibrationExamples; ++i) {
    DrawInputs(CtrSplit::kCalibration, i, dense, ids);
    logits[i] = PlantedLogit(dense, ids);
  }
  double low = -30.0, high = 30.0;
  for (int iteration = 0; iteration < 60; ++iteration) {
    const double mid = 0.5 * (low + high);
    double rate = 0.0;
    for (double z : logits) rate += Sigmoid(z + mid);
    (rate / logits.size() < spec_.click_rate ? low : high) = mid;
  }
  bias_ = 0.5 * (low + high);
}

void CtrDataGenerator::Append(CtrSplit split, uint64_t index,
                              CtrExamples& out) const {
  out.num_fields = spec_.num_fields();
  out.num_dense = spec_.num_dense();
  float dense[kMaxCtrDenseFeatures];
  uint32_t ids[kMaxCtrFields];
  Rng rng = DrawInputs(split, index, dense, ids);
  const double p = Sigmoid(PlantedLogit(dense, ids));
  out.dense.insert(out.dense.end(), dense, dense + out.num_dense);
  out.ids.insert(out.ids.end(), ids, ids + out.num_fields);
  out.planted_probs.push_back(static_cast<float>(p));
  out.labels.push_back(rng.UniformDouble() < p ? 1.0f : 0.0f);
}

void CtrDataGenerator::Reserve(int more, CtrExamples& out) const {
  const size_t n = static_cast<size_t>(out.size()) + more;
  out.dense.reserve(n * spec_.num_dense());
  out.ids.reserve(n * spec_.num_fields());
  out.labels.reserve(n);
  out.planted_probs.reserve(n);
}

void CtrDataGenerator::AppendRange(CtrSplit split, uint64_t first, int count,
                                   CtrExamples& out) const {
  Reserve(count, out);
  for (int i = 0; i < count; ++i) Append(split, first + i, out);
}

void CtrDataGenerator::AppendIndices(CtrSplit split,
                                     absl::Span<const int> indices,
                                     CtrExamples& out) const {
  Reserve(static_cast<int>(indices.size()), out);
  for (int index : indices) Append(split, static_cast<uint64_t>(index), out);
}

absl::StatusOr<EmbeddingKeyInfo> CtrDataGenerator::DescribeKey(
    uint64_t key) const {
  const EmbeddingKeyParts parts = DecodeEmbeddingKey(key);
  if (parts.field >= spec_.num_fields() ||
      parts.id >= spec_.schema.cardinalities[parts.field]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key ", key, " (field ", parts.field, ", id ", parts.id,
        ") is not in the CTR schema"));
  }
  EmbeddingKeyInfo info;
  info.field = parts.field;
  info.id = static_cast<uint32_t>(parts.id);
  info.frequency_rank = info.id;
  info.probability = samplers_[parts.field].Probability(parts.id);
  return info;
}

}  // namespace taups::trainer

#include "worker/trainer/ctr_data.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/binary_metrics.h"

namespace taups::trainer {
namespace {

constexpr int kMaxFields = 64;
constexpr int kMaxRank = 64;

}  // namespace

absl::Status CtrSpec::Validate() const {
  if (cardinalities.empty() || cardinalities.size() > kMaxFields) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR spec: need 1..", kMaxFields, " fields, got ", cardinalities.size()));
  }
  for (size_t f = 0; f < cardinalities.size(); ++f) {
    if (cardinalities[f] == 0 || cardinalities[f] > ZipfSampler::kMaxSupport) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CTR spec: field ", f, " cardinality ", cardinalities[f],
          " outside 1..", ZipfSampler::kMaxSupport));
    }
  }
  if (!(zipf_exponent > 0.0) || !std::isfinite(zipf_exponent)) {
    return absl::InvalidArgumentError("CTR spec: zipf_exponent must be > 0");
  }
  if (interaction_rank < 0 || interaction_rank > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR spec: interaction_rank ", interaction_rank, " outside 0..",
        kMaxRank));
  }
  if (!(weight_stddev >= 0.0) || !(interaction_stddev >= 0.0) ||
      !std::isfinite(weight_stddev) || !std::isfinite(interaction_stddev) ||
      !std::isfinite(bias)) {
    return absl::InvalidArgumentError(
        "CTR spec: stddevs must be finite and >= 0, bias finite");
  }
  return absl::OkStatus();
}

absl::StatusOr<CtrDataGenerator> CtrDataGenerator::Create(const CtrSpec& spec) {
  RETURN_IF_ERROR(spec.Validate());
  CtrDataGenerator gen(spec);
  const int rank = spec.interaction_rank;
  for (int f = 0; f < spec.num_fields(); ++f) {
    const uint32_t card = spec.cardinalities[f];
    ASSIGN_OR_RETURN(ZipfSampler sampler,
                     ZipfSampler::Create(card, spec.zipf_exponent));
    gen.samplers_.push_back(std::move(sampler));
    // Each field has its own stream, so adding a field leaves others alone.
    Rng rng(MixSeed(spec.seed, {0x706c616e74, static_cast<uint64_t>(f)}));
    std::vector<float> w(card);
    std::vector<float> v(static_cast<size_t>(card) * rank);
    for (float& x : w) x = static_cast<float>(spec.weight_stddev * rng.Normal());
    for (float& x : v) {
      x = static_cast<float>(spec.interaction_stddev * rng.Normal());
    }
    gen.weights_.push_back(std::move(w));
    gen.interactions_.push_back(std::move(v));
  }
  return gen;
}

double CtrDataGenerator::PlantedLogit(const uint32_t* ids) const {
  const int fields = spec_.num_fields();
  const int rank = spec_.interaction_rank;
  double logit = spec_.bias;
  // sum_{f<g} <v_f, v_g> = (|sum_f v_f|^2 - sum_f |v_f|^2) / 2.
  double sum_v[kMaxRank] = {};
  double sum_sq = 0.0;
  for (int f = 0; f < fields; ++f) {
    logit += weights_[f][ids[f]];
    const float* v = interactions_[f].data() + static_cast<size_t>(ids[f]) * rank;
    for (int r = 0; r < rank; ++r) {
      sum_v[r] += v[r];
      sum_sq += static_cast<double>(v[r]) * v[r];
    }
  }
  double sq_sum = 0.0;
  for (int r = 0; r < rank; ++r) sq_sum += sum_v[r] * sum_v[r];
  return logit + 0.5 * (sq_sum - sum_sq);
}

void CtrDataGenerator::Generate(int n, Rng& rng, CtrExamples& out) const {
  const int fields = spec_.num_fields();
  out.num_fields = fields;
  out.ids.reserve(out.ids.size() + static_cast<size_t>(n) * fields);
  uint32_t ids[kMaxFields];
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < fields; ++f) {
      ids[f] = static_cast<uint32_t>(samplers_[f].Sample(rng));
    }
    const double p = Sigmoid(PlantedLogit(ids));
    out.ids.insert(out.ids.end(), ids, ids + fields);
    out.planted_probs.push_back(static_cast<float>(p));
    out.labels.push_back(rng.UniformDouble() < p ? 1.0f : 0.0f);
  }
}

}  // namespace taups::trainer

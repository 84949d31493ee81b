#include "worker/trainer/ctr_schema.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "worker/trainer/zipf_sampler.h"

namespace taups::trainer {

absl::Status CtrSchema::Validate() const {
  if (cardinalities.empty() || num_fields() > kMaxCtrFields) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR schema: need 1..", kMaxCtrFields, " categorical fields, got ",
        cardinalities.size()));
  }
  for (int f = 0; f < num_fields(); ++f) {
    if (cardinalities[f] == 0 || cardinalities[f] > ZipfSampler::kMaxSupport) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CTR schema: field ", f, " cardinality ", cardinalities[f],
          " outside 1..", ZipfSampler::kMaxSupport));
    }
  }
  if (num_dense() > kMaxCtrDenseFeatures) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR schema: at most ", kMaxCtrDenseFeatures, " dense features, got ",
        num_dense()));
  }
  for (int j = 0; j < num_dense(); ++j) {
    if (!std::isfinite(dense[j].log_mean) ||
        !std::isfinite(dense[j].log_stddev) || dense[j].log_stddev < 0.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CTR schema: dense feature ", j,
          " needs a finite log_mean and a finite log_stddev >= 0"));
    }
  }
  if (!std::isfinite(zipf_exponent) || zipf_exponent <= 0.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR schema: zipf_exponent must be finite and > 0, got ",
        zipf_exponent));
  }
  return absl::OkStatus();
}

CtrSchema CriteoLikeSchema() {
  CtrSchema schema;
  schema.cardinalities = {
      1500,   600,  1000000, 400000, 300,  24,     12000, 600,   3,
      90000,  5000, 1000000, 3000,   27,   15000,  600000, 10,   5500,
      2000,   4,    800000,  18,     15,   250000, 100,   140000};
  schema.dense = {{0.5, 1.2},  {2.0, 1.5}, {1.5, 1.0}, {1.0, 0.8},
                  {7.0, 1.8},  {3.0, 1.5}, {1.5, 1.2}, {2.5, 0.9},
                  {4.0, 1.3},  {0.0, 0.7}, {1.0, 0.9}, {-0.5, 1.0},
                  {1.5, 1.0}};
  schema.zipf_exponent = 1.1;
  return schema;
}

uint64_t EmbeddingKey(int field, uint64_t id) {
  const uint64_t id_mask = (uint64_t{1} << kEmbeddingKeyIdBits) - 1;
  return (static_cast<uint64_t>(field) << kEmbeddingKeyIdBits) | (id & id_mask);
}

EmbeddingKeyParts DecodeEmbeddingKey(uint64_t key) {
  EmbeddingKeyParts parts;
  parts.field = static_cast<int>(key >> kEmbeddingKeyIdBits);
  parts.id = key & ((uint64_t{1} << kEmbeddingKeyIdBits) - 1);
  return parts;
}

}  // namespace taups::trainer

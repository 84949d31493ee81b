// The shape of ps_worker's synthetic click logs, modelled on the Criteo
// display-advertising data: 13 dense (count) features and 26 categorical
// fields of very different cardinalities, plus the sparse-table key of every
// (field, id).
//
// Categorical field f takes ids in [0, cardinality_f), drawn Zipf(s): id r
// has probability proportional to (r + 1)^-s, so an id IS its frequency rank
// within its field (0 = the most frequent). The default cardinalities follow
// the spread of Criteo's fields, the largest capped at 10^6:
//
//   field  card.      field  card.      field  card.      field  card.
//   C0     1,500      C7     600        C14    15,000     C21    18
//   C1     600        C8     3          C15    600,000    C22    15
//   C2     1,000,000  C9     90,000     C16    10         C23    250,000
//   C3     400,000    C10    5,000      C17    5,500      C24    100
//   C4     300        C11    1,000,000  C18    2,000      C25    140,000
//   C5     24         C12    3,000      C19    4
//   C6     12,000     C13    27         C20    800,000
//
// (4,325,701 ids in all; Zipf exponent 1.1.) Dense feature j is a count
// c = floor(exp(mu_j + sigma_j u)), u ~ N(0, 1), fed to the model as
// x_j = log(1 + c), as DLRM does with Criteo's counts:
//
//   j   mu    sigma     j   mu    sigma     j   mu    sigma
//   I0  0.5   1.2       I5  3.0   1.5       I10 1.0   0.9
//   I1  2.0   1.5       I6  1.5   1.2       I11 -0.5  1.0
//   I2  1.5   1.0       I7  2.5   0.9       I12 1.5   1.0
//   I3  1.0   0.8       I8  4.0   1.3
//   I4  7.0   1.8       I9  0.0   0.7
//
// Embedding keys: all fields share ONE sparse table. A key carries its field
// in the top 24 bits and its id in the low 40 (EmbeddingKey), so fields never
// share rows and a key names its (field, id) without a lookup
// (DecodeEmbeddingKey). The servers hash keys before sharding them, so this
// plain layout still spreads evenly over shards.
//
// Plain value types and pure functions; thread-safe.
#ifndef TAUPS_WORKER_TRAINER_CTR_SCHEMA_H_
#define TAUPS_WORKER_TRAINER_CTR_SCHEMA_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace taups::trainer {

inline constexpr int kCriteoDenseFeatures = 13;
inline constexpr int kCriteoCategoricalFields = 26;
inline constexpr int kMaxCtrFields = 64;
inline constexpr int kMaxCtrDenseFeatures = 64;

// One dense count feature: c = floor(exp(log_mean + log_stddev * u)).
struct DenseFeatureSpec {
  double log_mean = 0.0;
  double log_stddev = 1.0;
};

struct CtrSchema {
  std::vector<uint32_t> cardinalities;  // per categorical field
  std::vector<DenseFeatureSpec> dense;  // per dense feature
  double zipf_exponent = 1.1;

  int num_fields() const { return static_cast<int>(cardinalities.size()); }
  int num_dense() const { return static_cast<int>(dense.size()); }
  // INVALID_ARGUMENT naming the first bad entry: 1..kMaxCtrFields fields of
  // cardinality 1..2^24, 0..kMaxCtrDenseFeatures dense features with finite
  // parameters (stddev >= 0), exponent finite and > 0.
  absl::Status Validate() const;
};

// The table above.
CtrSchema CriteoLikeSchema();

// Sparse-table key of `id` in categorical field `field` (0 <= field < 2^24,
// id < 2^40; both hold for any valid schema).
inline constexpr int kEmbeddingKeyIdBits = 40;
uint64_t EmbeddingKey(int field, uint64_t id);

struct EmbeddingKeyParts {
  int field = 0;
  uint64_t id = 0;  // also the id's frequency rank in its field
};
// Inverse of EmbeddingKey (every key decodes; whether the field and id exist
// is the schema's business).
EmbeddingKeyParts DecodeEmbeddingKey(uint64_t key);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_SCHEMA_H_

// Synthetic click-through data with a known ("planted") ground truth.
//
// An example has F categorical fields; field f takes an id in
// [0, cardinality_f), drawn Zipf(s) (id 0 the most frequent). The planted
// model gives every (field, id) a scalar weight w and a rank-R vector v, all
// i.i.d. normal and fixed by the spec's seed, and defines
//   logit = bias + sum_f w_f(id_f) + sum_{f<g} <v_f(id_f), v_g(id_g)>
// (a factorisation machine). The label is Bernoulli(sigmoid(logit)). The
// planted probabilities are returned too, so a learned model can be compared
// with the best achievable log-loss on the same examples.
//
// Everything is deterministic: the planted model in CtrSpec::seed, the
// examples in the caller's Rng. Immutable after Create(); Generate() is const
// and safe from many threads, each with its own Rng.
#ifndef TAUPS_WORKER_TRAINER_CTR_DATA_H_
#define TAUPS_WORKER_TRAINER_CTR_DATA_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/trainer/deterministic_rng.h"
#include "worker/trainer/zipf_sampler.h"

namespace taups::trainer {

struct CtrSpec {
  std::vector<uint32_t> cardinalities = {100,   300,   1000,   3000,
                                         10000, 30000, 100000, 100000};
  double zipf_exponent = 1.1;
  int interaction_rank = 4;        // R
  double weight_stddev = 0.4;      // of each w
  double interaction_stddev = 0.2; // of each component of each v
  double bias = -1.2;
  uint64_t seed = 1;               // fixes the planted model

  int num_fields() const { return static_cast<int>(cardinalities.size()); }
  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

// Examples stored column-wise per example: ids[i * num_fields + f].
struct CtrExamples {
  int num_fields = 0;
  std::vector<uint32_t> ids;
  std::vector<float> labels;         // 0 or 1
  std::vector<float> planted_probs;  // the planted model's P(click)

  int size() const { return static_cast<int>(labels.size()); }
  void Clear() {
    ids.clear();
    labels.clear();
    planted_probs.clear();
  }
};

class CtrDataGenerator {
 public:
  static absl::StatusOr<CtrDataGenerator> Create(const CtrSpec& spec);

  const CtrSpec& spec() const { return spec_; }

  // Appends `n` examples drawn with `rng` to `out` (sets out.num_fields).
  void Generate(int n, Rng& rng, CtrExamples& out) const;

  // The planted logit of one example (`ids` holds num_fields ids, each below
  // its field's cardinality).
  double PlantedLogit(const uint32_t* ids) const;

 private:
  explicit CtrDataGenerator(const CtrSpec& spec) : spec_(spec) {}

  CtrSpec spec_;
  std::vector<ZipfSampler> samplers_;            // per field
  std::vector<std::vector<float>> weights_;      // [f][id]
  std::vector<std::vector<float>> interactions_; // [f][id * R + r]
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_DATA_H_

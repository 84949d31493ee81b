// Binary metrics (AUC, log-loss), the Zipf sampler, the Criteo-like schema
// and its keys, the synthetic generator with its planted model, and the DLRM
// model: gradients of the MLP towers, the dot interaction and the whole
// model against finite differences, determinism, CPU/CUDA agreement.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "worker/trainer/binary_metrics.h"
#include "worker/trainer/cpu_math_backend.h"
#include "worker/trainer/ctr_data.h"
#include "worker/trainer/ctr_model.h"
#include "worker/trainer/ctr_schema.h"
#include "worker/trainer/deterministic_rng.h"
#include "worker/trainer/dot_interaction.h"
#include "worker/trainer/math_backend.h"
#include "worker/trainer/mlp_tower.h"
#include "worker/trainer/zipf_sampler.h"
#include "tests/test_skip.h"

namespace taups::trainer {
namespace {

TEST_CASE("AUC on hand-made cases", "[trainer][ctr][metrics]") {
  // Perfect ranking, inverted ranking.
  CHECK(*Auc({0.1f, 0.2f, 0.8f, 0.9f}, {0, 0, 1, 1}) == 1.0);
  CHECK(*Auc({0.9f, 0.8f, 0.2f, 0.1f}, {0, 0, 1, 1}) == 0.0);
  // One of four positive/negative pairs misordered: 3/4.
  CHECK(*Auc({0.1f, 0.6f, 0.5f, 0.9f}, {0, 0, 1, 1}) == Approx(0.75));
  // All scores tied: 1/2.
  CHECK(*Auc({0.3f, 0.3f, 0.3f, 0.3f, 0.3f}, {0, 1, 0, 1, 1}) == Approx(0.5));
  // A positive tied with a negative counts half: pairs (p@0.5 vs n@0.5)=0.5,
  // (p@0.5 vs n@0.1)=1, (p@0.9 vs both)=2 -> 3.5 / 4.
  CHECK(*Auc({0.1f, 0.5f, 0.5f, 0.9f}, {0, 0, 1, 1}) == Approx(0.875));
  // Order of the input does not matter.
  CHECK(*Auc({0.9f, 0.5f, 0.1f, 0.5f}, {1, 1, 0, 0}) == Approx(0.875));
  // Undefined / invalid.
  CHECK(absl::IsFailedPrecondition(Auc({0.1f, 0.2f}, {1, 1}).status()));
  CHECK(absl::IsInvalidArgument(Auc({0.1f, 0.2f}, {1}).status()));
  CHECK(absl::IsInvalidArgument(Auc({0.1f, 0.2f}, {1, 2}).status()));
  CHECK(absl::IsInvalidArgument(Auc({0.1f, std::nanf("")}, {0, 1}).status()));
}

TEST_CASE("AUC equals the pairwise definition on random data",
          "[trainer][ctr][metrics]") {
  Rng rng(9);
  std::vector<float> scores(300), labels(300);
  for (size_t i = 0; i < scores.size(); ++i) {
    // Coarse scores so there are many ties.
    scores[i] = static_cast<float>(rng.UniformInt(10)) / 10.0f;
    labels[i] = rng.UniformDouble() < 0.3 + 0.4 * scores[i] ? 1.0f : 0.0f;
  }
  double wins = 0, pairs = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    for (size_t j = 0; j < scores.size(); ++j) {
      if (labels[i] != 1.0f || labels[j] != 0.0f) continue;
      pairs += 1;
      wins += scores[i] > scores[j] ? 1.0 : scores[i] == scores[j] ? 0.5 : 0.0;
    }
  }
  CHECK(*Auc(scores, labels) == Approx(wins / pairs).epsilon(1e-12));
}

TEST_CASE("Log-loss", "[trainer][ctr][metrics]") {
  CHECK(*LogLoss({0.5f, 0.5f}, {0, 1}) == Approx(std::log(2.0)));
  CHECK(*LogLoss({0.9f, 0.2f}, {1, 0}) ==
        Approx(-(std::log(0.9) + std::log(0.8)) / 2));
  // Confident mistakes are clamped, not infinite.
  const double worst = *LogLoss({0.0f}, {1});
  CHECK(worst == Approx(-std::log(kProbEpsilon)));
  CHECK(absl::IsInvalidArgument(LogLoss({1.5f}, {1}).status()));
  CHECK(absl::IsInvalidArgument(LogLoss({}, {}).status()));
  // The logit form agrees with the probability form.
  for (double z : {-30.0, -2.0, 0.0, 0.7, 40.0}) {
    const double p = Sigmoid(z);
    CHECK(LogLossFromLogit(z, 1) == Approx(-std::log(p)).epsilon(1e-9));
    if (z < 30) {
      CHECK(LogLossFromLogit(z, 0) ==
            Approx(-std::log1p(-p)).epsilon(1e-9).margin(1e-12));
    }
  }
  CHECK(std::isfinite(LogLossFromLogit(1000.0, 0)));
  CHECK(LogLossFromLogit(1000.0, 0) == Approx(1000.0));
}

TEST_CASE("Zipf sampler follows its distribution", "[trainer][ctr]") {
  for (double s : {1.1, 1.0, 0.7}) {
    CAPTURE(s);
    auto zipf = ZipfSampler::Create(1000, s);
    REQUIRE(zipf.ok());
    double total = 0;
    for (uint64_t r = 0; r < 1000; ++r) total += zipf->Probability(r);
    CHECK(total == Approx(1.0).epsilon(1e-12));
    CHECK(zipf->Probability(0) / zipf->Probability(1) ==
          Approx(std::pow(2.0, s)));
    CHECK(zipf->Probability(1000) == 0.0);
    Rng rng(3);
    std::vector<int> counts(1000, 0);
    const int draws = 200000;
    for (int i = 0; i < draws; ++i) {
      const uint64_t r = zipf->Sample(rng);
      REQUIRE(r < 1000);
      ++counts[r];
    }
    for (int r : {0, 1, 2, 9, 99, 999}) {
      CAPTURE(r);
      const double expected = draws * zipf->Probability(r);
      CHECK(std::abs(counts[r] - expected) < 5 * std::sqrt(expected) + 1);
    }
    // The tail as a whole: ranks 100.. carry their share.
    double tail_p = 0;
    int tail_count = 0;
    for (int r = 100; r < 1000; ++r) {
      tail_p += zipf->Probability(r);
      tail_count += counts[r];
    }
    CHECK(std::abs(tail_count - draws * tail_p) <
          5 * std::sqrt(draws * tail_p));
  }
  CHECK(absl::IsInvalidArgument(ZipfSampler::Create(0, 1.1).status()));
  CHECK(absl::IsInvalidArgument(ZipfSampler::Create(10, 0.0).status()));
  CHECK(absl::IsInvalidArgument(ZipfSampler::Create(10, NAN).status()));
}

TEST_CASE("Zipf sampler over a million ranks", "[trainer][ctr]") {
  const uint64_t n = 1000000;
  auto zipf = ZipfSampler::Create(n, 1.1);
  REQUIRE(zipf.ok());
  // The normaliser of large supports is an approximation: compare with the
  // sum done term by term.
  double direct = 0;
  for (uint64_t k = n; k >= 1; --k) direct += std::pow(static_cast<double>(k), -1.1);
  CHECK(zipf->Probability(0) == Approx(1.0 / direct).epsilon(1e-10));
  CHECK(zipf->Probability(n - 1) ==
        Approx(std::pow(static_cast<double>(n), -1.1) / direct).epsilon(1e-10));
  Rng rng(11);
  const int draws = 100000;
  int head = 0, beyond_100k = 0;
  uint64_t max_rank = 0;
  for (int i = 0; i < draws; ++i) {
    const uint64_t r = zipf->Sample(rng);
    REQUIRE(r < n);
    head += r == 0;
    beyond_100k += r >= 100000;
    max_rank = std::max(max_rank, r);
  }
  double p_beyond = 0;
  for (uint64_t k = 100000; k < n; ++k) p_beyond += zipf->Probability(k);
  const double expected_head = draws * zipf->Probability(0);
  CHECK(std::abs(head - expected_head) < 5 * std::sqrt(expected_head));
  CHECK(std::abs(beyond_100k - draws * p_beyond) <
        5 * std::sqrt(draws * p_beyond));
  CHECK(max_rank > 500000);  // the far tail is reached
}

TEST_CASE("Criteo-like schema", "[trainer][ctr]") {
  const CtrSchema schema = CriteoLikeSchema();
  REQUIRE(schema.Validate().ok());
  CHECK(schema.num_dense() == kCriteoDenseFeatures);
  CHECK(schema.num_fields() == kCriteoCategoricalFields);
  const auto [smallest, largest] = std::minmax_element(
      schema.cardinalities.begin(), schema.cardinalities.end());
  CHECK(*smallest <= 10);
  CHECK(*largest >= 1000000);
  uint64_t total = 0;
  for (uint32_t c : schema.cardinalities) total += c;
  CHECK(total == 4325701);  // the header's table

  CtrSchema bad = schema;
  bad.cardinalities[3] = 0;
  CHECK(absl::IsInvalidArgument(bad.Validate()));
  bad = schema;
  bad.dense[2].log_stddev = -1;
  CHECK(absl::IsInvalidArgument(bad.Validate()));
  bad = schema;
  bad.cardinalities.clear();
  CHECK(absl::IsInvalidArgument(bad.Validate()));
}

TEST_CASE("Embedding keys name their field and id", "[trainer][ctr]") {
  std::set<uint64_t> keys;
  for (int f = 0; f < 26; ++f) {
    for (uint64_t id : {uint64_t{0}, uint64_t{1}, uint64_t{999999},
                        (uint64_t{1} << 40) - 1}) {
      const uint64_t key = EmbeddingKey(f, id);
      keys.insert(key);
      const EmbeddingKeyParts parts = DecodeEmbeddingKey(key);
      CHECK(parts.field == f);
      CHECK(parts.id == id);
    }
  }
  CHECK(keys.size() == 26u * 4);

  CtrSpec spec;
  auto gen = CtrDataGenerator::Create(spec);
  REQUIRE(gen.ok());
  auto info = gen->DescribeKey(EmbeddingKey(11, 17));
  REQUIRE(info.ok());
  CHECK(info->field == 11);
  CHECK(info->id == 17);
  CHECK(info->frequency_rank == 17);
  auto zipf = ZipfSampler::Create(spec.schema.cardinalities[11],
                                  spec.schema.zipf_exponent);
  CHECK(info->probability == Approx(zipf->Probability(17)));
  // Rank 0 is the most frequent id of its field.
  CHECK(gen->DescribeKey(EmbeddingKey(11, 0))->probability >
        info->probability);
  // Field 8 has 3 ids; field 26 does not exist.
  CHECK(absl::IsInvalidArgument(gen->DescribeKey(EmbeddingKey(8, 3)).status()));
  CHECK(absl::IsInvalidArgument(gen->DescribeKey(EmbeddingKey(26, 0)).status()));
}

bool SameExample(const CtrExamples& a, int i, const CtrExamples& b, int j) {
  const int d = a.num_dense, f = a.num_fields;
  return std::equal(a.dense.begin() + i * d, a.dense.begin() + (i + 1) * d,
                    b.dense.begin() + j * d) &&
         std::equal(a.ids.begin() + i * f, a.ids.begin() + (i + 1) * f,
                    b.ids.begin() + j * f) &&
         a.labels[i] == b.labels[j] && a.planted_probs[i] == b.planted_probs[j];
}

TEST_CASE("CTR examples are a pure function of (seed, split, index)",
          "[trainer][ctr]") {
  CtrSpec spec;
  spec.seed = 17;
  auto gen = CtrDataGenerator::Create(spec);
  REQUIRE(gen.ok());
  CtrExamples range;
  gen->AppendRange(CtrSplit::kTrain, 1000, 64, range);
  REQUIRE(range.size() == 64);
  REQUIRE(range.num_dense == 13);
  REQUIRE(range.num_fields == 26);
  // The same indices in another order, one by one, or from another
  // generator with the same spec: the same examples.
  std::vector<int> indices;
  for (int i = 0; i < 64; ++i) indices.push_back(1000 + (i * 37) % 64);
  CtrExamples shuffled, single;
  gen->AppendIndices(CtrSplit::kTrain, indices, shuffled);
  for (int i = 0; i < 64; ++i) {
    CHECK(SameExample(range, indices[i] - 1000, shuffled, i));
  }
  auto twin = CtrDataGenerator::Create(spec);
  twin->Append(CtrSplit::kTrain, 1005, single);
  CHECK(SameExample(range, 5, single, 0));
  // Another index, split or seed: another example.
  CtrExamples other;
  gen->Append(CtrSplit::kTrain, 1006, other);
  gen->Append(CtrSplit::kEval, 1005, other);
  spec.seed = 18;
  auto reseeded = CtrDataGenerator::Create(spec);
  reseeded->Append(CtrSplit::kTrain, 1005, other);
  for (int i = 0; i < 3; ++i) CHECK_FALSE(SameExample(range, 5, other, i));
  // The planted probability is the sigmoid of the planted logit.
  for (int i = 0; i < 64; ++i) {
    const double logit = gen->PlantedLogit(range.dense.data() + i * 13,
                                           range.ids.data() + i * 26);
    CHECK(range.planted_probs[i] == Approx(Sigmoid(logit)).epsilon(1e-6));
  }
  spec.interaction_rank = 65;
  CHECK(absl::IsInvalidArgument(CtrDataGenerator::Create(spec).status()));
}

TEST_CASE("CTR data looks like Criteo and its planted model beats a constant",
          "[trainer][ctr]") {
  CtrSpec spec;
  spec.seed = 3;
  auto gen = CtrDataGenerator::Create(spec);
  REQUIRE(gen.ok());
  CtrExamples a;
  const int n = 30000;
  gen->AppendRange(CtrSplit::kEval, 0, n, a);
  for (size_t i = 0; i < a.ids.size(); ++i) {
    REQUIRE(a.ids[i] < spec.schema.cardinalities[i % 26]);
  }
  for (float x : a.dense) {
    REQUIRE(std::isfinite(x));
    REQUIRE(x >= 0.0f);  // log(1 + count)
  }
  double positives = 0;
  for (float y : a.labels) positives += y;
  const double rate = positives / n;
  // The bias is fitted to a 0.25 click rate (Criteo: ~0.26).
  CHECK(rate == Approx(spec.click_rate).margin(0.015));
  const std::vector<float> constant(n, static_cast<float>(rate));
  const double planted = *LogLoss(a.planted_probs, a.labels);
  const double baseline = *LogLoss(constant, a.labels);
  // Measured: planted 0.435, constant 0.558, planted AUC 0.807.
  CHECK(planted < baseline - 0.08);
  CHECK(*Auc(a.planted_probs, a.labels) > 0.78);
  // Ids are skewed within each field: in the million-id field 2, rank 0 is
  // drawn about as often as its Zipf probability says.
  int top = 0;
  for (int i = 0; i < n; ++i) top += a.ids[i * 26 + 2] == 0;
  const double p0 = gen->DescribeKey(EmbeddingKey(2, 0))->probability;
  CHECK(std::abs(top - n * p0) < 5 * std::sqrt(n * p0));
}

// --- the model ---------------------------------------------------------------

std::vector<float> RandomVector(size_t n, float scale, Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = rng.UniformSymmetric(scale);
  return v;
}

// Checks `analytic` against central differences of `loss` in each
// coordinate of `x`; returns how many coordinates had a clearly non-zero
// derivative.
int CheckGradient(std::vector<float>& x, const std::vector<float>& analytic,
                  const std::function<double()>& loss, float eps = 1e-3f) {
  REQUIRE(analytic.size() == x.size());
  int nonzero = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    const float saved = x[i];
    x[i] = saved + eps;
    const double up = loss();
    x[i] = saved - eps;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * eps);
    CHECK(analytic[i] == Approx(numeric).margin(2e-4).epsilon(2e-2));
    nonzero += std::abs(numeric) > 1e-3;
  }
  return nonzero;
}

TEST_CASE("MLP tower gradients match finite differences", "[trainer][ctr]") {
  CpuMathBackend cpu;
  for (bool relu_on_output : {false, true}) {
    CAPTURE(relu_on_output);
    MlpTower tower({4, 6, 5, 3}, relu_on_output);
    REQUIRE(MlpTower::Validate(tower.widths()).ok());
    REQUIRE(tower.num_params() == (4 + 1) * 6 + (6 + 1) * 5 + (5 + 1) * 3);
    REQUIRE(tower.ParamOffset(2) == (4 + 1) * 6 + (6 + 1) * 5);
    Rng rng(relu_on_output ? 21 : 22);
    const int batch = 5;
    std::vector<float> params = RandomVector(tower.num_params(), 0.8f, rng);
    std::vector<float> input = RandomVector(batch * 4, 1.0f, rng);
    // Loss = sum of output * fixed weights, so dLoss/doutput = weights.
    const std::vector<float> weights = RandomVector(batch * 3, 1.0f, rng);
    const auto loss = [&] {
      REQUIRE(tower.Forward(cpu, params.data(), input.data(), batch).ok());
      double sum = 0;
      for (int i = 0; i < batch * 3; ++i) sum += tower.output()[i] * weights[i];
      return sum;
    };
    loss();
    std::vector<float> param_grad(params.size()), input_grad(input.size());
    REQUIRE(tower
                .Backward(cpu, params.data(), input.data(), weights.data(),
                          batch, param_grad.data(), input_grad.data())
                .ok());
    if (relu_on_output) {
      for (int i = 0; i < batch * 3; ++i) CHECK(tower.output()[i] >= 0.0f);
    }
    CHECK(CheckGradient(params, param_grad, loss) > 20);
    CHECK(CheckGradient(input, input_grad, loss) > batch * 4 / 2);
  }
  CHECK(absl::IsInvalidArgument(MlpTower::Validate({4})));
  CHECK(absl::IsInvalidArgument(MlpTower::Validate({4, 0, 1})));
  // Backward must follow a Forward over the same batch.
  MlpTower tower({2, 1}, false);
  std::vector<float> p(3), g(3), x(4), d(2);
  CHECK(absl::IsFailedPrecondition(
      tower.Backward(cpu, p.data(), x.data(), d.data(), 2, g.data(), nullptr)));
}

TEST_CASE("Dot interaction: values and gradients", "[trainer][ctr]") {
  const DotInteractionShape shape{3, 2};  // 3 fields, dim 2: 4 vectors
  REQUIRE(shape.num_pairs() == 6);
  REQUIRE(shape.output_width() == 8);
  // One example: t0 = bottom, t1..t3 = embeddings.
  std::vector<float> bottom = {1, 2};
  std::vector<float> emb = {3, 4, 5, 6, 7, 8};
  std::vector<float> out(8);
  DotInteractionForward(shape, 1, bottom.data(), emb.data(), out.data());
  // [t0, <t1,t0>, <t2,t0>, <t2,t1>, <t3,t0>, <t3,t1>, <t3,t2>]
  const std::vector<float> expected = {1,  2,  11, 17, 39,
                                       23, 53, 83};
  CHECK(out == expected);

  Rng rng(5);
  const DotInteractionShape big{5, 3};
  const int batch = 3;
  std::vector<float> z = RandomVector(batch * 3, 1.0f, rng);
  std::vector<float> e = RandomVector(batch * 15, 1.0f, rng);
  const std::vector<float> weights =
      RandomVector(batch * big.output_width(), 1.0f, rng);
  std::vector<float> result(weights.size());
  const auto loss = [&] {
    DotInteractionForward(big, batch, z.data(), e.data(), result.data());
    double sum = 0;
    for (size_t i = 0; i < result.size(); ++i) sum += result[i] * weights[i];
    return sum;
  };
  std::vector<float> dz(z.size()), de(e.size());
  DotInteractionBackward(big, batch, z.data(), e.data(), weights.data(),
                         dz.data(), de.data());
  CHECK(CheckGradient(z, dz, loss) == static_cast<int>(z.size()));
  CHECK(CheckGradient(e, de, loss) == static_cast<int>(e.size()));
}

CtrModelShape SmallShape() {
  CtrModelShape shape;
  shape.num_dense = 3;
  shape.num_fields = 4;
  shape.embedding_dim = 3;
  shape.bottom_hidden = {5};
  shape.top_hidden = {6, 4};
  return shape;
}

struct ModelInputs {
  std::vector<float> params, features, embeddings, labels;
};

// Sets the biases of every ReLU layer of `widths` (parameters at `offset`)
// to `value`, so that few units are dead.
void SetReluBiases(const std::vector<int>& widths, bool relu_on_output,
                   size_t offset, float value, std::vector<float>& params) {
  MlpTower tower(widths, relu_on_output);
  const int relu_layers = tower.num_layers() - (relu_on_output ? 0 : 1);
  for (int l = 0; l < relu_layers; ++l) {
    const size_t bias = offset + tower.ParamOffset(l) +
                        static_cast<size_t>(widths[l]) * widths[l + 1];
    std::fill(params.begin() + bias, params.begin() + bias + widths[l + 1],
              value);
  }
}

ModelInputs RandomInputs(const CtrModelShape& shape, int batch, uint64_t seed) {
  Rng rng(seed);
  ModelInputs in;
  in.params = CtrModel::UniformInit(shape, 1.0f, seed);
  SetReluBiases(shape.BottomWidths(), true, shape.bottom_offset(), 0.3f,
                in.params);
  SetReluBiases(shape.TopWidths(), false, shape.top_offset(), 0.3f, in.params);
  in.features = RandomVector(batch * shape.num_dense, 1.5f, rng);
  in.embeddings = RandomVector(batch * shape.embedding_width(), 0.8f, rng);
  for (int i = 0; i < batch; ++i) in.labels.push_back(i % 3 == 0 ? 1.0f : 0.0f);
  return in;
}

TEST_CASE("DLRM layout and validation", "[trainer][ctr]") {
  CtrModelShape shape;  // the ps_worker default
  REQUIRE(shape.Validate().ok());
  CHECK(shape.BottomWidths() == std::vector<int>{13, 32, 16});
  // 16 + 27 * 26 / 2 interaction features.
  CHECK(shape.TopWidths() == std::vector<int>{16 + 351, 64, 1});
  CHECK(shape.top_offset() == 14 * 32 + 33 * 16);
  CHECK(shape.num_dense_params() == shape.top_offset() + 368 * 64 + 65);
  CHECK(shape.embedding_width() == 26 * 16);
  shape.embedding_dim = 0;
  CHECK(absl::IsInvalidArgument(shape.Validate()));
  shape = CtrModelShape();
  shape.top_hidden = {64, 0};
  CHECK(absl::IsInvalidArgument(shape.Validate()));

  CpuMathBackend cpu;
  CtrModel model(SmallShape(), &cpu);
  ModelInputs in = RandomInputs(SmallShape(), 4, 1);
  std::vector<float> probs(4), grad(in.params.size()), eg(in.embeddings.size());
  in.labels[1] = 0.5f;
  CHECK(absl::IsInvalidArgument(
      model.LossAndGradient(in.params, in.features, in.embeddings, in.labels,
                            absl::MakeSpan(probs), absl::MakeSpan(grad),
                            absl::MakeSpan(eg)).status()));
  in.params.pop_back();
  CHECK(absl::IsInvalidArgument(
      model.Predict(in.params, in.features, in.embeddings,
                    absl::MakeSpan(probs))));
}

TEST_CASE("DLRM gradients match finite differences", "[trainer][ctr]") {
  const CtrModelShape shape = SmallShape();
  CpuMathBackend cpu;
  CtrModel model(shape, &cpu);
  const int batch = 6;
  ModelInputs in = RandomInputs(shape, batch, 4);
  std::vector<float> probs(batch), param_grad(in.params.size()),
      emb_grad(in.embeddings.size());
  auto loss = model.LossAndGradient(in.params, in.features, in.embeddings,
                                    in.labels, absl::MakeSpan(probs),
                                    absl::MakeSpan(param_grad),
                                    absl::MakeSpan(emb_grad));
  REQUIRE(loss.ok());
  CHECK(*loss > 0.0);
  // Predict agrees with the probabilities of the training pass.
  std::vector<float> predicted(batch);
  REQUIRE(model.Predict(in.params, in.features, in.embeddings,
                        absl::MakeSpan(predicted)).ok());
  for (int i = 0; i < batch; ++i) CHECK(predicted[i] == probs[i]);

  std::vector<float> scratch_p(batch), scratch_g(param_grad.size()),
      scratch_e(emb_grad.size());
  const auto loss_now = [&] {
    auto l = model.LossAndGradient(in.params, in.features, in.embeddings,
                                   in.labels, absl::MakeSpan(scratch_p),
                                   absl::MakeSpan(scratch_g),
                                   absl::MakeSpan(scratch_e));
    REQUIRE(l.ok());
    return *l;
  };
  // Every part: the bottom MLP, the top MLP (both in the dense parameters)
  // and, through the interaction, every embedding value.
  std::vector<float> bottom_grad(param_grad.begin(),
                                 param_grad.begin() + shape.top_offset());
  const int nonzero_params = CheckGradient(in.params, param_grad, loss_now);
  const int nonzero_embeddings =
      CheckGradient(in.embeddings, emb_grad, loss_now);
  CHECK(nonzero_params > static_cast<int>(in.params.size()) / 2);
  CHECK(nonzero_embeddings > static_cast<int>(in.embeddings.size()) / 2);
  int bottom_nonzero = 0;
  for (float g : bottom_grad) bottom_nonzero += std::abs(g) > 1e-4f;
  CHECK(bottom_nonzero > static_cast<int>(bottom_grad.size()) / 3);
}

TEST_CASE("DLRM is deterministic", "[trainer][ctr]") {
  CtrModelShape shape;  // full size
  CpuMathBackend cpu1, cpu2;
  CtrModel a(shape, &cpu1), b(shape, &cpu2);
  const int batch = 32;
  ModelInputs in = RandomInputs(shape, batch, 9);
  CHECK(CtrModel::UniformInit(shape, 0.1f, 9) ==
        CtrModel::UniformInit(shape, 0.1f, 9));
  CHECK(CtrModel::UniformInit(shape, 0.1f, 9) !=
        CtrModel::UniformInit(shape, 0.1f, 10));
  std::vector<float> pa(batch), pb(batch), ga(in.params.size()),
      gb(in.params.size()), ea(in.embeddings.size()), eb(in.embeddings.size());
  auto la = a.LossAndGradient(in.params, in.features, in.embeddings, in.labels,
                              absl::MakeSpan(pa), absl::MakeSpan(ga),
                              absl::MakeSpan(ea));
  // b first runs another batch, so stale scratch state would show.
  std::vector<float> p1(1), g1(in.params.size());
  std::vector<float> e1(shape.embedding_width());
  REQUIRE(b.LossAndGradient(in.params,
                            absl::MakeConstSpan(in.features).subspan(0, 13),
                            absl::MakeConstSpan(in.embeddings)
                                .subspan(0, shape.embedding_width()),
                            absl::MakeConstSpan(in.labels).subspan(0, 1),
                            absl::MakeSpan(p1), absl::MakeSpan(g1),
                            absl::MakeSpan(e1)).ok());
  auto lb = b.LossAndGradient(in.params, in.features, in.embeddings, in.labels,
                              absl::MakeSpan(pb), absl::MakeSpan(gb),
                              absl::MakeSpan(eb));
  REQUIRE(la.ok());
  REQUIRE(lb.ok());
  CHECK(*la == *lb);
  CHECK(pa == pb);
  CHECK(ga == gb);
  CHECK(ea == eb);
}

TEST_CASE("DLRM on CPU and CUDA agree", "[trainer][ctr][cuda]") {
  if (!CudaDeviceAvailable()) {
    TAUPS_SKIP("no usable CUDA device (or no CUDA in this build); "
               "CPU/CUDA DLRM agreement not checked");
  }
  auto cuda = CreateMathBackend(DeviceKind::kCuda);
  REQUIRE(cuda.ok());
  INFO("device: " << (*cuda)->description());
  CtrModelShape shape;
  CpuMathBackend cpu;
  CtrModel on_cpu(shape, &cpu), on_gpu(shape, cuda->get());
  const int batch = 256;
  ModelInputs in = RandomInputs(shape, batch, 12);
  in.params = CtrModel::UniformInit(shape, 0.1f, 12);
  std::vector<float> pc(batch), pg(batch), gc(in.params.size()),
      gg(in.params.size()), ec(in.embeddings.size()), eg(in.embeddings.size());
  auto lc = on_cpu.LossAndGradient(in.params, in.features, in.embeddings,
                                   in.labels, absl::MakeSpan(pc),
                                   absl::MakeSpan(gc), absl::MakeSpan(ec));
  auto lg = on_gpu.LossAndGradient(in.params, in.features, in.embeddings,
                                   in.labels, absl::MakeSpan(pg),
                                   absl::MakeSpan(gg), absl::MakeSpan(eg));
  REQUIRE(lc.ok());
  REQUIRE(lg.ok());
  CHECK(*lg == Approx(*lc).epsilon(1e-5));
  for (int i = 0; i < batch; ++i) REQUIRE(pg[i] == Approx(pc[i]).margin(1e-5));
  for (size_t i = 0; i < gc.size(); ++i) {
    REQUIRE(gg[i] == Approx(gc[i]).margin(1e-5));
  }
  for (size_t i = 0; i < ec.size(); ++i) {
    REQUIRE(eg[i] == Approx(ec[i]).margin(1e-5));
  }
}

}  // namespace
}  // namespace taups::trainer

// Binary metrics (AUC, log-loss), the Zipf sampler, the synthetic CTR
// generator with its planted model, and the CTR model's gradients.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <vector>

#include "worker/trainer/binary_metrics.h"
#include "worker/trainer/cpu_math_backend.h"
#include "worker/trainer/ctr_data.h"
#include "worker/trainer/ctr_model.h"
#include "worker/trainer/deterministic_rng.h"
#include "worker/trainer/zipf_sampler.h"

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
  auto zipf = ZipfSampler::Create(1000, 1.1);
  REQUIRE(zipf.ok());
  double total = 0;
  for (uint64_t r = 0; r < 1000; ++r) total += zipf->Probability(r);
  CHECK(total == Approx(1.0));
  CHECK(zipf->Probability(0) / zipf->Probability(1) == Approx(std::pow(2.0, 1.1)));
  Rng rng(3);
  std::vector<int> counts(1000, 0);
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) {
    const uint64_t r = zipf->Sample(rng);
    REQUIRE(r < 1000);
    ++counts[r];
  }
  for (int r : {0, 1, 9}) {
    const double expected = draws * zipf->Probability(r);
    CHECK(std::abs(counts[r] - expected) < 5 * std::sqrt(expected));
  }
  CHECK(absl::IsInvalidArgument(ZipfSampler::Create(0, 1.1).status()));
  CHECK(absl::IsInvalidArgument(ZipfSampler::Create(10, 0.0).status()));
}

TEST_CASE("CTR generator is deterministic and its planted model is informative",
          "[trainer][ctr]") {
  CtrSpec spec;
  spec.seed = 17;
  auto gen = CtrDataGenerator::Create(spec);
  REQUIRE(gen.ok());
  CtrExamples a, b, c;
  Rng r1(5), r2(5), r3(6);
  gen->Generate(20000, r1, a);
  gen->Generate(20000, r2, b);
  gen->Generate(20000, r3, c);
  CHECK(a.ids == b.ids);
  CHECK(a.labels == b.labels);
  CHECK(a.planted_probs == b.planted_probs);
  CHECK(a.ids != c.ids);
  REQUIRE(a.size() == 20000);
  REQUIRE(a.ids.size() == 20000u * spec.num_fields());
  for (size_t i = 0; i < a.ids.size(); ++i) {
    REQUIRE(a.ids[i] < spec.cardinalities[i % spec.num_fields()]);
  }
  // Another generator with the same spec plants the same model.
  auto gen2 = CtrDataGenerator::Create(spec);
  CHECK(gen2->PlantedLogit(a.ids.data()) == gen->PlantedLogit(a.ids.data()));

  double positives = 0;
  for (float y : a.labels) positives += y;
  const float rate = static_cast<float>(positives / a.size());
  CHECK(rate > 0.05f);
  CHECK(rate < 0.6f);
  // The planted probabilities beat the best constant predictor clearly.
  const std::vector<float> constant(a.size(), rate);
  const double planted = *LogLoss(a.planted_probs, a.labels);
  const double baseline = *LogLoss(constant, a.labels);
  CHECK(planted < baseline - 0.05);
  CHECK(*Auc(a.planted_probs, a.labels) > 0.7);
  // The ids are skewed: field 7's most popular id appears far more often
  // than the uniform rate would give.
  int top = 0;
  for (int i = 0; i < a.size(); ++i) top += a.ids[i * spec.num_fields() + 7] == 0;
  CHECK(top > 20000 / 100);

  spec.cardinalities.clear();
  CHECK(absl::IsInvalidArgument(CtrDataGenerator::Create(spec).status()));
}

TEST_CASE("Embedding keys separate fields and ids", "[trainer][ctr]") {
  std::set<uint64_t> keys;
  for (int f = 0; f < 8; ++f) {
    for (uint32_t id = 0; id < 1000; ++id) keys.insert(EmbeddingKey(f, id));
  }
  CHECK(keys.size() == 8000u);
  CHECK(EmbeddingKey(3, 42) == EmbeddingKey(3, 42));
}

TEST_CASE("CTR model gradients match finite differences", "[trainer][ctr]") {
  CtrModelShape shape;
  shape.num_fields = 3;
  shape.embedding_dim = 2;
  shape.hidden = 5;
  CpuMathBackend cpu;
  CtrModel model(shape, &cpu);
  std::vector<float> dense = CtrModel::UniformInit(shape, 0.7f, 4);
  Rng rng(8);
  const int batch = 6;
  std::vector<float> x(batch * shape.input());
  for (float& v : x) v = rng.UniformSymmetric(1.0f);
  const std::vector<float> labels = {1, 0, 0, 1, 1, 0};
  std::vector<float> probs(batch), dense_grad(dense.size()), x_grad(x.size());

  auto loss = model.LossAndGradient(dense, x, labels, absl::MakeSpan(probs),
                                    absl::MakeSpan(dense_grad),
                                    absl::MakeSpan(x_grad));
  REQUIRE(loss.ok());
  std::vector<float> scratch_p(batch), scratch_d(dense.size()),
      scratch_x(x.size());
  const auto loss_at = [&](const std::vector<float>& d,
                           const std::vector<float>& in) {
    auto l = model.LossAndGradient(d, in, labels, absl::MakeSpan(scratch_p),
                                   absl::MakeSpan(scratch_d),
                                   absl::MakeSpan(scratch_x));
    REQUIRE(l.ok());
    return *l;
  };
  // Predict agrees with the probabilities from the training pass.
  std::vector<float> predicted(batch);
  REQUIRE(model.Predict(dense, x, absl::MakeSpan(predicted)).ok());
  for (int i = 0; i < batch; ++i) CHECK(predicted[i] == Approx(probs[i]));

  const float eps = 1e-3f;
  for (size_t i = 0; i < dense.size(); ++i) {
    CAPTURE(i);
    auto plus = dense, minus = dense;
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric = (loss_at(plus, x) - loss_at(minus, x)) / (2 * eps);
    CHECK(dense_grad[i] == Approx(numeric).margin(1e-3).epsilon(2e-2));
  }
  int nonzero = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    auto plus = x, minus = x;
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric =
        (loss_at(dense, plus) - loss_at(dense, minus)) / (2 * eps);
    CHECK(x_grad[i] == Approx(numeric).margin(1e-3).epsilon(2e-2));
    nonzero += std::abs(numeric) > 1e-3;
  }
  CHECK(nonzero > static_cast<int>(x.size()) / 2);
}

}  // namespace
}  // namespace taups::trainer

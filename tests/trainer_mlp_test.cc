// MLP model: flat layout, gradient against finite differences, evaluation,
// and that plain local SGD on its gradients learns.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "worker/trainer/cpu_math_backend.h"
#include "worker/trainer/deterministic_rng.h"
#include "worker/trainer/mlp_model.h"

namespace taups::trainer {
namespace {

TEST_CASE("MLP flat layout is W1, b1, W2, b2", "[trainer][mlp]") {
  const MlpShape shape;  // 784-128-10
  CHECK(shape.w1_offset() == 0);
  CHECK(shape.b1_offset() == 784 * 128);
  CHECK(shape.w2_offset() == 784 * 128 + 128);
  CHECK(shape.b2_offset() == 784 * 128 + 128 + 128 * 10);
  CHECK(shape.num_params() == 101770);
}

// Loss of `params` on the batch (forward only, via LossAndGradient).
double Loss(Mlp& mlp, const std::vector<float>& params,
            const std::vector<float>& x, const std::vector<uint8_t>& y) {
  std::vector<float> scratch(params.size());
  auto stats = mlp.LossAndGradient(params, x.data(), y.data(),
                                   static_cast<int>(y.size()),
                                   absl::MakeSpan(scratch));
  REQUIRE(stats.ok());
  return stats->mean_loss;
}

TEST_CASE("MLP gradient matches central finite differences", "[trainer][mlp]") {
  const MlpShape shape{6, 5, 4};
  CpuMathBackend cpu;
  Mlp mlp(shape, &cpu);
  std::vector<float> params = Mlp::UniformInit(shape, 0.8f, 3);
  Rng rng(11);
  const int batch = 7;
  std::vector<float> x(batch * shape.input);
  for (float& v : x) v = rng.UniformSymmetric(1.0f);
  std::vector<uint8_t> y(batch);
  for (auto& label : y) label = static_cast<uint8_t>(rng.UniformInt(4));

  std::vector<float> grad(shape.num_params());
  auto stats = mlp.LossAndGradient(params, x.data(), y.data(), batch,
                                   absl::MakeSpan(grad));
  REQUIRE(stats.ok());
  CHECK(stats->examples == batch);
  REQUIRE(std::isfinite(stats->mean_loss));

  const float eps = 1e-3f;
  int checked_nonzero = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    CAPTURE(i);
    std::vector<float> plus = params, minus = params;
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric =
        (Loss(mlp, plus, x, y) - Loss(mlp, minus, x, y)) / (2.0 * eps);
    CHECK(grad[i] == Approx(numeric).margin(2e-3).epsilon(2e-2));
    if (std::abs(numeric) > 1e-3) ++checked_nonzero;
  }
  // The check is meaningful: most parameters have a visible gradient.
  CHECK(checked_nonzero > static_cast<int>(params.size()) / 2);
}

TEST_CASE("MLP rejects bad sizes and labels", "[trainer][mlp]") {
  const MlpShape shape{3, 2, 2};
  CpuMathBackend cpu;
  Mlp mlp(shape, &cpu);
  std::vector<float> params(shape.num_params()), grad(shape.num_params());
  std::vector<float> x(3, 0.5f);
  uint8_t bad_label = 2, good_label = 1;
  CHECK(absl::IsInvalidArgument(
      mlp.LossAndGradient(params, x.data(), &bad_label, 1, absl::MakeSpan(grad))
          .status()));
  std::vector<float> short_params(shape.num_params() - 1);
  CHECK(absl::IsInvalidArgument(mlp.LossAndGradient(short_params, x.data(),
                                                    &good_label, 1,
                                                    absl::MakeSpan(grad))
                                    .status()));
}

TEST_CASE("Local SGD on MLP gradients learns a separable toy task",
          "[trainer][mlp]") {
  // Class = index of the largest of 4 inputs.
  const MlpShape shape{4, 16, 4};
  CpuMathBackend cpu;
  Mlp mlp(shape, &cpu);
  Rng rng(1);
  const int n = 2000;
  std::vector<float> x(n * 4);
  std::vector<uint8_t> y(n);
  for (int i = 0; i < n; ++i) {
    int best = 0;
    for (int j = 0; j < 4; ++j) {
      x[i * 4 + j] = rng.UniformSymmetric(1.0f);
      if (x[i * 4 + j] > x[i * 4 + best]) best = j;
    }
    y[i] = static_cast<uint8_t>(best);
  }
  std::vector<float> params = Mlp::UniformInit(shape, 0.3f, 2);
  auto before = mlp.Evaluate(params, x.data(), y.data(), n);
  REQUIRE(before.ok());
  std::vector<float> grad(params.size());
  const int batch = 50;
  for (int epoch = 0; epoch < 30; ++epoch) {
    for (int start = 0; start < n; start += batch) {
      REQUIRE(mlp.LossAndGradient(params, x.data() + start * 4, y.data() + start,
                                  batch, absl::MakeSpan(grad))
                  .ok());
      for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.5f * grad[i];
    }
  }
  auto after = mlp.Evaluate(params, x.data(), y.data(), n);
  REQUIRE(after.ok());
  CHECK(after->examples == n);
  CHECK(after->mean_loss < 0.5 * before->mean_loss);
  CHECK(after->accuracy() > 0.9);
}

}  // namespace
}  // namespace taups::trainer

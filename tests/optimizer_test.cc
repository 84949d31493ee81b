#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "server/optimizer.h"

namespace taups {
namespace {

TEST_CASE("SGD subtracts lr * factor * g") {
  OptimizerConfig config;
  config.kind = OptimizerKind::kSgd;
  config.learning_rate = 0.5f;
  auto sgd = MakeOptimizer(config);
  REQUIRE(sgd->state_width() == 0);
  std::vector<float> w = {1.0f, -2.0f, 3.0f};
  const std::vector<float> g = {0.2f, 0.4f, -1.0f};
  sgd->Apply(w.data(), nullptr, g.data(), 3, 0.5f);
  // step = 0.5 * 0.5 = 0.25
  REQUIRE(w[0] == Approx(0.95f));
  REQUIRE(w[1] == Approx(-2.1f));
  REQUIRE(w[2] == Approx(3.25f));
}

TEST_CASE("Adagrad accumulates squares and scales the step") {
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdagrad;
  config.learning_rate = 0.1f;
  config.adagrad_initial_accumulator = 0.1f;
  config.adagrad_epsilon = 1e-8f;
  auto adagrad = MakeOptimizer(config);
  REQUIRE(adagrad->state_width() == 1);
  std::vector<float> w = {1.0f, 0.0f};
  std::vector<float> acc(2);
  adagrad->InitState(acc.data(), 2);
  REQUIRE(acc[0] == 0.1f);
  const std::vector<float> g1 = {0.3f, -2.0f};
  adagrad->Apply(w.data(), acc.data(), g1.data(), 2, 1.0f);
  // acc = 0.1 + 0.09 = 0.19; w = 1 - 0.1 * 0.3 / sqrt(0.19)
  REQUIRE(acc[0] == Approx(0.19f));
  REQUIRE(w[0] == Approx(1.0f - 0.1f * 0.3f / std::sqrt(0.19f)));
  // acc = 0.1 + 4 = 4.1; w = 0 + 0.1 * 2 / sqrt(4.1)
  REQUIRE(acc[1] == Approx(4.1f));
  REQUIRE(w[1] == Approx(0.2f / std::sqrt(4.1f)));
  // Second step uses the grown accumulator: 0.19 + 0.09 = 0.28.
  adagrad->Apply(w.data(), acc.data(), g1.data(), 1, 1.0f);
  REQUIRE(acc[0] == Approx(0.28f));
  REQUIRE(w[0] == Approx(1.0f - 0.03f / std::sqrt(0.19f) -
                         0.03f / std::sqrt(0.28f)));
}

}  // namespace
}  // namespace taups

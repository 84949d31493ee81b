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

namespace taups {
namespace {

TEST_CASE("Momentum accumulates a velocity") {
  OptimizerConfig config;
  config.kind = OptimizerKind::kMomentum;
  config.learning_rate = 0.1f;
  config.momentum = 0.5f;
  auto opt = MakeOptimizer(config);
  REQUIRE(opt->state_width() == 1);
  std::vector<float> w = {1.0f}, v(1);
  opt->InitState(v.data(), 1);
  const float g = 2.0f;
  opt->Apply(w.data(), v.data(), &g, 1, 1.0f);  // v = 2, w = 1 - 0.2
  REQUIRE(v[0] == 2.0f);
  REQUIRE(w[0] == Approx(0.8f));
  opt->Apply(w.data(), v.data(), &g, 1, 1.0f);  // v = 0.5*2 + 2 = 3, w -= 0.3
  REQUIRE(v[0] == 3.0f);
  REQUIRE(w[0] == Approx(0.5f));
}

TEST_CASE("Adam corrects its moments' bias by each parameter's own step count") {
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdam;
  config.learning_rate = 0.01f;
  config.adam_beta1 = 0.9f;
  config.adam_beta2 = 0.999f;
  config.adam_epsilon = 1e-8f;
  auto opt = MakeOptimizer(config);
  REQUIRE(opt->state_width() == 3);
  std::vector<float> w = {0.0f, 0.0f}, state(6);
  opt->InitState(state.data(), 2);
  // Step 1: m^ = g, v^ = g^2, so the step is lr * sign(g) (up to eps).
  const std::vector<float> g1 = {4.0f, -0.5f};
  opt->Apply(w.data(), state.data(), g1.data(), 2, 1.0f);
  REQUIRE(w[0] == Approx(-0.01f));
  REQUIRE(w[1] == Approx(0.01f));
  REQUIRE(state[2] == 1.0f);  // t of element 0
  // Step 2 with g = 2: m = 0.9*0.4 + 0.2 = 0.56 (m^ = 0.56/0.19),
  // v = 0.999*0.016 + 0.004 = 0.019984 (v^ = 0.019984/0.001999).
  const std::vector<float> g2 = {2.0f, 0.0f};
  opt->Apply(w.data(), state.data(), g2.data(), 1, 1.0f);
  const double m_hat = 0.56 / 0.19, v_hat = 0.019984 / (1 - 0.999 * 0.999);
  REQUIRE(w[0] == Approx(-0.01 - 0.01 * m_hat / std::sqrt(v_hat)).epsilon(1e-4));
  REQUIRE(state[5] == 1.0f);  // element 1 was not updated again
}

TEST_CASE("FTRL-Proximal follows the closed form, with L1 zeroing small z") {
  OptimizerConfig config;
  config.kind = OptimizerKind::kFtrl;
  config.learning_rate = 0.5f;  // alpha
  config.ftrl_beta = 1.0f;
  config.ftrl_l1 = 1.0f;
  config.ftrl_l2 = 0.5f;
  auto opt = MakeOptimizer(config);
  REQUIRE(opt->state_width() == 2);
  std::vector<float> w = {0.0f}, state(2);
  opt->InitState(state.data(), 1);
  // g = 0.6: n = 0.36, sigma = 0.6/0.5 = 1.2, z = 0.6 - 1.2*0 = 0.6;
  // |z| <= l1, so w = 0.
  float g = 0.6f;
  opt->Apply(w.data(), state.data(), &g, 1, 1.0f);
  REQUIRE(state[0] == Approx(0.6f));
  REQUIRE(state[1] == Approx(0.36f));
  REQUIRE(w[0] == 0.0f);
  // g = 3: n = 9.36, sigma = (sqrt(9.36) - 0.6)/0.5, z = 0.6 + 3 - sigma*0 = 3.6;
  // w = -(3.6 - 1) / ((1 + sqrt(9.36))/0.5 + 0.5).
  g = 3.0f;
  opt->Apply(w.data(), state.data(), &g, 1, 1.0f);
  REQUIRE(state[0] == Approx(3.6f));
  REQUIRE(w[0] == Approx(-2.6 / ((1 + std::sqrt(9.36)) / 0.5 + 0.5)));
}

TEST_CASE("optimizer settings are validated") {
  TableConfig config = TableConfig::Dense("w", 4);
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.adam_beta2 = 1.0f;
  REQUIRE(config.Validate().code() == absl::StatusCode::kInvalidArgument);
  config.optimizer.adam_beta2 = 0.999f;
  config.optimizer.kind = OptimizerKind::kFtrl;
  config.optimizer.ftrl_l1 = -1.0f;
  REQUIRE(config.Validate().code() == absl::StatusCode::kInvalidArgument);
  config.optimizer.ftrl_l1 = 0.0f;
  REQUIRE(config.Validate().ok());
}

}  // namespace
}  // namespace taups

// The vectorised optimizer rules against the scalar reference
// (optimizer_reference.h): same bits for every rule, every run length, both
// Adam paths, row batches; and the finiteness proofs never say "finite"
// where the step is not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "server/optimizer.h"
#include "tests/optimizer_reference.h"
#include "tests/row_batch_of.h"

namespace taups {
namespace {

OptimizerConfig ConfigOf(OptimizerKind kind) {
  OptimizerConfig config;
  config.kind = kind;
  config.learning_rate = 0.05f;
  config.momentum = 0.9f;
  config.adagrad_initial_accumulator = 0.1f;
  config.ftrl_l1 = 0.2f;
  config.ftrl_l2 = 0.1f;
  return config;
}

const OptimizerKind kKinds[] = {OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                OptimizerKind::kMomentum, OptimizerKind::kAdam,
                                OptimizerKind::kFtrl};

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  // An empty vector's data() may be null, which memcmp must not be given.
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Random parameters, gradient and a few steps' worth of state.
struct Run {
  std::vector<float> w, state, g;
};

Run RandomRun(const Optimizer& opt, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t width = static_cast<size_t>(opt.state_width());
  Run run{std::vector<float>(n), std::vector<float>(n * width),
          std::vector<float>(n)};
  opt.InitState(run.state.data(), n);
  for (float& x : run.w) x = normal(rng);
  for (float& x : run.g) x = normal(rng);
  return run;
}

TEST_CASE("vectorised rules give the scalar reference's bits") {
  std::mt19937 rng(7);
  for (OptimizerKind kind : kKinds) {
    const OptimizerConfig config = ConfigOf(kind);
    auto opt = MakeOptimizer(config);
    for (size_t n : {1, 3, 4, 7, 16, 33, 1000}) {
      Run mine = RandomRun(*opt, n, rng);
      Run ref = mine;
      for (int step = 0; step < 4; ++step) {
        // Adam: from step 2 on, parameters with different step counts.
        const size_t count = step == 1 ? n / 2 + 1 : n;
        opt->Apply(mine.w.data(), mine.state.data(), mine.g.data(), count, 0.7f);
        ReferenceApply(config, ref.w.data(), ref.state.data(), ref.g.data(),
                       count, 0.7f);
        INFO("rule " << static_cast<int>(kind) << " n " << n << " step " << step);
        REQUIRE(SameBits(mine.w, ref.w));
        REQUIRE(SameBits(mine.state, ref.state));
      }
    }
  }
}

TEST_CASE("ApplyBytes reads the gradient at any alignment and gives Apply's bits") {
  std::mt19937 rng(17);
  for (OptimizerKind kind : kKinds) {
    auto opt = MakeOptimizer(ConfigOf(kind));
    for (size_t n : {1, 5, 16, 33, 1000}) {
      for (size_t shift = 0; shift < 4; ++shift) {
        Run mine = RandomRun(*opt, n, rng);
        Run ref = mine;
        // The gradient's bytes `shift` bytes past an aligned address.
        std::vector<char> bytes(4 * n + 8);
        char* at = bytes.data() + shift;
        for (int step = 0; step < 3; ++step) {
          // Adam: from step 2 on, parameters with different step counts.
          const size_t count = step == 1 ? n / 2 + 1 : n;
          std::memcpy(at, mine.g.data(), 4 * n);
          opt->ApplyBytes(mine.w.data(), mine.state.data(), at, count, 0.7f);
          opt->Apply(ref.w.data(), ref.state.data(), ref.g.data(), count, 0.7f);
          INFO("rule " << static_cast<int>(kind) << " n " << n << " shift "
                       << shift << " step " << step);
          REQUIRE(SameBits(mine.w, ref.w));
          REQUIRE(SameBits(mine.state, ref.state));
        }
      }
    }
  }
}

TEST_CASE("ApplyRows updates each row as Apply would") {
  std::mt19937 rng(11);
  constexpr uint32_t kDim = 16;
  for (OptimizerKind kind : kKinds) {
    auto opt = MakeOptimizer(ConfigOf(kind));
    const size_t stride = kDim * (1 + opt->state_width());
    std::vector<float> arena(8 * stride);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (size_t r = 0; r < 8; ++r) {
      for (uint32_t j = 0; j < kDim; ++j) arena[r * stride + j] = normal(rng);
      opt->InitState(arena.data() + r * stride + kDim, kDim);
    }
    std::vector<float> grads(5 * kDim);
    for (float& x : grads) x = normal(rng);
    std::vector<float> expected = arena;
    const std::vector<uint32_t> slots = {6, 1, 3, 0};
    const std::vector<uint32_t> grad_rows = {4, 0, 2, 1};
    for (size_t k = 0; k < slots.size(); ++k) {
      float* row = expected.data() + slots[k] * stride;
      opt->Apply(row, row + kDim, grads.data() + grad_rows[k] * kDim, kDim, 1.0f);
    }
    opt->ApplyRows(BatchOf(arena, stride, slots, grads, grad_rows, kDim), 1.0f);
    INFO("rule " << static_cast<int>(kind));
    REQUIRE(SameBits(arena, expected));
  }
}

bool StepIsFinite(const OptimizerConfig& config, Run run) {
  ReferenceApply(config, run.w.data(), run.state.data(), run.g.data(),
                 run.g.size(), 1.0f);
  for (float x : run.w) if (!std::isfinite(x)) return false;
  for (float x : run.state) if (!std::isfinite(x)) return false;
  return true;
}

TEST_CASE("finiteness proofs and checks agree with running the step") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-10.0f, 38.0f);
  std::bernoulli_distribution negative(0.5);
  for (OptimizerKind kind : kKinds) {
    const OptimizerConfig config = ConfigOf(kind);
    auto opt = MakeOptimizer(config);
    for (int trial = 0; trial < 400; ++trial) {
      Run run = RandomRun(*opt, 8, rng);
      // Magnitudes over the whole float range, so some steps overflow.
      auto wild = [&] {
        const float x = std::pow(10.0f, exponent(rng));
        return negative(rng) ? -x : x;
      };
      for (float& x : run.g) x = wild();
      for (float& x : run.w) x = wild();
      if (kind == OptimizerKind::kMomentum) {
        for (float& x : run.state) x = wild();
      }
      if (kind == OptimizerKind::kAdam) {
        for (size_t i = 0; i < 8; ++i) {
          run.state[3 * i] = wild();
          run.state[3 * i + 1] = std::abs(wild());
          run.state[3 * i + 2] = static_cast<float>(trial % 5);
        }
      }
      const bool finite = StepIsFinite(config, run);
      float max_abs = 0.0f;
      for (float x : run.g) max_abs = std::max(max_abs, std::abs(x));
      INFO("rule " << static_cast<int>(kind) << " trial " << trial);
      if (opt->StepFiniteFor(run.state.data(), 8, max_abs, 1.0f)) {
        REQUIRE(finite);
      }
      REQUIRE(opt->StaysFinite(run.w.data(), run.state.data(), run.g.data(), 8,
                               1.0f, max_abs) == finite);
    }
  }
}

TEST_CASE("RowsStayFinite answers as the step run on every row") {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> exponent(-10.0f, 38.0f);
  std::bernoulli_distribution negative(0.5), wild_row(0.25);
  constexpr uint32_t kDim = 8;
  constexpr size_t kRows = 6;
  for (OptimizerKind kind : kKinds) {
    const OptimizerConfig config = ConfigOf(kind);
    auto opt = MakeOptimizer(config);
    const size_t width = static_cast<size_t>(opt->state_width());
    const size_t stride = kDim * (1 + width);
    int finite_batches = 0, other_batches = 0;
    for (int trial = 0; trial < 300; ++trial) {
      auto wild = [&] {
        const float x = std::pow(10.0f, exponent(rng));
        return negative(rng) ? -x : x;
      };
      // Rows spread over a larger arena, in shuffled slots; a few rows get
      // magnitudes over the whole float range, so some steps overflow.
      std::vector<float> arena((kRows + 3) * stride);
      std::vector<float> grads(kRows * kDim);
      std::vector<uint32_t> slots = {7, 2, 0, 5, 8, 3};
      std::vector<uint32_t> grad_rows = {3, 0, 5, 1, 4, 2};
      bool expected = true;
      float max_abs = 0.0f;
      for (size_t k = 0; k < kRows; ++k) {
        Run run = RandomRun(*opt, kDim, rng);
        if (wild_row(rng)) {
          for (float& x : run.g) x = wild();
          for (float& x : run.w) x = wild();
          if (kind == OptimizerKind::kMomentum) {
            for (float& x : run.state) x = wild();
          }
          if (kind == OptimizerKind::kAdam) {
            for (size_t i = 0; i < kDim; ++i) {
              run.state[3 * i] = wild();
              run.state[3 * i + 1] = std::abs(wild());
            }
          }
        }
        for (float x : run.g) max_abs = std::max(max_abs, std::abs(x));
        expected = expected && StepIsFinite(config, run);
        float* row = arena.data() + slots[k] * stride;
        std::copy(run.w.begin(), run.w.end(), row);
        std::copy(run.state.begin(), run.state.end(), row + kDim);
        std::copy(run.g.begin(), run.g.end(), grads.begin() + grad_rows[k] * kDim);
      }
      const std::vector<float> before = arena;
      const RowBatch batch =
          BatchOf(arena, stride, slots, grads, grad_rows, kDim);
      INFO("rule " << static_cast<int>(kind) << " trial " << trial);
      REQUIRE(opt->RowsStayFinite(batch, 1.0f, max_abs) == expected);
      REQUIRE(SameBits(arena, before));  // nothing changed
      (expected ? finite_batches : other_batches) += 1;
      // A non-finite bound on |g| is never finite.
      REQUIRE_FALSE(opt->RowsStayFinite(batch, 1.0f, INFINITY));
    }
    // Both answers were exercised where a step can overflow from finite
    // values below 1e38 (Adam's g^2); the other rules' overflows are covered
    // with state near FLT_MAX in sparse_apply_test.
    REQUIRE(finite_batches > 0);
    if (kind == OptimizerKind::kAdam) {
      REQUIRE(other_batches > 0);
    }
  }
}

TEST_CASE("a proof with state covers ordinary Momentum and Adam steps") {
  for (OptimizerKind kind : {OptimizerKind::kMomentum, OptimizerKind::kAdam}) {
    auto opt = MakeOptimizer(ConfigOf(kind));
    std::mt19937 rng(5);
    Run run = RandomRun(*opt, 64, rng);
    for (int step = 0; step < 3; ++step) {
      opt->Apply(run.w.data(), run.state.data(), run.g.data(), 64, 1.0f);
    }
    REQUIRE(opt->StepFiniteFor(run.state.data(), 64, 10.0f, 1.0f));
    REQUIRE_FALSE(opt->StepFiniteFor(run.state.data(), 64, INFINITY, 1.0f));
  }
}

}  // namespace
}  // namespace taups

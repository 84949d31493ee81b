// DenseTable's parallel apply (TaskPool): a push, a step buffer and a pull
// cut into runs on several cores give the same bits as the serial pass, for
// every optimizer rule with and without delay compensation, on odd sizes;
// and a push whose last run would leave a non-finite value is refused whole
// by the shard, with nothing of it applied anywhere.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/task_pool.h"
#include "server/dense_table.h"
#include "server/parameter_store.h"
#include "tests/dense_table_fixtures.h"
#include "tests/store_pull_all.h"

namespace taups {
namespace {

// The same calls on `serial` and `parallel`, compared after each.
void RunBoth(DenseTable& serial, DenseTable& parallel, uint64_t n) {
  const Range range{0, n};
  std::vector<float> pulled_s(n), pulled_p(n);
  serial.Pull(0, absl::MakeSpan(pulled_s), 1);
  parallel.Pull(0, absl::MakeSpan(pulled_p), 1);
  REQUIRE(SameBits(pulled_s, pulled_p));
  // Whole range, twice (Adam's shared-step path), by worker 1 whose pull
  // the delay compensation reads.
  for (uint32_t round = 0; round < 2; ++round) {
    const std::vector<float> g = UniformGradient(n, 11 + round);
    const GradientPart part = DensePart(0, g);
    REQUIRE(serial.UpdateStaysFinite(part, 0.75f, 1) ==
            parallel.UpdateStaysFinite(part, 0.75f, 1));
    serial.Apply(part, 0.75f, 1);
    parallel.Apply(part, 0.75f, 1);
    REQUIRE(SameTable(serial, parallel));
  }
  // A tail starting off any run boundary: afterwards Adam's step counts
  // differ within runs (its per-element path).
  const uint64_t from = n / 3;
  const std::vector<float> tail = UniformGradient(n - from, 29);
  serial.Apply(DensePart(range.begin + from, tail), 1.0f, 2);
  parallel.Apply(DensePart(range.begin + from, tail), 1.0f, 2);
  REQUIRE(SameTable(serial, parallel));
  // A sync step's buffer, applied as a mean.
  std::unique_ptr<StepBuffer> bs = serial.NewBuffer();
  std::unique_ptr<StepBuffer> bp = parallel.NewBuffer();
  const std::vector<float> g1 = UniformGradient(n, 41), g2 = UniformGradient(n, 43);
  for (StepBuffer* b : {bs.get(), bp.get()}) {
    b->Add(DensePart(0, g1), 1.0f);
    b->Add(DensePart(0, g2), 1.0f);
  }
  REQUIRE(serial.BufferStaysFinite(*bs, 0.5f, 1.0f) ==
          parallel.BufferStaysFinite(*bp, 0.5f, 1.0f));
  serial.ApplyBuffer(*bs, 0.5f, 1.0f);
  parallel.ApplyBuffer(*bp, 0.5f, 1.0f);
  REQUIRE(SameTable(serial, parallel));
  serial.Pull(0, absl::MakeSpan(pulled_s), 1);
  parallel.Pull(0, absl::MakeSpan(pulled_p), 1);
  REQUIRE(SameBits(pulled_s, pulled_p));
}

TEST_CASE("a parallel apply gives the serial apply's bits for every rule") {
  TaskPool pool(4);
  const OptimizerKind kinds[] = {OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                 OptimizerKind::kMomentum, OptimizerKind::kAdam,
                                 OptimizerKind::kFtrl};
  const uint64_t sizes[] = {1, 7, 1023, (uint64_t{1} << 20) + 3};
  for (OptimizerKind kind : kinds) {
    for (bool dc : {false, true}) {
      for (uint64_t n : sizes) {
        SECTION(absl::StrCat("rule ", static_cast<int>(kind), " dc ", dc,
                             " n ", n)) {
          const TableConfig config = DenseTestConfig(kind, n, dc);
          DenseTable serial(config, Range{0, n});
          serial.SetTaskPool(nullptr);
          DenseTable parallel(config, Range{0, n});
          // Small tables: runs of 3 elements (odd, across lock blocks'
          // insides); the large one: the shard's own cut (whole blocks).
          if (n < DenseTable::kParallelMin) {
            parallel.SetTaskPool(&pool, 1, 3);
          } else {
            parallel.SetTaskPool(&pool);
          }
          RunBoth(serial, parallel, n);
        }
      }
    }
  }
}

TEST_CASE("the pool runs every task once, with concurrent callers") {
  TaskPool pool(3);
  REQUIRE(pool.threads() == 3);
  constexpr size_t kTasks = 1000;
  std::vector<std::atomic<int>> seen_a(kTasks), seen_b(kTasks);
  std::thread other([&] {
    for (int r = 0; r < 50; ++r) pool.Run(kTasks, [&](size_t i) { ++seen_b[i]; });
  });
  for (int r = 0; r < 50; ++r) pool.Run(kTasks, [&](size_t i) { ++seen_a[i]; });
  other.join();
  for (size_t i = 0; i < kTasks; ++i) {
    REQUIRE(seen_a[i].load() == 50);
    REQUIRE(seen_b[i].load() == 50);
  }
  TaskPool serial(0);
  REQUIRE(serial.threads() == 1);
  int calls = 0;
  serial.Run(5, [&](size_t) { ++calls; });
  REQUIRE(calls == 5);
}

PushMeta Meta(uint64_t seq, uint64_t base_version) {
  PushMeta meta;
  meta.origin = PushOrigin{0, 1, seq};
  meta.base_version = base_version;
  return meta;
}

TEST_CASE("a push that would overflow in its last run is refused whole") {
  // This binary's shared pool, which the store's tables use: 4 cores.
  TaskPool::SetSharedThreads(4);  // false once made, by an earlier section
  const uint64_t n = (uint64_t{1} << 20) + 3;
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum}) {
    SECTION(absl::StrCat("rule ", static_cast<int>(kind))) {
      TableConfig config = TableConfig::Dense("w", n);
      config.optimizer.kind = kind;
      config.optimizer.learning_rate = 1.0f;
      ParameterStore store(0, 1), reference(0, 1);
      bool created = false;
      REQUIRE(store.CreateTable(config, true, &created).ok());
      REQUIRE(reference.CreateTable(config, true, &created).ok());
      // w[last] = -3e38 (and Momentum's v[last] = 3e38): finite.
      std::vector<float> g(n, 0.25f);
      g[n - 1] = 3e38f;
      REQUIRE(store.PushDense("w", 0, g, Meta(1, 0)).ok());
      REQUIRE(reference.PushDense("w", 0, g, Meta(1, 0)).ok());
      REQUIRE(TaskPool::Shared().threads() == 4);
      const std::vector<float> before = PullAll(store, n);
      REQUIRE(std::isfinite(before[n - 1]));

      // A NaN in the last run of the gradient.
      std::vector<float> nan_g(n, 1.0f);
      nan_g[n - 1] = std::numeric_limits<float>::quiet_NaN();
      auto nan_push = store.PushDense("w", 0, nan_g, Meta(2, 1));
      REQUIRE(nan_push.status().code() == absl::StatusCode::kInvalidArgument);
      // Finite values whose update overflows in the last run only.
      auto overflow = store.PushDense("w", 0, g, Meta(3, 1));
      REQUIRE(overflow.status().code() == absl::StatusCode::kInvalidArgument);
      REQUIRE(SameBits(PullAll(store, n), before));
      REQUIRE(store.GetTable("w")->version == 1);
      // Nothing of the optimizer state moved either: the next push lands
      // where it lands on a shard that never saw the refused ones.
      std::vector<float> next = UniformGradient(n, 5);
      next[n - 1] = -3e38f;  // brings w (and v) back towards 0
      REQUIRE(store.PushDense("w", 0, next, Meta(4, 1)).ok());
      REQUIRE(reference.PushDense("w", 0, next, Meta(2, 1)).ok());
      REQUIRE(SameBits(PullAll(store, n), PullAll(reference, n)));
    }
  }
}

}  // namespace
}  // namespace taups

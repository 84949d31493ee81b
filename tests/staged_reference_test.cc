// Staged slices that refer to the received floats instead of copying them
// (StagedSlice::Holding, PushDense's `holder`): the staged slice points at
// the caller's floats and keeps their holder alive until its push is applied
// or refused, and a multi-slice push applied from such slices leaves exactly
// the bits of the same push staged as copies.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "server/parameter_store.h"
#include "server/staged_pushes.h"
#include "tests/store_pull_all.h"

namespace taups {
namespace {

using Floats = std::vector<float>;

std::shared_ptr<const Floats> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
  auto g = std::make_shared<Floats>(n);
  for (float& v : *g) v = dist(rng);
  return g;
}

bool SameBits(const Floats& a, const Floats& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

TEST_CASE("a held staged slice refers to the floats; without a holder it copies") {
  const Floats values = {1.0f, -2.0f, 3.5f};
  const std::vector<uint64_t> keys = {4};
  GradientPart part;
  part.offset = 9;
  part.values = values;
  part.max_abs = 3.5f;
  auto holder = std::make_shared<int>(0);

  const StagedSlice held = StagedSlice::Holding(2, part, holder);
  REQUIRE(held.AsPart().values.data() == values.data());
  REQUIRE(held.AsPart().values.size() == 3);
  REQUIRE(held.AsPart().offset == 9);
  REQUIRE(held.AsPart().max_abs == 3.5f);
  REQUIRE(held.values.empty());
  REQUIRE(held.bytes() == 12);
  REQUIRE(holder.use_count() == 2);

  const StagedSlice copied = StagedSlice::Holding(2, part, nullptr);
  REQUIRE(copied.AsPart().values.data() != values.data());
  REQUIRE(SameBits(copied.values, values));
  REQUIRE(copied.bytes() == 12);

  part.keys = keys;  // sparse rows are always copied
  const StagedSlice sparse = StagedSlice::Holding(2, part, holder);
  REQUIRE(sparse.holder == nullptr);
  REQUIRE(sparse.AsPart().values.data() != values.data());
  REQUIRE(holder.use_count() == 2);
}

PushMeta Slice(uint64_t seq, uint32_t index) {
  PushMeta meta;
  meta.origin = PushOrigin{1, 1, seq};
  meta.slices = 3;
  meta.slice_index = index;
  return meta;
}

TEST_CASE("a push staged by reference applies the bits of one staged by copy") {
  // Odd slice lengths, slices arriving out of order; Adam so the optimizer
  // state matters; two pushes so the second sees the first's state.
  const uint64_t n = 1001;
  const uint64_t begins[] = {0, 333, 700, n};
  TableConfig config = TableConfig::Dense("w", n);
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.learning_rate = 0.01f;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.5f;
  ParameterStore held(0, 1), copied(0, 1);
  bool created = false;
  REQUIRE(held.CreateTable(config, true, &created).ok());
  REQUIRE(copied.CreateTable(config, true, &created).ok());

  for (uint64_t seq = 1; seq <= 2; ++seq) {
    std::shared_ptr<const Floats> g[3];
    for (uint32_t i = 0; i < 3; ++i) {
      g[i] = Random(begins[i + 1] - begins[i], 10 * seq + i);
    }
    for (uint32_t i : {2u, 0u, 1u}) {
      REQUIRE(held.PushDense("w", begins[i], *g[i], Slice(seq, i), g[i]).ok());
      REQUIRE(copied.PushDense("w", begins[i], *g[i], Slice(seq, i)).ok());
      // While the push waits, the store holds the staged slices' floats.
      if (i == 2) REQUIRE(g[2].use_count() == 2);
    }
    // Applied: nothing of the push is held any more.
    for (const auto& slice : g) REQUIRE(slice.use_count() == 1);
    REQUIRE(held.GetTable("w")->version == seq);
  }
  REQUIRE(SameBits(PullAll(held, n), PullAll(copied, n)));
}

TEST_CASE("a push refused in its last slice lets go of its held slices") {
  const uint64_t n = 10;
  TableConfig config = TableConfig::Dense("w", n);
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(config, true, &created).ok());
  const Floats before = PullAll(store, n);
  auto first = std::make_shared<const Floats>(4, 0.5f);
  auto second = std::make_shared<const Floats>(3, 0.25f);
  Floats bad(3, 1.0f);
  bad[1] = std::numeric_limits<float>::infinity();
  REQUIRE(store.PushDense("w", 0, *first, Slice(1, 0), first).ok());
  REQUIRE(store.PushDense("w", 4, *second, Slice(1, 1), second).ok());
  REQUIRE(first.use_count() == 2);
  const auto refused = store.PushDense("w", 7, bad, Slice(1, 2));
  REQUIRE(refused.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(first.use_count() == 1);
  REQUIRE(second.use_count() == 1);
  REQUIRE(SameBits(PullAll(store, n), before));
  REQUIRE(store.GetTable("w")->version == 0);
}

}  // namespace
}  // namespace taups

// A dense gradient left in the pieces it was received in (GradientPart with
// FloatPieces, as the gRPC edge hands a large raw push over): the table, its
// finite check, its step buffer, staging and the store give exactly what the
// same gradient in one array gives, for every optimizer rule, with and
// without delay compensation, serial and on several cores; and a NaN in a
// later piece refuses the whole push with nothing applied.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/float_pieces.h"
#include "common/task_pool.h"
#include "server/dense_table.h"
#include "server/parameter_store.h"
#include "tests/dense_table_fixtures.h"
#include "tests/store_pull_all.h"

namespace taups {
namespace {

// A gradient's bytes as gRPC might deliver them: placed `shift` bytes past
// an aligned address and cut into pieces of 1 to `max_piece` bytes (so
// floats straddle pieces and lie at every alignment).
class ReceivedFloats {
 public:
  ReceivedFloats(const std::vector<float>& g, size_t shift, size_t max_piece,
                 uint32_t seed)
      : storage_(4 * g.size() + 8) {
    char* base = storage_.data() + shift;
    if (!g.empty()) std::memcpy(base, g.data(), 4 * g.size());
    std::mt19937 rng(seed);
    std::uniform_int_distribution<size_t> cut(1, max_piece);
    std::vector<absl::string_view> views;
    for (size_t at = 0; at < 4 * g.size();) {
      const size_t n = std::min(cut(rng), 4 * g.size() - at);
      views.emplace_back(base + at, n);
      at += n;
    }
    pieces_ = FloatPieces(views);
  }
  const FloatPieces& pieces() const { return pieces_; }

 private:
  std::vector<char> storage_;
  FloatPieces pieces_;
};

GradientPart PiecesPart(uint64_t offset, const FloatPieces& pieces) {
  GradientPart part;
  part.offset = offset;
  part.pieces = &pieces;
  return part;
}

const OptimizerKind kKinds[] = {OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                OptimizerKind::kMomentum, OptimizerKind::kAdam,
                                OptimizerKind::kFtrl};

TEST_CASE("a gradient in pieces applies the bits of the same gradient in one array") {
  TaskPool pool(4);
  for (OptimizerKind kind : kKinds) {
    for (bool dc : {false, true}) {
      for (uint64_t n : {uint64_t{1}, uint64_t{1023},
                         DenseTable::kBlockSize * 3 + 5}) {
        SECTION(absl::StrCat("rule ", static_cast<int>(kind), " dc ", dc,
                             " n ", n)) {
          const TableConfig config = DenseTestConfig(kind, n, dc);
          DenseTable arrays(config, Range{0, n});
          DenseTable pieces(config, Range{0, n});
          arrays.SetTaskPool(nullptr);
          // Runs of 3 elements on the pool for small tables (runs start
          // inside pieces); the shard's own cut for the large one.
          if (n < 4096) {
            pieces.SetTaskPool(&pool, 1, 3);
          } else {
            pieces.SetTaskPool(&pool);
          }
          std::vector<float> pulled(n);
          arrays.Pull(0, absl::MakeSpan(pulled), 1);  // delay compensation's
          pieces.Pull(0, absl::MakeSpan(pulled), 1);  // backup of worker 1
          for (uint32_t round = 0; round < 3; ++round) {
            // Round 1 pushes a tail from an odd offset (Adam's step counts
            // then differ within blocks).
            const uint64_t from = round == 1 ? n / 3 : 0;
            const std::vector<float> g = UniformGradient(n - from, 5 + round);
            const ReceivedFloats received(g, round % 4, 4 + 37 * round,
                                          round);
            REQUIRE(received.pieces().floats() == g.size());
            const GradientPart in_array = DensePart(from, g);
            const GradientPart in_pieces = PiecesPart(from, received.pieces());
            REQUIRE(in_pieces.size() == in_array.size());
            REQUIRE(arrays.UpdateStaysFinite(in_array, 0.75f, 1) ==
                    pieces.UpdateStaysFinite(in_pieces, 0.75f, 1));
            arrays.Apply(in_array, 0.75f, 1);
            pieces.Apply(in_pieces, 0.75f, 1);
            INFO("round " << round);
            REQUIRE(SameTable(arrays, pieces));
          }
          // A sync step's sum of a part in pieces and one in an array.
          std::unique_ptr<StepBuffer> ba = arrays.NewBuffer();
          std::unique_ptr<StepBuffer> bp = pieces.NewBuffer();
          const std::vector<float> g1 = UniformGradient(n, 41);
          const std::vector<float> g2 = UniformGradient(n, 43);
          const ReceivedFloats r1(g1, 3, 11, 9);
          ba->Add(DensePart(0, g1), 1.0f);
          ba->Add(DensePart(0, g2), 1.0f);
          bp->Add(PiecesPart(0, r1.pieces()), 1.0f);
          bp->Add(DensePart(0, g2), 1.0f);
          REQUIRE(ba->Export() == bp->Export());
        }
      }
    }
  }
}

TEST_CASE("the finite check of a gradient in pieces answers as the array's") {
  // Adam's proof from the state fails for a huge gradient, so the trial on
  // copies runs (the pieces are gathered for it); SGD's fails too where
  // lr * max |g| passes 1e30.
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam,
                             OptimizerKind::kMomentum}) {
    const uint64_t n = 700;
    TableConfig config = DenseTestConfig(kind, n, false);
    DenseTable arrays(config, Range{0, n});
    DenseTable pieces(config, Range{0, n});
    for (float big : {1.0f, 1e20f, 1e36f, std::numeric_limits<float>::max()}) {
      std::vector<float> g = UniformGradient(n, 3);
      g[n - 2] = big;
      const ReceivedFloats received(g, 1, 9, 4);
      GradientPart in_pieces = PiecesPart(0, received.pieces());
      in_pieces.max_abs = MaxAbsOfPieces(received.pieces().pieces());
      GradientPart in_array = DensePart(0, g);
      in_array.max_abs = in_pieces.max_abs;
      INFO("rule " << static_cast<int>(kind) << " big " << big);
      REQUIRE(arrays.UpdateStaysFinite(in_array, 1.0f, 0) ==
              pieces.UpdateStaysFinite(in_pieces, 1.0f, 0));
    }
  }
}

PushMeta SliceOf(uint64_t seq, uint32_t index, uint32_t slices) {
  PushMeta meta;
  meta.origin = PushOrigin{1, 1, seq};
  meta.slices = slices;
  meta.slice_index = index;
  return meta;
}

TEST_CASE("a multi-slice push in pieces is staged by reference and lands as the arrays do") {
  const uint64_t n = 5000;
  const uint64_t begins[] = {0, 1700, 3001, n};
  const TableConfig config = DenseTestConfig(OptimizerKind::kAdam, n, false);
  ParameterStore from_pieces(0, 1), from_arrays(0, 1);
  bool created = false;
  REQUIRE(from_pieces.CreateTable(config, true, &created).ok());
  REQUIRE(from_arrays.CreateTable(config, true, &created).ok());
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    std::vector<float> g[3];
    std::shared_ptr<const ReceivedFloats> received[3];
    for (uint32_t i = 0; i < 3; ++i) {
      g[i] = UniformGradient(begins[i + 1] - begins[i], 10 * seq + i);
      received[i] = std::make_shared<const ReceivedFloats>(g[i], i + 1, 29,
                                                           seq + i);
    }
    for (uint32_t i : {1u, 2u, 0u}) {
      REQUIRE(from_pieces.PushDense("w", begins[i], received[i]->pieces(),
                                    SliceOf(seq, i, 3), received[i])
                  .ok());
      REQUIRE(from_arrays.PushDense("w", begins[i], g[i], SliceOf(seq, i, 3))
                  .ok());
      // While the push waits, staging holds the received bytes, no copy.
      if (i == 1) REQUIRE(received[1].use_count() == 2);
    }
    for (const auto& r : received) REQUIRE(r.use_count() == 1);
    REQUIRE(from_pieces.GetTable("w")->version == seq);
  }
  REQUIRE(SameBits(PullAll(from_pieces, n), PullAll(from_arrays, n)));
}

TEST_CASE("clipped and sync pushes in pieces land as the arrays do") {
  // Clipping scales a gathered copy; a sync step sums the parts into its
  // buffer: both gather a gradient left in pieces first.
  const uint64_t n = 4000;
  for (bool sync : {false, true}) {
    TableConfig config = DenseTestConfig(OptimizerKind::kMomentum, n, false);
    config.staleness.clip_norm = 3.0f;  // the uniform gradients' norm is ~73
    if (sync) {
      config.consistency.kind = ConsistencyKind::kSync;
      config.consistency.num_workers = 1;
    }
    ParameterStore from_pieces(0, 1), from_arrays(0, 1);
    bool created = false;
    for (ParameterStore* store : {&from_pieces, &from_arrays}) {
      store->Register(1, 1, absl::ZeroDuration());  // SliceOf's worker
      REQUIRE(store->CreateTable(config, true, &created).ok());
    }
    for (uint64_t seq = 1; seq <= 3; ++seq) {
      const std::vector<float> g = UniformGradient(n, 70 + seq);
      auto received = std::make_shared<const ReceivedFloats>(g, 3, 61, seq);
      PushMeta meta = SliceOf(seq, 0, 1);
      meta.clock = seq - 1;  // the sync step each push belongs to
      INFO("sync " << sync << " push " << seq);
      REQUIRE(from_pieces.PushDense("w", 0, received->pieces(), meta, received)
                  .ok());
      REQUIRE(from_arrays.PushDense("w", 0, g, meta).ok());
    }
    REQUIRE(from_pieces.GetTable("w")->version == 3);
    REQUIRE(SameBits(PullAll(from_pieces, n), PullAll(from_arrays, n)));
  }
}

TEST_CASE("a NaN in a later piece refuses the whole push and names the element") {
  const uint64_t n = 3000;
  const TableConfig config = DenseTestConfig(OptimizerKind::kSgd, n, false);
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(config, true, &created).ok());
  const std::vector<float> before = PullAll(store, n);
  const std::vector<float> first = UniformGradient(2000, 1);
  auto first_received =
      std::make_shared<const ReceivedFloats>(first, 2, 64, 1);
  REQUIRE(store.PushDense("w", 0, first_received->pieces(), SliceOf(1, 0, 2),
                          first_received)
              .ok());
  std::vector<float> bad = UniformGradient(1000, 2);
  bad[987] = std::numeric_limits<float>::quiet_NaN();
  auto bad_received = std::make_shared<const ReceivedFloats>(bad, 3, 64, 2);
  const auto refused = store.PushDense("w", 2000, bad_received->pieces(),
                                       SliceOf(1, 1, 2), bad_received);
  REQUIRE(refused.status().code() == absl::StatusCode::kInvalidArgument);
  INFO(refused.status().message());
  REQUIRE(absl::StrContains(refused.status().message(), "element 987 is nan"));
  REQUIRE(first_received.use_count() == 1);  // the staged slice let go
  REQUIRE(bad_received.use_count() == 1);
  REQUIRE(SameBits(PullAll(store, n), before));
  REQUIRE(store.GetTable("w")->version == 0);
}

}  // namespace
}  // namespace taups

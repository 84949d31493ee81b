// DenseTable::Lend: a pull answered from the table's own memory. What is
// lent equals what Pull would copy; it stays exactly as lent while pushes,
// imports and the table's end change or free the table's memory; a write
// copies a block only while an answer holds it; and the memory pushes
// displaced is counted until the last holder lets go.
//
// Expected values come from a twin table that is only ever copied from
// (Pull), never lent: it gets the same calls, so the lending table must end
// up bit for bit like it.
#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "server/dense_table.h"
#include "server/lent_values.h"
#include "tests/dense_table_fixtures.h"

namespace taups {
namespace {

constexpr uint64_t kBlock = DenseTable::kBlockSize;
// Global offsets: the part starts past zero, as on a second shard.
constexpr uint64_t kBegin = 1000;
constexpr uint64_t kSize = 3 * kBlock + 500;  // 4 lock blocks, the last short

TableConfig Config(bool dc = false) {
  return DenseTestConfig(OptimizerKind::kAdam, kBegin + kSize, dc);
}

std::vector<float> Joined(const LentValues& lent) {
  std::vector<float> out;
  for (absl::Span<const float> piece : lent.pieces) {
    out.insert(out.end(), piece.begin(), piece.end());
  }
  return out;
}

std::vector<float> Pulled(DenseTable& table, uint64_t offset, uint64_t count,
                          uint32_t worker) {
  std::vector<float> out(count);
  table.Pull(offset, absl::MakeSpan(out), worker);
  return out;
}

const Range kRange{kBegin, kBegin + kSize};

TEST_CASE("lent values equal Pull's copy and stay as lent while pushes change the table") {
  DenseTable lending(Config(), kRange);
  DenseTable copying(Config(), kRange);
  const size_t displaced_before = DisplacedLentBytes();

  // From inside block 0 to inside block 3: four pieces.
  const uint64_t offset = kBegin + 100;
  const uint64_t count = kSize - 300;
  LentValues lent;
  lending.Lend(offset, count, 1, &lent);
  REQUIRE(lent.pieces.size() == 4);
  CHECK(lent.pieces[0].size() == kBlock - 100);
  CHECK(lent.pieces[3].size() == 300);
  REQUIRE(lent.floats() == count);
  const std::vector<float> at_lend = Joined(lent);
  REQUIRE(SameBits(at_lend, Pulled(copying, offset, count, 1)));

  // A push over the whole part: every lent block is copied once, first.
  const std::vector<float> g = UniformGradient(kSize, 7);
  lending.Apply(DensePart(kBegin, g), 1.0f, 1);
  copying.Apply(DensePart(kBegin, g), 1.0f, 1);
  CHECK(lending.lent_block_copies() == 4);
  // Whole blocks are displaced: all four, the part's every float.
  CHECK(DisplacedLentBytes() - displaced_before == kSize * sizeof(float));
  CHECK(SameBits(Joined(lent), at_lend));
  CHECK(SameTable(lending, copying));
  CHECK(!SameBits(Pulled(lending, offset, count, 1), at_lend));

  // The blocks are the table's own now: the next push copies nothing.
  const std::vector<float> g2 = UniformGradient(kSize, 8);
  lending.Apply(DensePart(kBegin, g2), 0.5f, 1);
  copying.Apply(DensePart(kBegin, g2), 0.5f, 1);
  CHECK(lending.lent_block_copies() == 4);
  CHECK(SameBits(Joined(lent), at_lend));
  CHECK(SameTable(lending, copying));

  // Letting go frees what only the answer held.
  lent.Clear();
  CHECK(DisplacedLentBytes() == displaced_before);

  // A lend dropped before any push costs the push nothing.
  lending.Lend(kBegin, kSize, 2, &lent);
  lent.Clear();
  const std::vector<float> g3 = UniformGradient(kSize, 9);
  lending.Apply(DensePart(kBegin, g3), 1.0f, 2);
  copying.Apply(DensePart(kBegin, g3), 1.0f, 2);
  CHECK(lending.lent_block_copies() == 4);
  CHECK(SameTable(lending, copying));
}

TEST_CASE("a push to some blocks copies only the lent blocks it writes") {
  DenseTable lending(Config(), kRange);
  DenseTable copying(Config(), kRange);
  LentValues lent;
  lending.Lend(kBegin + kBlock, 2 * kBlock, 0, &lent);  // blocks 1 and 2
  REQUIRE(lent.pieces.size() == 2);
  const std::vector<float> at_lend = Joined(lent);
  // Blocks 2 and 3: block 2 is lent, block 3 is not.
  const std::vector<float> g = UniformGradient(kBlock + 500, 3);
  lending.Apply(DensePart(kBegin + 2 * kBlock, g), 1.0f, 0);
  copying.Apply(DensePart(kBegin + 2 * kBlock, g), 1.0f, 0);
  CHECK(lending.lent_block_copies() == 1);
  CHECK(SameBits(Joined(lent), at_lend));
  CHECK(SameTable(lending, copying));
}

TEST_CASE("an import and the table's end leave lent values intact") {
  LentValues lent;
  std::vector<float> at_lend;
  const size_t displaced_before = DisplacedLentBytes();
  {
    DenseTable lending(Config(), kRange);
    lending.Lend(kBegin, kSize, 0, &lent);
    at_lend = Joined(lent);
    TableSnapshot other = lending.Export();
    for (float& v : other.values) v += 1.0f;
    REQUIRE(lending.Import(other).ok());
    CHECK(lending.lent_block_copies() == 4);
    CHECK(SameBits(lending.Export().values, other.values));
    CHECK(SameBits(Joined(lent), at_lend));
    // A refused import changes nothing and copies nothing.
    TableSnapshot wrong = other;
    wrong.values.pop_back();
    CHECK(!lending.Import(wrong).ok());
    CHECK(lending.lent_block_copies() == 4);
    // The table goes while the answer still holds its first blocks.
    lending.Lend(kBegin + 10, 20, 0, &lent);
    at_lend = Joined(lent);
  }
  CHECK(SameBits(Joined(lent), at_lend));  // read after the table's end
  lent.Clear();
  CHECK(DisplacedLentBytes() == displaced_before);
}

TEST_CASE("a lend remembers the values for delay compensation as Pull does") {
  DenseTable lending(Config(/*dc=*/true), kRange);
  DenseTable copying(Config(/*dc=*/true), kRange);
  // Both advance, then worker 3 reads (lent on one, copied on the other),
  // the table moves on, and worker 3's stale gradient is compensated
  // against what it read.
  const std::vector<float> g1 = UniformGradient(kSize, 21);
  lending.Apply(DensePart(kBegin, g1), 1.0f, 0);
  copying.Apply(DensePart(kBegin, g1), 1.0f, 0);
  LentValues lent;
  lending.Lend(kBegin, kSize, 3, &lent);
  Pulled(copying, kBegin, kSize, 3);
  const std::vector<float> g2 = UniformGradient(kSize, 22);
  lending.Apply(DensePart(kBegin, g2), 1.0f, 0);
  copying.Apply(DensePart(kBegin, g2), 1.0f, 0);
  const std::vector<float> g3 = UniformGradient(kSize, 23);
  REQUIRE(lending.UpdateStaysFinite(DensePart(kBegin, g3), 1.0f, 3) ==
          copying.UpdateStaysFinite(DensePart(kBegin, g3), 1.0f, 3));
  lending.Apply(DensePart(kBegin, g3), 1.0f, 3);
  copying.Apply(DensePart(kBegin, g3), 1.0f, 3);
  CHECK(SameTable(lending, copying));
}

// Pushes of ones with SGD at rate 1 on a zero table: after k pushes every
// value is -k, so a block seen at one moment is uniform. A lent piece must
// be uniform and never change, however the pushes race the lends.
TEST_CASE("lent pieces stay whole and unchanged while pushes race the lends") {
  TableConfig config = TableConfig::Dense("w", kBegin + kSize);
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 1.0f;
  config.initializer.kind = InitializerKind::kZeros;
  DenseTable table(config, kRange);
  constexpr int kPushes = 300;
  std::atomic<bool> done{false};
  std::thread pusher([&] {
    const std::vector<float> ones(kSize, 1.0f);
    for (int k = 0; k < kPushes; ++k) table.Apply(DensePart(kBegin, ones), 1.0f, 0);
    done.store(true);
  });
  int lends = 0;
  int bad = 0;
  while (!done.load() || lends < 10) {
    LentValues lent;
    table.Lend(kBegin, kSize, 1, &lent);
    std::vector<float> first;
    for (absl::Span<const float> piece : lent.pieces) first.push_back(piece[0]);
    std::this_thread::yield();  // let a push land meanwhile
    for (size_t p = 0; p < lent.pieces.size(); ++p) {
      for (float v : lent.pieces[p]) bad += v != first[p] ? 1 : 0;
    }
    ++lends;
  }
  pusher.join();
  CHECK(bad == 0);
  CHECK(Pulled(table, kBegin, kSize, 1) ==
        std::vector<float>(kSize, -static_cast<float>(kPushes)));
  INFO(lends << " lends, " << table.lent_block_copies() << " block copies");
  CHECK(table.lent_block_copies() <= static_cast<uint64_t>(4 * kPushes));
}

}  // namespace
}  // namespace taups

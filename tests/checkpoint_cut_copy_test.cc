// Cuts copied block by block while pushes go on (Table::BeginCut, copy on
// write): the copy is the table as it was at the cut, bit for bit, however
// the table changes while it is copied, and a step cut whose copier is
// slowed down does not hold the pushes up.
//
// The expected state is computed independently: a Snapshot taken at the
// cut by the partition's ordinary whole-copy path, or a second store that
// ran the same pushes and stopped at the cut's step.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "server/dense_table.h"
#include "server/partition.h"
#include "server/shard_checkpointer.h"
#include "server/sparse_table.h"

namespace taups {
namespace {

// A sparse snapshot as key -> (values, state, version), so two tables
// whose hash maps iterate in different orders compare equal.
using RowMap = std::map<uint64_t, std::tuple<std::vector<float>, std::vector<float>, uint64_t>>;

RowMap RowsOf(const TableSnapshot& t, uint32_t dim) {
  RowMap rows;
  const size_t width = t.keys.empty() ? 0 : t.state.size() / t.keys.size();
  for (size_t r = 0; r < t.keys.size(); ++r) {
    rows[t.keys[r]] = {
        std::vector<float>(t.values.begin() + r * dim, t.values.begin() + (r + 1) * dim),
        std::vector<float>(t.state.begin() + r * width, t.state.begin() + (r + 1) * width),
        t.row_versions[r]};
  }
  return rows;
}

PushSlice DenseSlice(uint64_t offset, const std::vector<float>& g, uint32_t worker,
                     uint64_t seq) {
  PushSlice slice;
  slice.origin = PushOrigin{worker, 1, seq};
  slice.header.slices = 1;
  slice.part.offset = offset;
  slice.part.values = g;
  return slice;
}

TEST_CASE("a dense cut copied while pushes change it is the table at the cut") {
  // 5 lock blocks (the last one short), Adam: values and two moments.
  TableConfig config = TableConfig::Dense("d", 4 * DenseTable::kBlockSize + 1000);
  config.optimizer.kind = OptimizerKind::kAdam;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.1f;
  Partition partition(std::make_unique<DenseTable>(config, Range{0, config.dense_size}),
                      RealClock::Get());
  std::vector<float> g(config.dense_size, 0.01f);
  REQUIRE(partition.Push(DenseSlice(0, g, 0, 1)).ok());
  const PartitionSnapshot expected = partition.Snapshot();

  PendingCut cut = partition.BeginCut();
  REQUIRE(cut.table->blocks() == 5);
  REQUIRE(partition.applied() == expected.applied);  // a cut is no mutation
  // Block 1 copied by the checkpointer, then changed; blocks 2-3 changed
  // before anyone copied them (the push copies them first); then the whole
  // table is restored to something else.
  cut.table->CopyBlock(1);
  const std::vector<float> small(2 * DenseTable::kBlockSize, -0.02f);
  REQUIRE(partition.Push(DenseSlice(DenseTable::kBlockSize, small, 0, 2)).ok());
  REQUIRE(partition.Push(DenseSlice(0, g, 0, 3)).ok());
  PartitionSnapshot other = partition.Snapshot();
  for (float& v : other.table.values) v += 1.0f;
  REQUIRE(partition.Restore(other).ok());
  REQUIRE((partition.Snapshot().table.values != expected.table.values));

  cut.CopyAll();
  const PartitionSnapshot got = cut.Finish();
  CHECK(got.applied == expected.applied);
  CHECK(got.policy.version == expected.policy.version);
  CHECK((got.table == expected.table));  // values and state, bit for bit

  SECTION("a second cut begun before the first is copied finishes the first") {
    PendingCut first = partition.BeginCut();
    const PartitionSnapshot at_first = partition.Snapshot();
    REQUIRE(partition.Push(DenseSlice(0, g, 0, 4)).ok());
    const PartitionSnapshot at_second = partition.Snapshot();
    PendingCut second = partition.BeginCut();
    REQUIRE(partition.Push(DenseSlice(0, g, 0, 5)).ok());
    second.CopyAll();
    first.CopyAll();
    CHECK((first.Finish().table == at_first.table));
    CHECK((second.Finish().table == at_second.table));
  }
}

TEST_CASE("a sparse cut leaves out rows created after it and keeps rows evicted after it") {
  TableConfig config = TableConfig::Sparse("e", 8);
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.sparse_max_rows = 64 * 40;  // 40 rows per stripe, lru
  Partition partition(std::make_unique<SparseTable>(config), RealClock::Get());
  auto* table = dynamic_cast<SparseTable*>(&partition.table());
  REQUIRE(table != nullptr);
  std::vector<uint64_t> keys(1500);
  std::iota(keys.begin(), keys.end(), 0);
  auto push = [&](const std::vector<uint64_t>& k, uint64_t seq) {
    const std::vector<float> g(k.size() * 8, 0.5f);
    PushSlice slice;
    slice.origin = PushOrigin{0, 1, seq};
    slice.header.slices = 1;
    slice.part.keys = k;
    slice.part.values = g;
    REQUIRE(partition.Push(slice).ok());
  };
  push(keys, 1);
  const PartitionSnapshot expected = partition.Snapshot();

  PendingCut cut = partition.BeginCut();
  REQUIRE(cut.table->blocks() == SparseTable::kStripes);
  for (size_t b = 0; b < 10; ++b) cut.table->CopyBlock(b);
  // New keys: created by a pull and a push, each evicting older rows.
  std::vector<uint64_t> fresh(1500);
  std::iota(fresh.begin(), fresh.end(), 100000);
  std::vector<float> out(fresh.size() * 8);
  table->Pull(fresh, absl::MakeSpan(out));
  std::iota(fresh.begin(), fresh.end(), 200000);
  push(fresh, 2);
  push(keys, 3);
  cut.CopyAll();
  const PartitionSnapshot got = cut.Finish();
  CHECK(got.policy.version == expected.policy.version);
  CHECK(got.table.keys.size() == expected.table.keys.size());
  // Export's order as well as its rows: the cut reads each stripe as
  // Export would have at the cut.
  CHECK((got.table == expected.table));
  CHECK((RowsOf(partition.Snapshot().table, 8) != RowsOf(expected.table, 8)));
}

constexpr uint64_t kDenseSize = 16 * DenseTable::kBlockSize;  // 16 blocks
constexpr uint32_t kDim = 16;
constexpr uint64_t kEverySteps = 4;

void MakeTables(ParameterStore& store) {
  store.Register(0, 10, absl::ZeroDuration());
  store.Register(1, 11, absl::ZeroDuration());
  TableConfig dense = TableConfig::Dense("d", kDenseSize);
  dense.consistency.kind = ConsistencyKind::kSync;
  dense.consistency.num_workers = 2;
  dense.optimizer.kind = OptimizerKind::kAdam;
  dense.initializer.kind = InitializerKind::kUniform;
  dense.initializer.scale = 0.05f;
  TableConfig sparse = TableConfig::Sparse("e", kDim);
  sparse.consistency = dense.consistency;
  sparse.optimizer.kind = OptimizerKind::kAdam;
  bool created = false;
  REQUIRE(store.CreateTable(dense, true, &created).ok());
  REQUIRE(store.CreateTable(sparse, true, &created).ok());
}

// Worker w's push of step k to both tables: a dense gradient over the
// whole part, and sparse rows 400 keys wide, shifted by 300 each step (so
// later steps create rows the earlier ones did not have).
void Push(ParameterStore& store, uint32_t worker, uint64_t step) {
  PushMeta meta;
  meta.clock = step;
  meta.origin = PushOrigin{worker, 10 + worker, step + 1};
  const std::vector<float> g(kDenseSize, 0.001f * static_cast<float>((worker + 1) * (step + 1)));
  meta.base_version = store.GetTable("d")->version;
  auto dense = store.PushDense("d", 0, g, meta);
  INFO(dense.status().ToString());
  REQUIRE(dense.ok());
  std::vector<uint64_t> keys(400);
  std::iota(keys.begin(), keys.end(), step * 300 + worker * 150);
  const std::vector<float> rows(keys.size() * kDim, 0.01f * static_cast<float>(worker + 1));
  meta.base_version = store.GetTable("e")->version;
  auto sparse = store.PushSparse("e", keys, rows, meta);
  INFO(sparse.status().ToString());
  REQUIRE(sparse.ok());
}

TEST_CASE("a step cut copied slowly lets pushes go on and holds the model of its step") {
  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                       "/taups_cut_copy_", getpid());
  std::filesystem::remove_all(dir);
  ParameterStore store(0, 1);
  MakeTables(store);
  ShardCheckpointerOptions options;
  options.dir = dir;
  options.every_steps = kEverySteps;
  // 16 + 64 blocks at 25 ms: the copy takes 2 s at least.
  options.cut_block_delay = absl::Milliseconds(25);
  auto checkpointer = ShardCheckpointer::Open(&store, PosixCheckpointFs(), options, 1);
  REQUIRE(checkpointer.ok());
  (*checkpointer)->StartBackground();
  absl::SleepFor(absl::Milliseconds(400));  // the tables get their hooks

  for (uint64_t step = 0; step < kEverySteps; ++step) {
    Push(store, 0, step);
    Push(store, 1, step);
  }
  // Step 4 closed: its cut is being copied. Push steps 4-6 (each closes,
  // changing every dense block and new sparse stripes), the pulls that
  // create rows too; stop before step 8's cut.
  int pushes_during_copy = 0;
  for (uint64_t step = kEverySteps; step < 2 * kEverySteps - 1; ++step) {
    for (uint32_t worker : {0u, 1u}) {
      Push(store, worker, step);
      if ((*checkpointer)->stats().step_cuts == 0) ++pushes_during_copy;
    }
    std::vector<uint64_t> fresh(500);
    std::iota(fresh.begin(), fresh.end(), 1000000 + step * 1000);
    std::vector<float> out(fresh.size() * kDim);
    PullContext ctx;
    ctx.worker = 0;
    ctx.clock = step + 1;
    REQUIRE(store.PullSparse("e", fresh, absl::MakeSpan(out), ctx).ok());
  }
  std::fprintf(stderr, "pushes applied while the cut of step 4 was copied: %d of 6\n",
               pushes_during_copy);
  CHECK(pushes_during_copy > 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while ((*checkpointer)->stats().step_cuts == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const CheckpointerStats stats = (*checkpointer)->stats();
  REQUIRE(stats.step_cuts == 1);
  CHECK(stats.last_step_cut == kEverySteps);
  CHECK(stats.cuts_finished_on_apply_path == 0);
  CHECK(stats.largest_cut_bytes >= kDenseSize * 3 * sizeof(float));
  checkpointer->reset();

  // The reference: the same pushes up to step 4, no checkpointer.
  ParameterStore reference(0, 1);
  MakeTables(reference);
  for (uint64_t step = 0; step < kEverySteps; ++step) {
    Push(reference, 0, step);
    Push(reference, 1, step);
  }
  ParameterStore restored(0, 1);
  ShardCheckpointerOptions read;
  read.dir = dir;
  auto reader = ShardCheckpointer::Open(&restored, PosixCheckpointFs(), read, 2);
  REQUIRE(reader.ok());
  auto report = (*reader)->Restore();
  INFO(report.status().ToString());
  REQUIRE(report.ok());
  for (const char* name : {"d", "e"}) {
    INFO(name);
    const PartitionSnapshot want = (*reference.PartitionOf(name))->Snapshot();
    const PartitionSnapshot got = (*restored.PartitionOf(name))->Snapshot();
    const PartitionSnapshot now = (*store.PartitionOf(name))->Snapshot();
    CHECK(got.policy.version == kEverySteps);
    CHECK(got.policy.open_step == kEverySteps);
    if (name[0] == 'e') CHECK((RowsOf(got.table, kDim) == RowsOf(want.table, kDim)));
    if (name[0] == 'd') CHECK((got.table == want.table));  // bit for bit
    // What came after the cut is not in it.
    CHECK(now.policy.version == 2 * kEverySteps - 1);
    CHECK((now.table.values != got.table.values));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace taups

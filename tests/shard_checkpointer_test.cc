// A shard's tables survive through its checkpoints: taken from a running
// ParameterStore, restored into a fresh one that then carries on exactly
// like the original.
#include "server/shard_checkpointer.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace taups {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(
      std::filesystem::temp_directory_path().string(), "/taups_", name, "_", getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

// A checkpointer writing into `dir` and keeping `keep` checkpoints.
ShardCheckpointerOptions Options(const std::string& dir, uint32_t keep) {
  ShardCheckpointerOptions options;
  options.dir = dir;
  options.keep = keep;
  return options;
}

// A reader of the checkpoints such a checkpointer writes.
CheckpointStoreOptions ReaderOptions(const std::string& dir, uint32_t keep) {
  CheckpointStoreOptions files;
  files.dir = dir;
  files.keep = keep;
  return files;
}

void MakeTables(ParameterStore& store) {
  bool created = false;
  TableConfig dense = TableConfig::Dense("w", 64);
  dense.optimizer.kind = OptimizerKind::kAdam;
  dense.optimizer.learning_rate = 0.01f;
  REQUIRE(store.CreateTable(dense, true, &created).ok());
  TableConfig sparse = TableConfig::Sparse("emb", 4);
  sparse.optimizer.kind = OptimizerKind::kAdagrad;
  sparse.optimizer.learning_rate = 0.1f;
  REQUIRE(store.CreateTable(sparse, true, &created).ok());
  TableConfig sync = TableConfig::Dense("s", 16);
  sync.consistency.kind = ConsistencyKind::kSync;
  sync.consistency.num_workers = 2;
  REQUIRE(store.CreateTable(sync, true, &created).ok());
}

// Workers 0 and 1 registered (Train's pushers), then MakeTables.
void MakeTablesForTwo(ParameterStore& store) {
  store.Register(0, 9, absl::ZeroDuration());
  store.Register(1, 8, absl::ZeroDuration());
  MakeTables(store);
}

// Pushes some work; `seq` continues across calls. The sync table gets a
// push for its open step from each worker in `sync_pushers` (0 and 1 are
// registered; both close the step), so a checkpoint can be taken mid-step.
void Train(ParameterStore& store, uint64_t& seq, int rounds,
           std::vector<uint32_t> sync_pushers) {
  for (int r = 0; r < rounds; ++r, ++seq) {
    std::vector<float> g(64);
    for (size_t i = 0; i < g.size(); ++i) g[i] = std::sin(0.1 * (seq * 64 + i));
    PushMeta meta;
    meta.origin = PushOrigin{0, 9, seq};
    meta.base_version = store.GetTable("w")->version;
    auto pushed = store.PushDense("w", 0, g, meta);
    INFO(pushed.status().ToString());
    REQUIRE(pushed.ok());
    const std::vector<uint64_t> keys = {seq % 7, 100 + seq % 3};
    std::vector<float> rows(8, 0.25f);
    meta.base_version = 0;
    REQUIRE(store.PushSparse("emb", keys, rows, meta).ok());
  }
  const uint64_t step = store.GetTable("s")->open_step;
  for (uint32_t worker : sync_pushers) {
    PushMeta meta;
    meta.clock = step;
    meta.origin = PushOrigin{worker, worker == 0 ? 9u : 8u, seq++};
    meta.base_version = store.GetTable("s")->version;
    auto pushed =
        store.PushDense("s", 0, std::vector<float>(16, 1.0f + 2.0f * worker), meta);
    INFO(pushed.status().ToString());
    REQUIRE(pushed.ok());
  }
}

// MakeTablesForTwo's tables on one shard and a checkpointer (incarnation
// 3) writing into a fresh directory `name` that keeps `keep` checkpoints;
// the directory is removed at the end.
struct CheckpointedShard {
  CheckpointedShard(const std::string& name, uint32_t keep) : dir(FreshDir(name)) {
    MakeTablesForTwo(store);
    auto opened = ShardCheckpointer::Open(&store, PosixCheckpointFs(), Options(dir, keep), 3);
    REQUIRE(opened.ok());
    checkpointer = std::move(*opened);
  }
  ~CheckpointedShard() {
    checkpointer.reset();
    std::filesystem::remove_all(dir);
  }
  const std::string dir;
  ParameterStore store{0, 1};
  uint64_t seq = 1;  // Train's
  std::unique_ptr<ShardCheckpointer> checkpointer;
};

PartitionSnapshot SnapshotOf(const ParameterStore& store, const std::string& table) {
  auto partition = store.PartitionOf(table);
  REQUIRE(partition.ok());
  return (*partition)->Snapshot();
}

void RequireSame(const ParameterStore& a, const ParameterStore& b) {
  for (const char* table : {"w", "s"}) {
    INFO(table);
    const PartitionSnapshot x = SnapshotOf(a, table), y = SnapshotOf(b, table);
    REQUIRE(x.table == y.table);
    REQUIRE(x.policy == y.policy);
  }
  // Sparse rows come out in stripe order: compare them by key.
  auto rows = [](const TableSnapshot& t) {
    std::map<uint64_t, std::vector<float>> by_key;
    for (size_t i = 0; i < t.keys.size(); ++i) {
      by_key[t.keys[i]].assign(t.values.begin() + i * 4, t.values.begin() + i * 4 + 4);
    }
    return by_key;
  };
  REQUIRE(rows(SnapshotOf(a, "emb").table) == rows(SnapshotOf(b, "emb").table));
}

TEST_CASE("a restored shard carries on exactly like the one that wrote it") {
  const std::string dir = FreshDir("restore");
  ParameterStore original(0, 1);
  MakeTablesForTwo(original);
  uint64_t seq = 1;
  Train(original, seq, 5, {0});  // checkpoint mid-step
  ShardCheckpointerOptions options;
  options.dir = dir;
  auto writer = ShardCheckpointer::Open(&original, PosixCheckpointFs(), options, 77);
  REQUIRE(writer.ok());
  auto written = (*writer)->TakeNow();
  REQUIRE(written.ok());
  REQUIRE((*writer)->stats().taken == 1);

  ParameterStore restored(0, 1);
  restored.Register(0, 9, absl::ZeroDuration());
  restored.Register(1, 8, absl::ZeroDuration());
  auto reader = ShardCheckpointer::Open(&restored, PosixCheckpointFs(), options, 78);
  REQUIRE(reader.ok());
  auto report = (*reader)->Restore();
  REQUIRE(report.ok());
  REQUIRE(report->incarnation == 77);
  REQUIRE(report->tables.size() == 3);
  RequireSame(original, restored);

  // Both go on with the same pushes (the open sync step closes on both, and
  // a push answered before the checkpoint is a duplicate on both).
  uint64_t seq_a = seq, seq_b = seq;
  Train(original, seq_a, 3, {1});  // closes the step open at the checkpoint
  Train(restored, seq_b, 3, {1});
  REQUIRE(restored.GetTable("s")->open_step == 1);
  Train(original, seq_a, 2, {0, 1});
  Train(restored, seq_b, 2, {0, 1});
  RequireSame(original, restored);
  PushMeta again;
  again.origin = PushOrigin{0, 9, 1};
  REQUIRE(restored.PushDense("w", 0, std::vector<float>(64, 1.0f), again)->duplicate);
  std::filesystem::remove_all(dir);
}

TEST_CASE("restore refuses what it cannot use") {
  const std::string dir = FreshDir("refuse");
  ShardCheckpointerOptions options;
  options.dir = dir;
  ParameterStore empty(0, 2);
  auto none = ShardCheckpointer::Open(&empty, PosixCheckpointFs(), options, 1);
  REQUIRE(none.ok());
  REQUIRE((*none)->Restore().status().code() == absl::StatusCode::kNotFound);

  ParameterStore shard0(0, 2);
  MakeTables(shard0);
  auto writer = ShardCheckpointer::Open(&shard0, PosixCheckpointFs(), options, 1);
  REQUIRE((*writer)->TakeNow().ok());
  ParameterStore shard1(1, 2);  // another shard's directory
  auto wrong = ShardCheckpointer::Open(&shard1, PosixCheckpointFs(), options, 2);
  REQUIRE((*wrong)->Restore().status().code() ==
          absl::StatusCode::kFailedPrecondition);
  REQUIRE(shard1.ListTables().empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("the header names the sync step only at a step boundary") {
  CheckpointedShard shard("step", 5);
  const CheckpointStoreOptions files = ReaderOptions(shard.dir, 5);
  auto reader = CheckpointStore::Open(PosixCheckpointFs(), files);
  REQUIRE(reader.ok());

  Train(shard.store, shard.seq, 1, {0, 1});  // step 0 closed, step 1 open, empty
  auto at_boundary = shard.checkpointer->TakeNow();
  REQUIRE(at_boundary.ok());
  auto loaded = (*reader)->Load(at_boundary->sequence);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->manifest.header.sync_step == std::optional<uint64_t>(1));

  Train(shard.store, shard.seq, 1, {0});  // worker 0 pushed for step 1
  auto mid_step = shard.checkpointer->TakeNow();
  REQUIRE(mid_step.ok());
  loaded = (*reader)->Load(mid_step->sequence);
  REQUIRE(loaded.ok());
  REQUIRE(!loaded->manifest.header.sync_step.has_value());
}

TEST_CASE("checkpoints after a rollback in place record the shard's new incarnation") {
  const std::string dir = FreshDir("incarnation");
  ParameterStore store(0, 1);
  MakeTables(store);
  auto checkpointer = ShardCheckpointer::Open(&store, PosixCheckpointFs(), Options(dir, 5), 3);
  REQUIRE(checkpointer.ok());
  const CheckpointStoreOptions files = ReaderOptions(dir, 5);
  auto reader = CheckpointStore::Open(PosixCheckpointFs(), files);
  REQUIRE(reader.ok());
  auto incarnation_of = [&](uint64_t sequence) -> uint64_t {
    auto loaded = (*reader)->Load(sequence);
    REQUIRE(loaded.ok());
    return loaded->manifest.header.incarnation;
  };

  auto first = (*checkpointer)->TakeNow();
  REQUIRE(first.ok());
  CHECK(incarnation_of(first->sequence) == 3);

  // The rollback's restore answers the incarnation the shard takes.
  REQUIRE((*checkpointer)->RestoreInPlace([]() -> absl::StatusOr<uint64_t> { return 44; }).ok());
  auto after = (*checkpointer)->TakeNow();
  REQUIRE(after.ok());
  CHECK(incarnation_of(after->sequence) == 44);

  // A restore that fails changes nothing: the next one still records 44.
  const absl::Status failed = (*checkpointer)->RestoreInPlace(
      []() -> absl::StatusOr<uint64_t> { return absl::InternalError("no"); });
  CHECK(failed.code() == absl::StatusCode::kInternal);
  auto later = (*checkpointer)->TakeNow();
  REQUIRE(later.ok());
  CHECK(incarnation_of(later->sequence) == 44);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the step checkpoints it lists follow new checkpoints and pruning") {
  CheckpointedShard shard("step_index", 2);
  using Steps = std::map<uint64_t, uint64_t>;
  auto steps = [&]() -> Steps {
    auto listed = shard.checkpointer->StepCheckpoints();
    REQUIRE(listed.ok());
    return *listed;
  };
  CHECK(steps().empty());
  CHECK(steps().empty());  // asked twice before any checkpoint: still none

  Train(shard.store, shard.seq, 1, {0, 1});  // step 0 closed: the cut is at step 1
  auto first = shard.checkpointer->TakeNow();
  REQUIRE(first.ok());
  CHECK(steps() == Steps{{first->sequence, 1}});
  Train(shard.store, shard.seq, 1, {0, 1});
  auto second = shard.checkpointer->TakeNow();
  REQUIRE(second.ok());
  CHECK(steps() == (Steps{{first->sequence, 1}, {second->sequence, 2}}));
  Train(shard.store, shard.seq, 1, {0, 1});
  auto third = shard.checkpointer->TakeNow();  // keep = 2: the first is pruned
  REQUIRE(third.ok());
  CHECK(third->deleted == std::vector<uint64_t>{first->sequence});
  const Steps kept{{second->sequence, 2}, {third->sequence, 3}};
  CHECK(steps() == kept);
  // Asked again, it reads no manifest: one removed by hand behind the
  // checkpointer's back is still listed (until it next writes).
  std::filesystem::remove_all(second->path);
  CHECK(steps() == kept);
  Train(shard.store, shard.seq, 1, {0, 1});
  auto fourth = shard.checkpointer->TakeNow();
  REQUIRE(fourth.ok());
  CHECK(steps() == (Steps{{third->sequence, 3}, {fourth->sequence, 4}}));
}

TEST_CASE("the background thread checkpoints every N versions") {
  const std::string dir = FreshDir("background");
  ParameterStore store(0, 1);
  MakeTablesForTwo(store);
  ShardCheckpointerOptions options;
  options.dir = dir;
  options.every_versions = 10;
  auto checkpointer = ShardCheckpointer::Open(&store, PosixCheckpointFs(), options, 3);
  REQUIRE(checkpointer.ok());
  (*checkpointer)->StartBackground();
  uint64_t seq = 1;
  Train(store, seq, 3, {0, 1});  // 3 + 3 + 1 versions: not yet
  absl::SleepFor(absl::Milliseconds(600));
  REQUIRE((*checkpointer)->stats().taken == 0);
  Train(store, seq, 3, {0, 1});  // 14 in all
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while ((*checkpointer)->stats().taken == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  REQUIRE((*checkpointer)->stats().taken == 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace taups

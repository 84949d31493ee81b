// Incremental checkpoints: a chain of one full checkpoint and deltas
// restores exactly the tables it was written from (evicted rows stay gone),
// a damaged or missing link costs only the checkpoints built on it, a
// failed write loses nothing, retention keeps every base a kept delta
// needs, and step cuts of two shards restore the model of one step.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/checkpoint_fault_fs.h"
#include "server/checkpoint_store.h"
#include "server/shard_checkpointer.h"

namespace taups {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                       "/taups_delta_", name, "_", getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

constexpr uint32_t kDim = 4;
constexpr uint64_t kRowLimit = SparseTable::kStripes * 4;

// "emb": bounded (lru), so pushes of many keys evict; "big": unbounded;
// "w": dense.
void MakeTables(ParameterStore& store) {
  bool created = false;
  TableConfig emb = TableConfig::Sparse("emb", kDim);
  emb.sparse_max_rows = kRowLimit;
  emb.optimizer.learning_rate = 0.5f;
  REQUIRE(store.CreateTable(emb, true, &created).ok());
  TableConfig big = TableConfig::Sparse("big", kDim);
  big.optimizer.kind = OptimizerKind::kAdagrad;
  REQUIRE(store.CreateTable(big, true, &created).ok());
  REQUIRE(store.CreateTable(TableConfig::Dense("w", 32), true, &created).ok());
}

void PushRows(ParameterStore& store, const std::string& table,
              const std::vector<uint64_t>& keys, uint64_t& seq) {
  std::vector<float> rows(keys.size() * kDim);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = 0.01f * ((seq + i) % 17) - 0.08f;
  PushMeta meta;
  meta.origin = PushOrigin{0, 9, seq++};
  auto pushed = store.PushSparse(table, keys, rows, meta);
  INFO(pushed.status().ToString());
  REQUIRE(pushed.ok());
}

// One round: `fresh` new keys of "emb" (evicting old ones once full), a few
// hot keys of "big", the dense table.
void Round(ParameterStore& store, uint64_t& seq, uint64_t& next_key, size_t fresh) {
  std::vector<uint64_t> keys;
  for (size_t i = 0; i < fresh; ++i) keys.push_back(next_key++);
  keys.push_back(1);  // a hot key, updated every round
  PushRows(store, "emb", keys, seq);
  PushRows(store, "big", {3, 5, seq % 50 + 100}, seq);
  PushMeta meta;
  meta.origin = PushOrigin{0, 9, seq++};
  REQUIRE(store.PushDense("w", 0, std::vector<float>(32, 0.5f), meta).ok());
}

// Rows by key (a snapshot lists them in stripe order).
std::map<uint64_t, std::vector<float>> Rows(const ParameterStore& store,
                                            const std::string& table) {
  auto partition = store.PartitionOf(table);
  REQUIRE(partition.ok());
  const TableSnapshot t = (*partition)->Snapshot().table;
  std::map<uint64_t, std::vector<float>> out;
  const size_t state = t.keys.empty() ? 0 : t.state.size() / t.keys.size();
  for (size_t i = 0; i < t.keys.size(); ++i) {
    std::vector<float>& row = out[t.keys[i]];
    row.assign(t.values.begin() + i * kDim, t.values.begin() + (i + 1) * kDim);
    row.insert(row.end(), t.state.begin() + i * state, t.state.begin() + (i + 1) * state);
    row.push_back(static_cast<float>(t.row_versions[i]));
  }
  return out;
}

struct Model {
  std::map<uint64_t, std::vector<float>> emb, big;
  std::vector<float> w;
  uint64_t emb_version = 0;
  bool operator==(const Model&) const = default;
};

Model ModelOf(const ParameterStore& store) {
  Model m;
  m.emb = Rows(store, "emb");
  m.big = Rows(store, "big");
  m.w = (*store.PartitionOf("w"))->Snapshot().table.values;
  m.emb_version = store.GetTable("emb")->version;
  return m;
}

// A fresh shard restored from `dir`.
struct Restored {
  explicit Restored(const std::string& dir, CheckpointFs* fs = PosixCheckpointFs()) {
    ShardCheckpointerOptions options;
    options.dir = dir;
    auto opened = ShardCheckpointer::Open(&store, fs, options, 2);
    REQUIRE(opened.ok());
    report = (*opened)->Restore();
  }
  ParameterStore store{0, 1};
  absl::StatusOr<RestoreReport> report;
};

// A shard with the three tables, checkpointing into `dir`.
struct Writer {
  Writer(const std::string& dir, uint32_t keep, uint32_t full_every,
         CheckpointFs* fs = PosixCheckpointFs()) {
    MakeTables(store);
    ShardCheckpointerOptions options;
    options.dir = dir;
    options.keep = keep;
    options.full_every = full_every;
    auto opened = ShardCheckpointer::Open(&store, fs, options, 1);
    REQUIRE(opened.ok());
    checkpointer = *std::move(opened);
  }
  ParameterStore store{0, 1};
  std::unique_ptr<ShardCheckpointer> checkpointer;
  uint64_t seq = 1, next_key = 1000;
};

void FlipByteOf(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f.good());
  f.seekg(40);
  char c = 0;
  f.get(c);
  f.seekp(40);
  f.put(static_cast<char>(c ^ 0x20));
}

// The keys of `t` as a set.
std::set<uint64_t> KeySet(const std::vector<uint64_t>& keys) {
  return std::set<uint64_t>(keys.begin(), keys.end());
}

void ApplyKeys(SparseTable& table, const std::vector<uint64_t>& keys) {
  const std::vector<float> values(keys.size() * kDim, 0.5f);
  GradientPart part;
  part.keys = keys;
  part.values = values;
  table.Apply(part, 1.0f, 0);
}

TEST_CASE("a sparse table tells the rows changed and the keys gone since a cut") {
  TableConfig config = TableConfig::Sparse("t", kDim);
  config.sparse_max_rows = SparseTable::kStripes;  // one row a stripe
  SparseTable table(config);
  std::vector<uint64_t> first, second;
  for (uint64_t k = 0; k < 64; ++k) first.push_back(k);
  for (uint64_t k = 1000; k < 1200; ++k) second.push_back(k);
  ApplyKeys(table, first);
  const std::set<uint64_t> at_cut1 = KeySet(table.Export().keys);
  SparseTable::Changes full = table.ExportChanges(0, 1);
  REQUIRE(full.complete);
  REQUIRE(KeySet(full.rows.keys) == at_cut1);

  ApplyKeys(table, second);  // every key new: evicts
  const std::set<uint64_t> live = KeySet(table.Export().keys);
  std::set<uint64_t> changed, gone;
  for (uint64_t k : live) {
    if (k >= 1000) changed.insert(k);  // the rows of cut 1 were not updated
  }
  // Rows held at cut 1 or made since, without a row now (keys of `first`
  // that lost their stripe before cut 1 are not news).
  std::set<uint64_t> since_cut1 = at_cut1;
  since_cut1.insert(second.begin(), second.end());
  for (uint64_t k : since_cut1) {
    if (!live.count(k)) gone.insert(k);
  }
  REQUIRE(!gone.empty());
  SparseTable::Changes delta = table.ExportChanges(1, 2);
  REQUIRE(delta.complete);
  REQUIRE(KeySet(delta.rows.keys) == changed);
  REQUIRE(KeySet(delta.removed) == gone);
  // As after a failed write: the changes since cut 1 are told again.
  SparseTable::Changes again = table.ExportChanges(1, 3);
  REQUIRE(KeySet(again.rows.keys) == changed);
  REQUIRE(KeySet(again.removed) == gone);
  REQUIRE(table.ExportChanges(3, 4).rows.keys.empty());

  // A restored table cannot tell what changed before: whole next time.
  REQUIRE(table.Import(table.Export()).ok());
  REQUIRE(!table.ExportChanges(4, 5).complete);
  REQUIRE(table.ExportChanges(0, 6).complete);
  REQUIRE(table.ExportChanges(6, 7).complete);
}

TEST_CASE("a chain of deltas restores the tables, evicted rows gone") {
  const std::string dir = FreshDir("chain");
  Writer shard(dir, 10, 4);
  ParameterStore& store = shard.store;
  auto& checkpointer = shard.checkpointer;
  uint64_t& seq = shard.seq;
  uint64_t& next_key = shard.next_key;
  // 2000 rows of "big", then a full checkpoint and three deltas.
  std::vector<uint64_t> many;
  for (uint64_t k = 10000; k < 12000; ++k) many.push_back(k);
  PushRows(store, "big", many, seq);
  std::vector<uint64_t> bytes;
  for (int i = 0; i < 4; ++i) {
    Round(store, seq, next_key, 150);  // 150 new keys a round: "emb" evicts
    auto written = checkpointer->TakeNow();
    INFO(written.status().ToString());
    REQUIRE(written.ok());
    bytes.push_back(written->bytes);
  }
  REQUIRE(checkpointer->stats().incremental == 3);
  REQUIRE(bytes[1] * 5 < bytes[0]);  // a few hundred rows against 2000+
  const Model written = ModelOf(store);
  // 601 keys pushed, at most kRowLimit held: the deltas carry evictions,
  // which the restore must not bring back (the key sets are compared).
  REQUIRE(written.emb.size() <= kRowLimit);
  REQUIRE(written.emb.size() > kRowLimit / 2);

  Restored restored(dir);
  INFO(restored.report.status().ToString());
  REQUIRE(restored.report.ok());
  REQUIRE(restored.report->chain == std::vector<uint64_t>{1, 2, 3, 4});
  REQUIRE(ModelOf(restored.store) == written);

  // The fifth starts a new chain.
  Round(store, seq, next_key, 10);
  REQUIRE(checkpointer->TakeNow().ok());
  REQUIRE(checkpointer->stats().incremental == 3);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a damaged or missing link costs only the checkpoints built on it") {
  const std::string dir = FreshDir("damage");
  Writer shard(dir, 10, 3);
  ParameterStore& store = shard.store;
  auto& checkpointer = shard.checkpointer;
  uint64_t& seq = shard.seq;
  uint64_t& next_key = shard.next_key;
  std::vector<Model> after;  // the model at checkpoint i + 1
  for (int i = 0; i < 6; ++i) {  // 1 full, 2, 3 deltas; 4 full, 5, 6 deltas
    Round(store, seq, next_key, 40);
    REQUIRE(checkpointer->TakeNow().ok());
    after.push_back(ModelOf(store));
  }
  CheckpointStoreOptions files;
  files.dir = dir;
  auto reader = CheckpointStore::Open(PosixCheckpointFs(), files);
  REQUIRE(reader.ok());

  // A corrupt delta (6): restored up to the delta before it.
  FlipByteOf(absl::StrCat((*reader)->PathOf(6), "/part-00000"));
  {
    Restored restored(dir);
    REQUIRE(restored.report.ok());
    REQUIRE(restored.report->sequence == 5);
    REQUIRE(restored.report->broken.size() == 1);
    REQUIRE(ModelOf(restored.store) == after[4]);
  }
  // A corrupt full one (4): its delta 5 goes with it; the older chain ends at 3.
  FlipByteOf(absl::StrCat((*reader)->PathOf(4), "/part-00001"));
  {
    Restored restored(dir);
    REQUIRE(restored.report.ok());
    REQUIRE(restored.report->sequence == 3);
    REQUIRE(restored.report->broken.size() == 2);
    REQUIRE(ModelOf(restored.store) == after[2]);
  }
  // A missing delta (3): the one before it.
  std::filesystem::remove_all((*reader)->PathOf(2));
  {
    Restored restored(dir);
    REQUIRE(restored.report.ok());
    REQUIRE(restored.report->sequence == 1);
    REQUIRE(ModelOf(restored.store) == after[0]);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a failed delta write loses nothing; retention keeps needed bases") {
  const std::string dir = FreshDir("fail");
  FaultInjectingFs fs(PosixCheckpointFs());
  Writer shard(dir, 2, 3, &fs);
  ParameterStore& store = shard.store;
  auto& checkpointer = shard.checkpointer;
  CheckpointStoreOptions files;
  files.dir = dir;
  auto reader = CheckpointStore::Open(PosixCheckpointFs(), files);
  uint64_t& seq = shard.seq;
  uint64_t& next_key = shard.next_key;
  Round(store, seq, next_key, 40);
  REQUIRE(checkpointer->TakeNow().ok());  // 1: full
  Round(store, seq, next_key, 40);
  fs.AddFault({FaultInjectingFs::Op::kAppend, "part-00000", 1, false, ENOSPC});
  REQUIRE(checkpointer->TakeNow().status().code() ==
          absl::StatusCode::kResourceExhausted);
  REQUIRE(checkpointer->stats().failed == 1);
  Round(store, seq, next_key, 40);
  // 2 (the failed one's number again): a delta on 1 covering both rounds.
  REQUIRE(checkpointer->TakeNow().ok());
  REQUIRE(*(*reader)->List() == std::vector<uint64_t>{1, 2});
  {
    Restored restored(dir);
    REQUIRE(restored.report.ok());
    REQUIRE(restored.report->chain == std::vector<uint64_t>{1, 2});
    REQUIRE(ModelOf(restored.store) == ModelOf(store));
  }
  Round(store, seq, next_key, 40);
  REQUIRE(checkpointer->TakeNow().ok());  // 3: delta on 2, which needs 1
  REQUIRE(*(*reader)->List() == std::vector<uint64_t>{1, 2, 3});
  Round(store, seq, next_key, 40);
  REQUIRE(checkpointer->TakeNow().ok());  // 4: full; kept 3 needs 2 and 1
  REQUIRE(*(*reader)->List() == std::vector<uint64_t>{1, 2, 3, 4});
  Round(store, seq, next_key, 40);
  REQUIRE(checkpointer->TakeNow().ok());  // 5: delta on 4
  REQUIRE(*(*reader)->List() == std::vector<uint64_t>{4, 5});
  Restored restored(dir);
  REQUIRE(restored.report.ok());
  REQUIRE(ModelOf(restored.store) == ModelOf(store));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace taups

// Writes the seed corpora of the fuzz targets: a few valid inputs each,
// made with the code base's own encoders, so the fuzzers start from inputs
// that reach deep into the code instead of from nothing.
//
//   write_seed_corpus <corpus dir>   (writes <dir>/{request,codec_block,
//                                     checkpoint}/seed-*)
//
// The files are committed under tests/fuzz/corpus/; run this again (and
// commit the result) when an input format changes.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/ownership_map.h"
#include "ps.pb.h"
#include "server/checkpoint_format.h"
#include "server/parameter_store.h"
#include "server/sparse_table.h"
#include "tests/fuzz/checkpoint_framing.h"
#include "tests/fuzz/request_records.h"

namespace taups::fuzz {
namespace {

int failures = 0;

void WriteSeed(const std::string& dir, const std::string& name,
               const std::string& bytes) {
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  const std::string path = absl::StrCat(dir, "/seed-", name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.good()) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    ++failures;
  }
}

void Require(const absl::Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  ++failures;
}

std::vector<float> Ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i % 17) - 8.0f);
  return v;
}

std::string Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}
std::string Bytes(const std::vector<uint64_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8);
}

// --- request_fuzzer: the shard is 0 of 2, "dense" 4096, "sparse" dim 8 ---
std::vector<uint64_t> KeysOfShard0(size_t n) {
  const OwnershipMap map = OwnershipMap::Initial(2);
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < n; ++k) {
    if (map.OwnsKey(0, k * 7919)) keys.push_back(k * 7919);
  }
  return keys;
}

v1::PushOrigin* Origin(v1::PushOrigin* origin, uint32_t worker, uint64_t seq) {
  origin->set_worker_id(worker);
  origin->set_worker_incarnation(1);
  origin->set_seq(seq);
  return origin;
}

void WriteRequestSeeds(const std::string& dir) {
  const Range range = OwnershipMap::Initial(2).DenseRangeOf(4096, 0);
  const std::vector<uint64_t> keys = KeysOfShard0(4);
  std::string out;

  v1::RegisterRequest reg;
  reg.set_worker_id(3);
  reg.set_worker_incarnation(1);
  reg.set_lease_s(5);
  AppendRecord(RequestMethod::kRegister, reg.SerializeAsString(), &out);
  v1::PushDenseRequest push;
  push.set_table("dense");
  push.set_offset(range.begin);
  push.set_gradient(Bytes(Ramp(64, 0.01f)));
  Origin(push.mutable_origin(), 3, 1);
  AppendRecord(RequestMethod::kPushDense, push.SerializeAsString(), &out);
  v1::PullDenseRequest pull;
  pull.set_table("dense");
  pull.set_offset(range.begin);
  pull.set_count(64);
  pull.set_worker_id(3);
  pull.set_pull_codec(v1::CODEC_INT8);
  pull.set_pull_bucket_size(16);
  AppendRecord(RequestMethod::kPullDense, pull.SerializeAsString(), &out);
  WriteSeed(dir, "dense-push-pull", out);

  out.clear();
  v1::PushSparseRequest sparse;
  sparse.set_table("sparse");
  sparse.set_keys(Bytes(keys));
  sparse.set_gradients(Bytes(Ramp(keys.size() * 8, 0.1f)));
  sparse.set_row_base_versions(Bytes(std::vector<uint64_t>(keys.size(), 0)));
  sparse.set_return_row_taus(true);
  Origin(sparse.mutable_origin(), 2, 1);
  AppendRecord(RequestMethod::kPushSparse, sparse.SerializeAsString(), &out);
  v1::PullSparseRequest sparse_pull;
  sparse_pull.set_table("sparse");
  sparse_pull.set_keys(Bytes(keys));
  sparse_pull.set_with_row_versions(true);
  AppendRecord(RequestMethod::kPullSparse, sparse_pull.SerializeAsString(), &out);
  WriteSeed(dir, "sparse-push-pull", out);

  // A compressed push: an fp16 block, then a two-slice push.
  out.clear();
  CodecOptions fp16;
  fp16.codec = CodecKind::kFp16;
  std::string block;
  Require(EncodeBlock(Ramp(32, 0.5f), fp16, range.begin, &block), "fp16 block");
  push.set_gradient(block);
  push.set_encoded(true);
  Origin(push.mutable_origin(), 4, 1);
  AppendRecord(RequestMethod::kPushDense, push.SerializeAsString(), &out);
  push.set_encoded(false);
  push.set_gradient(Bytes(Ramp(16, 1.0f)));
  push.set_slices_in_push(2);
  Origin(push.mutable_origin(), 4, 2);
  AppendRecord(RequestMethod::kPushDense, push.SerializeAsString(), &out);
  push.set_offset(range.begin + 16);
  push.set_slice_index(1);
  AppendRecord(RequestMethod::kPushDense, push.SerializeAsString(), &out);
  WriteSeed(dir, "encoded-and-sliced-push", out);

  // A new sync table, a push to its step, Stats, then the worker leaves.
  out.clear();
  v1::CreateTableRequest create;
  create.mutable_config()->set_name("sync");
  create.mutable_config()->set_kind(v1::TABLE_KIND_DENSE);
  create.mutable_config()->set_dense_size(256);
  create.mutable_config()->mutable_optimizer()->set_kind(v1::OPTIMIZER_ADAM);
  create.mutable_config()->mutable_consistency()->set_kind(v1::CONSISTENCY_SYNC);
  create.mutable_config()->mutable_consistency()->set_num_workers(2);
  AppendRecord(RequestMethod::kCreateTable, create.SerializeAsString(), &out);
  reg.set_worker_id(1);
  AppendRecord(RequestMethod::kRegister, reg.SerializeAsString(), &out);
  push.set_table("sync");
  push.set_offset(0);
  push.set_slices_in_push(1);
  push.set_slice_index(0);
  push.set_gradient(Bytes(Ramp(8, 0.1f)));
  Origin(push.mutable_origin(), 1, 1);
  AppendRecord(RequestMethod::kPushDense, push.SerializeAsString(), &out);
  v1::SetConsistencyRequest set;
  set.set_table("dense");
  set.mutable_consistency()->set_kind(v1::CONSISTENCY_SSP);
  set.mutable_consistency()->set_staleness_bound(2);
  set.mutable_staleness()->set_delay_compensation(true);
  set.mutable_staleness()->set_delay_compensation_lambda(0.5f);
  AppendRecord(RequestMethod::kSetConsistency, set.SerializeAsString(), &out);
  v1::StatsRequest stats;
  AppendRecord(RequestMethod::kStats, stats.SerializeAsString(), &out);
  v1::GetTableRequest get;
  get.set_name("sync");
  AppendRecord(RequestMethod::kGetTable, get.SerializeAsString(), &out);
  v1::HeartbeatRequest beat;
  beat.set_worker_id(1);
  beat.set_worker_incarnation(1);
  AppendRecord(RequestMethod::kHeartbeat, beat.SerializeAsString(), &out);
  v1::LeaveRequest leave;
  leave.set_worker_id(1);
  leave.set_worker_incarnation(1);
  AppendRecord(RequestMethod::kLeave, leave.SerializeAsString(), &out);
  WriteSeed(dir, "sync-table-admin", out);
}

// --- codec_block_fuzzer: a limit byte, then a block ---
void WriteCodecSeeds(const std::string& dir) {
  const std::vector<float> values = Ramp(40, 0.25f);
  const CodecKind kinds[] = {CodecKind::kNone, CodecKind::kFp16, CodecKind::kBf16,
                             CodecKind::kInt8, CodecKind::kInt4, CodecKind::kInt2,
                             CodecKind::kSign, CodecKind::kTopK};
  for (CodecKind kind : kinds) {
    CodecOptions options;
    options.codec = kind;
    options.bucket_size = 16;
    options.topk_count = 6;
    options.topk_values = CodecKind::kInt8;
    if (kind == CodecKind::kInt4) options.rounding = Rounding::kStochastic;
    std::string block;
    Require(EncodeBlock(values, options, 0, &block), CodecKindName(kind));
    WriteSeed(dir, CodecKindName(kind), std::string(1, '\x01') + block);
  }
}

// --- checkpoint_fuzzer: a mode byte, then records or a raw file ---
struct StringFile final : CheckpointWritableFile {
  std::string data;
  absl::Status Append(absl::string_view d) override {
    data.append(d.data(), d.size());
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Close() override { return absl::OkStatus(); }
};

std::string FileOf(const PartitionCheckpoint& part) {
  StringFile file;
  Require(WritePartitionFile(&file, part).status(), "partition file");
  return file.data;
}

void WriteCheckpointVariants(const std::string& dir, const std::string& name,
                             const std::string& file, uint8_t kind) {
  absl::StatusOr<std::string> records = RecordsOf(file);
  Require(records.status(), name.c_str());
  if (records.ok()) WriteSeed(dir, name, std::string(1, char(kind)) + *records);
  WriteSeed(dir, name + "-raw", std::string(1, char(kind | 2)) + file);
}

void WriteCheckpointSeeds(const std::string& dir) {
  ParameterStore store(0, 1);
  TableConfig dense = TableConfig::Dense("dense_adam", 48);
  dense.optimizer.kind = OptimizerKind::kAdam;
  dense.staleness.reject_above_tau_max = true;
  dense.staleness.tau_max = 3;
  TableConfig sparse = TableConfig::Sparse("emb_adagrad", 4);
  sparse.optimizer.kind = OptimizerKind::kAdagrad;
  sparse.sparse_max_rows = 128;
  TableConfig sync = TableConfig::Dense("sync_momentum", 16);
  sync.optimizer.kind = OptimizerKind::kMomentum;
  sync.consistency.kind = ConsistencyKind::kSync;
  sync.consistency.num_workers = 2;
  bool created = false;
  for (const TableConfig& config : {dense, sparse, sync}) {
    Require(store.CreateTable(config, false, &created).status(), "create");
  }
  const std::vector<float> g48 = Ramp(48, 0.01f), g16 = Ramp(16, 0.02f);
  const std::vector<uint64_t> keys = {3, 99, 1000};
  const std::vector<float> g12 = Ramp(12, 0.1f);
  store.Register(/*worker=*/1, /*incarnation=*/1, absl::Seconds(30));
  PushMeta meta;
  meta.origin = {1, 1, 1};
  Require(store.PushDense("dense_adam", 0, g48, meta).status(), "push dense");
  meta.origin.seq = 2;
  Require(store.PushSparse("emb_adagrad", keys, g12, meta).status(), "push sparse");
  meta.origin.seq = 3;
  Require(store.PushDense("sync_momentum", 0, g16, meta).status(), "push sync");

  CheckpointManifest manifest;
  manifest.header.sequence = 7;
  manifest.header.incarnation = 42;
  manifest.header.created = absl::FromUnixSeconds(1767225600);
  size_t index = 0;
  for (const char* table : {"dense_adam", "emb_adagrad", "sync_momentum"}) {
    absl::StatusOr<std::shared_ptr<Partition>> partition = store.PartitionOf(table);
    Require(partition.status(), table);
    if (!partition.ok()) continue;
    const PartitionCheckpoint part = CapturePartition(**partition);
    const std::string file = FileOf(part);
    WriteCheckpointVariants(dir, table, file, 0);
    manifest.partitions.push_back(SummaryOf(part, index));
    manifest.files.push_back({PartitionFileName(index), file.size(), 0});
    ++index;
  }
  StringFile file;
  Require(WriteManifestFile(&file, manifest).status(), "manifest");
  WriteCheckpointVariants(dir, "manifest", file.data, 1);

  // An incremental checkpoint: the sparse table as a delta (a changed row,
  // a removed key) and its manifest naming a base.
  absl::StatusOr<std::shared_ptr<Partition>> emb = store.PartitionOf("emb_adagrad");
  Require(emb.status(), "emb_adagrad");
  if (!emb.ok()) return;
  auto* emb_table = dynamic_cast<SparseTable*>(&(*emb)->table());
  emb_table->ExportChanges(0, 1);  // starts tracking: the rows so far are the base
  meta.origin.seq = 4;
  Require(store.PushSparse("emb_adagrad", {99}, Ramp(4, 0.3f), meta).status(), "push");
  SparseTable::Changes changes;
  PartitionSnapshot snapshot = (*emb)->SnapshotWith([&](Table&) {
    changes = emb_table->ExportChanges(1, 2);
    return changes.rows;
  });
  PartitionCheckpoint delta = CheckpointOf(**emb, std::move(snapshot));
  delta.delta = true;
  delta.removed = {5, 77};
  const std::string delta_file = FileOf(delta);
  WriteCheckpointVariants(dir, "emb_adagrad-delta", delta_file, 0);
  manifest.header.sequence = 8;
  manifest.base = CheckpointBase{7, 0x1234abcd};
  manifest.partitions[1] = SummaryOf(delta, 1);
  manifest.files[1] = {PartitionFileName(1), delta_file.size(), 0};
  StringFile delta_manifest;
  Require(WriteManifestFile(&delta_manifest, manifest).status(), "delta manifest");
  WriteCheckpointVariants(dir, "manifest-delta", delta_manifest.data, 1);
}

}  // namespace
}  // namespace taups::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  taups::fuzz::WriteRequestSeeds(root + "/request");
  taups::fuzz::WriteCodecSeeds(root + "/codec_block");
  taups::fuzz::WriteCheckpointSeeds(root + "/checkpoint");
  return taups::fuzz::failures == 0 ? 0 : 1;
}

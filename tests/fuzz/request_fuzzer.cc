// Fuzz target: requests as a hostile client sends them, through ShardCalls
// (server/shard_calls.h: the wire conversion every gRPC handler of the shard
// calls, then ParameterStore and partitions), with no sockets.
//
// Each input is a run of requests (request_records.h) against a fresh shard
// (shard 0 of 2) that holds a dense Adagrad table "dense" and a sparse
// momentum table "sparse", under small ServerLimits so that no accepted
// request can take more than a few MiB. Properties beyond "no crash, no
// sanitizer report":
//   - no request is answered UNKNOWN or INTERNAL: a hostile request gets a
//     precise code, or is served;
//   - after the run, every value of the two tables is finite (the shard
//     refuses updates whose result would not be).
// A pull the table's policy would make wait (sync, semi-sync, SSP) is not
// sent: it would block until a deadline this in-process call does not have.
// PullReady, the store's own test, tells which.
#include <google/protobuf/stubs/logging.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/limits.h"
#include "server/parameter_store.h"
#include "server/shard_calls.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/request_records.h"

namespace taups::fuzz {
namespace {

constexpr uint64_t kDenseSize = 4096;  // shard 0 holds a part of it
constexpr uint32_t kSparseDim = 8;

// Small enough that the worst a run can allocate (max_tables x
// max_table_bytes, plus per-request bounds) stays far below libFuzzer's
// rss limit.
ServerLimits SmallLimits() {
  ServerLimits limits;
  limits.max_table_bytes = uint64_t{8} << 20;
  limits.default_sparse_rows = 4096;
  limits.max_tables = 8;
  limits.max_keys_per_request = 4096;
  limits.max_pull_bytes = uint64_t{4} << 20;
  limits.max_block_values = uint64_t{1} << 20;
  limits.max_staged_bytes = uint64_t{8} << 20;
  limits.max_workers = 64;
  return limits;
}

// Protobuf logs every string field that is not UTF-8; the fuzzer sends
// thousands a second.
void IgnoreProtobufLog(google::protobuf::LogLevel, const char*, int,
                       const std::string&) {}
const bool kProtobufQuiet =
    (google::protobuf::SetLogHandler(&IgnoreProtobufLog), true);

void CheckCode(const absl::Status& status, const char* method) {
  const bool imprecise = absl::IsUnknown(status) || absl::IsInternal(status);
  if (imprecise) {
    std::fprintf(stderr, "%s answered code %d: %s\n", method,
                 static_cast<int>(status.code()),
                 std::string(status.message()).c_str());
  }
  TAUPS_FUZZ_CHECK(!imprecise, method);
}

// One fresh shard: the store, its calls, and the two tables.
class Shard {
 public:
  Shard()
      : store_(/*shard_index=*/0, /*num_shards=*/2, RealClock::Get(),
               absl::Seconds(10), SmallLimits()),
        calls_(&store_, /*incarnation=*/1) {
    v1::CreateTableRequest dense;
    dense.mutable_config()->set_name("dense");
    dense.mutable_config()->set_kind(v1::TABLE_KIND_DENSE);
    dense.mutable_config()->set_dense_size(kDenseSize);
    dense.mutable_config()->mutable_optimizer()->set_kind(v1::OPTIMIZER_ADAGRAD);
    v1::CreateTableRequest sparse;
    sparse.mutable_config()->set_name("sparse");
    sparse.mutable_config()->set_kind(v1::TABLE_KIND_SPARSE);
    sparse.mutable_config()->set_dim(kSparseDim);
    sparse.mutable_config()->set_sparse_max_rows(256);  // evictions are reached
    sparse.mutable_config()->mutable_optimizer()->set_kind(v1::OPTIMIZER_MOMENTUM);
    for (const auto* request : {&dense, &sparse}) {
      v1::CreateTableResponse response;
      absl::Status created = calls_.CreateTable(*request, &response);
      TAUPS_FUZZ_CHECK(created.ok(), std::string(created.message()).c_str());
    }
  }

  void Run(const RequestRecord& record) {
    switch (record.method) {
      case RequestMethod::kCreateTable:
        Call<v1::CreateTableRequest, v1::CreateTableResponse>(
            record, &ShardCalls::CreateTable, "CreateTable");
        break;
      case RequestMethod::kGetTable:
        Call<v1::GetTableRequest, v1::GetTableResponse>(
            record, &ShardCalls::GetTable, "GetTable");
        break;
      case RequestMethod::kPullDense:
        Call<v1::PullDenseRequest, v1::PullDenseResponse>(
            record, &ShardCalls::PullDense, "PullDense");
        break;
      case RequestMethod::kPushDense:
        Call<v1::PushDenseRequest, v1::PushResponse>(
            record, &ShardCalls::PushDense, "PushDense");
        break;
      case RequestMethod::kPullSparse:
        Call<v1::PullSparseRequest, v1::PullSparseResponse>(
            record, &ShardCalls::PullSparse, "PullSparse");
        break;
      case RequestMethod::kPushSparse:
        Call<v1::PushSparseRequest, v1::PushResponse>(
            record, &ShardCalls::PushSparse, "PushSparse");
        break;
      case RequestMethod::kRegister:
        Call<v1::RegisterRequest, v1::RegisterResponse>(
            record, &ShardCalls::Register, "Register");
        break;
      case RequestMethod::kHeartbeat:
        Call<v1::HeartbeatRequest, v1::HeartbeatResponse>(
            record, &ShardCalls::Heartbeat, "Heartbeat");
        break;
      case RequestMethod::kLeave:
        Call<v1::LeaveRequest, v1::LeaveResponse>(
            record, &ShardCalls::Leave, "Leave");
        break;
      case RequestMethod::kSetConsistency:
        Call<v1::SetConsistencyRequest, v1::SetConsistencyResponse>(
            record, &ShardCalls::SetConsistency, "SetConsistency");
        break;
      case RequestMethod::kStats:
        Call<v1::StatsRequest, v1::StatsResponse>(
            record, &ShardCalls::Stats, "Stats");
        break;
    }
  }

  // Every value of "dense" (this shard's range) and of the sparse rows the
  // run touched is finite.
  void CheckFiniteTables() {
    absl::StatusOr<ParameterStore::Shape> shape = store_.ShapeOf("dense");
    TAUPS_FUZZ_CHECK(shape.ok(), "the dense table is gone");
    std::vector<float> dense(shape->range.size());
    absl::StatusOr<PullResult> pulled = store_.PullDense(
        "dense", shape->range.begin, absl::MakeSpan(dense), NoWait());
    if (pulled.ok()) CheckFinite(dense, "dense table");
    if (sparse_keys_.empty()) return;
    std::vector<float> rows(sparse_keys_.size() * kSparseDim);
    pulled = store_.PullSparse("sparse", sparse_keys_, absl::MakeSpan(rows),
                               NoWait());
    if (pulled.ok()) CheckFinite(rows, "sparse rows");
  }

 private:
  template <typename Request, typename Response>
  using Handler = absl::Status (ShardCalls::*)(const Request&, Response*);
  // Pulls: sent only when they would not wait, with no time to wait.
  template <typename Request, typename Response>
  using PullHandler = absl::Status (ShardCalls::*)(const Request&, absl::Time,
                                                   Response*);

  template <typename Request, typename Response>
  void Call(const RequestRecord& record, Handler<Request, Response> handler,
            const char* name) {
    Request request;
    if (!Parse(record, &request)) return;
    Response response;
    CheckCode((calls_.*handler)(request, &response), name);
  }
  template <typename Request, typename Response>
  void Call(const RequestRecord& record, PullHandler<Request, Response> handler,
            const char* name) {
    Request request;
    if (!Parse(record, &request)) return;
    Response response;
    CheckCode((calls_.*handler)(request, absl::InfinitePast(), &response), name);
  }

  // True: the record parsed (gRPC refuses a message that does not) and is
  // to be sent.
  template <typename Request>
  bool Parse(const RequestRecord& record, Request* request) {
    return request->ParseFromArray(record.message.data(),
                                   static_cast<int>(record.message.size())) &&
           Prepare(*request);
  }

  // Pulls that would wait are skipped; the keys of sparse requests are
  // remembered for the final check. True: send the request.
  template <typename Request>
  bool Prepare(const Request&) { return true; }
  bool Prepare(const v1::PullDenseRequest& r) {
    return Ready(r.table(), r.worker_id(), r.clock());
  }
  bool Prepare(const v1::PullSparseRequest& r) {
    RememberKeys(r.table(), r.keys());
    return Ready(r.table(), r.worker_id(), r.clock());
  }
  bool Prepare(const v1::PushSparseRequest& r) {
    RememberKeys(r.table(), r.keys());
    return true;
  }

  bool Ready(const std::string& table, uint32_t worker, uint64_t clock) {
    PullContext ctx;
    ctx.worker = worker;
    ctx.clock = clock;
    absl::StatusOr<bool> ready = store_.PullReady(table, ctx);
    return !ready.ok() || *ready;  // an error: the handler reports it
  }

  // Keys of this shard, unique, at most 64 of them.
  void RememberKeys(const std::string& table, const std::string& bytes) {
    if (table != "sparse") return;
    for (size_t i = 0; i + 8 <= bytes.size() && sparse_keys_.size() < 64;
         i += 8) {
      uint64_t key;
      std::memcpy(&key, bytes.data() + i, 8);
      if (!store_.ownership().OwnsKey(store_.shard_index(), key)) continue;
      bool seen = false;
      for (uint64_t k : sparse_keys_) seen = seen || k == key;
      if (!seen) sparse_keys_.push_back(key);
    }
  }

  static PullContext NoWait() {
    PullContext ctx;
    ctx.deadline = absl::InfinitePast();
    return ctx;
  }

  static void CheckFinite(const std::vector<float>& values, const char* what) {
    for (float v : values) TAUPS_FUZZ_CHECK(std::isfinite(v), what);
  }

  ParameterStore store_;
  ShardCalls calls_;
  std::vector<uint64_t> sparse_keys_;
};

}  // namespace
}  // namespace taups::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view input(reinterpret_cast<const char*>(data), size);
  taups::fuzz::Shard shard;
  taups::fuzz::RequestRecord record;
  while (taups::fuzz::NextRecord(&input, &record)) shard.Run(record);
  shard.CheckFiniteTables();
  return 0;
}

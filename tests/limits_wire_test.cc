// The shard's limits and defaults through a real gRPC server, with stock
// requests (raw stubs, only the fields a user must set):
//  - a table needs only name, kind and size: every unset optimizer field
//    means its documented default (sgd, adagrad, adam);
//  - a 56-byte CreateTable asking for 3.7 GiB and a 512 KiB PullSparse
//    asking for a 1 GiB answer are refused before the shard allocates them:
//    the process's peak RSS stays far below the refused sizes;
//  - names echoed in errors are bounded.
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/grpc_lifetime.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "server/shard_server.h"

namespace taups {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

struct Shard {
  explicit Shard(const ServerLimits& limits = {}) {
    ShardServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.stats_interval = absl::ZeroDuration();
    options.limits = limits;
    auto started = ShardServer::Start(options);
    REQUIRE(started.ok());
    server = std::move(*started);
    KeepCallbackQueueAlive();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    stub = v1::ParameterServer::NewStub(
        *OpenChannel(absl::StrCat("127.0.0.1:", server->port()),
                     ChannelSecurity{}, args));
  }
  std::unique_ptr<ShardServer> server;
  std::unique_ptr<v1::ParameterServer::Stub> stub;
};

grpc::Status Create(Shard& shard, const v1::TableConfig& config,
                    v1::CreateTableResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::CreateTableRequest request;
  *request.mutable_config() = config;
  return shard.stub->CreateTable(&context, request, response);
}

v1::TableConfig Stock(const std::string& name, v1::OptimizerKind optimizer) {
  v1::TableConfig config;
  config.set_name(name);
  config.set_kind(v1::TABLE_KIND_DENSE);
  config.set_dense_size(8);
  if (optimizer != v1::OPTIMIZER_UNSPECIFIED) {
    config.mutable_optimizer()->set_kind(optimizer);
  }
  return config;
}

// Peak resident set of this process, in bytes (VmHWM).
uint64_t PeakRss() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "VmHWM:")) {
      return std::stoull(line.substr(6)) * 1024;
    }
  }
  FAIL("no VmHWM in /proc/self/status");
  return 0;
}

// Starts a new peak-RSS window where the kernel allows it (else the peak
// so far stands, which can only make the check stricter).
void ResetPeakRss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return;
  std::fputs("5", f);
  std::fclose(f);
}

TEST_CASE("stock requests with only the required fields create sgd, adagrad and adam tables") {
  Shard shard;
  const OptimizerConfig defaults;

  v1::CreateTableResponse sgd;
  grpc::Status s = Create(shard, Stock("sgd", v1::OPTIMIZER_UNSPECIFIED), &sgd);
  INFO(s.error_message());
  REQUIRE(s.ok());
  CHECK(sgd.created());
  CHECK(sgd.info().config().optimizer().kind() == v1::OPTIMIZER_SGD);
  CHECK(sgd.info().config().optimizer().learning_rate() == defaults.learning_rate);

  v1::CreateTableResponse adagrad;
  s = Create(shard, Stock("adagrad", v1::OPTIMIZER_ADAGRAD), &adagrad);
  INFO(s.error_message());
  REQUIRE(s.ok());
  const v1::OptimizerConfig& ag = adagrad.info().config().optimizer();
  CHECK(ag.kind() == v1::OPTIMIZER_ADAGRAD);
  CHECK(ag.adagrad_initial_accumulator() == defaults.adagrad_initial_accumulator);
  CHECK(ag.adagrad_epsilon() == defaults.adagrad_epsilon);

  v1::CreateTableResponse adam;
  s = Create(shard, Stock("adam", v1::OPTIMIZER_ADAM), &adam);
  INFO(s.error_message());
  REQUIRE(s.ok());
  const v1::OptimizerConfig& a = adam.info().config().optimizer();
  CHECK(a.kind() == v1::OPTIMIZER_ADAM);
  CHECK(a.adam_beta1() == defaults.adam_beta1);
  CHECK(a.adam_beta2() == defaults.adam_beta2);
  CHECK(a.adam_epsilon() == defaults.adam_epsilon);
  CHECK(a.learning_rate() == defaults.learning_rate);

  // The same stock request again is the same table, not a conflict.
  v1::CreateTableResponse again;
  v1::CreateTableRequest request;
  *request.mutable_config() = Stock("adam", v1::OPTIMIZER_ADAM);
  request.set_exist_ok(true);
  grpc::ClientContext context;
  REQUIRE(shard.stub->CreateTable(&context, request, &again).ok());
  CHECK_FALSE(again.created());

  // A stock sparse table gets the shard's default row limit.
  v1::TableConfig sparse;
  sparse.set_name("emb");
  sparse.set_kind(v1::TABLE_KIND_SPARSE);
  sparse.set_dim(16);
  v1::CreateTableResponse emb;
  REQUIRE(Create(shard, sparse, &emb).ok());
  CHECK(emb.info().sparse_row_limit() == ServerLimits{}.default_sparse_rows);

  // And the sgd table trains at the default rate: one push of 1s moves
  // every value by -learning_rate.
  v1::PushDenseRequest push;
  push.set_table("sgd");
  std::vector<float> ones(8, 1.0f);
  push.set_gradient(std::string(reinterpret_cast<const char*>(ones.data()), 32));
  push.mutable_origin()->set_worker_incarnation(1);
  push.mutable_origin()->set_seq(1);
  v1::PushResponse pushed;
  grpc::ClientContext push_context;
  REQUIRE(shard.stub->PushDense(&push_context, push, &pushed).ok());
  REQUIRE(pushed.accepted());
  v1::PullDenseRequest pull;
  pull.set_table("sgd");
  pull.set_count(8);
  v1::PullDenseResponse pulled;
  grpc::ClientContext pull_context;
  REQUIRE(shard.stub->PullDense(&pull_context, pull, &pulled).ok());
  REQUIRE(pulled.values().size() == 32);
  float first = 0;
  std::memcpy(&first, pulled.values().data(), sizeof(first));
  CHECK(first == -defaults.learning_rate);
}

TEST_CASE("refused huge requests do not raise the peak RSS") {
  Shard shard;
  // Warm the server and the channel first, so their own memory is counted
  // before the window opens.
  v1::CreateTableResponse warm;
  REQUIRE(Create(shard, Stock("warm", v1::OPTIMIZER_SGD), &warm).ok());
  v1::TableConfig wide;
  wide.set_name("wide");
  wide.set_kind(v1::TABLE_KIND_SPARSE);
  wide.set_dim(4096);
  wide.mutable_optimizer()->set_kind(v1::OPTIMIZER_ADAM);
  v1::CreateTableResponse wide_info;
  REQUIRE(Create(shard, wide, &wide_info).ok());

  ResetPeakRss();
  const uint64_t before = PeakRss();

  // 56 bytes asking for 250M floats with Adam's 3 state floats: 3.7 GiB.
  v1::TableConfig huge = Stock("huge", v1::OPTIMIZER_ADAM);
  huge.set_dense_size(250'000'000);
  v1::CreateTableRequest huge_request;
  *huge_request.mutable_config() = huge;
  CHECK(huge_request.ByteSizeLong() < 64);
  v1::CreateTableResponse huge_response;
  grpc::Status s = Create(shard, huge, &huge_response);
  INFO(s.error_message());
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(s.error_message(), "--max_table_mb"));

  // 65,536 keys (512 KiB) of a 4096-wide table: a 1 GiB answer, raw, with
  // row versions, and compressed (whose scratch is as large).
  std::vector<uint64_t> keys(65536);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i + 1;
  for (int variant = 0; variant < 3; ++variant) {
    v1::PullSparseRequest pull;
    pull.set_table("wide");
    pull.set_keys(std::string(reinterpret_cast<const char*>(keys.data()),
                              keys.size() * sizeof(uint64_t)));
    if (variant == 1) pull.set_with_row_versions(true);
    if (variant == 2) pull.set_pull_codec(v1::CODEC_FP16);
    v1::PullSparseResponse response;
    grpc::ClientContext context;
    s = shard.stub->PullSparse(&context, pull, &response);
    INFO(variant << ": " << s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(absl::StrContains(s.error_message(), "--max_pull_mb"));
  }
  const uint64_t after = PeakRss();
  INFO("peak RSS before " << before / kMiB << " MiB, after " << after / kMiB
                          << " MiB");
  // The refused sizes are 3,725 MiB and 1,024 MiB.
  CHECK(after - before < 64 * kMiB);
  // No row of the wide table was created by the refused pulls.
  v1::GetTableRequest get;
  get.set_name("wide");
  v1::GetTableResponse got;
  grpc::ClientContext get_context;
  REQUIRE(shard.stub->GetTable(&get_context, get, &got).ok());
  CHECK(got.info().sparse_rows() == 0);
}

TEST_CASE("limits set on the server are the ones its answers name") {
  ServerLimits limits;
  limits.max_block_values = 1000;
  limits.max_name_length = 16;
  Shard shard(limits);
  v1::CreateTableResponse created;
  REQUIRE(Create(shard, Stock("w", v1::OPTIMIZER_SGD), &created).ok());
  v1::TableConfig w = Stock("w", v1::OPTIMIZER_SGD);
  w.set_dense_size(4096);
  w.set_name("w4096");
  REQUIRE(Create(shard, w, &created).ok());

  // A 17-character name is over this shard's 16.
  grpc::Status s = Create(shard, Stock(std::string(17, 'n'), v1::OPTIMIZER_SGD),
                          &created);
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);

  // A block of 1001 values is over the 1000 this shard decodes.
  for (const size_t n : {1000, 1001}) {
    std::vector<float> values(n, 0.25f);
    CodecOptions options;
    options.codec = CodecKind::kFp16;
    std::string block;
    REQUIRE(EncodeBlock(values, options, 0, &block).ok());
    v1::PushDenseRequest push;
    push.set_table("w4096");
    push.set_gradient(block);
    push.set_encoded(true);
    push.mutable_origin()->set_worker_incarnation(1);
    push.mutable_origin()->set_seq(n);
    v1::PushResponse response;
    grpc::ClientContext context;
    s = shard.stub->PushDense(&context, push, &response);
    INFO(n << ": " << s.error_message());
    if (n == 1000) {
      CHECK(s.ok());
    } else {
      CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
      CHECK(absl::StrContains(s.error_message(), "--max_block_values"));
    }
  }

  // A 1 MiB name of a table that does not exist comes back cut short.
  v1::GetTableRequest get;
  get.set_name(std::string(kMiB, 'q'));
  v1::GetTableResponse got;
  grpc::ClientContext context;
  s = shard.stub->GetTable(&context, get, &got);
  CHECK(s.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(s.error_message().size() < 200);
}

}  // namespace
}  // namespace taups

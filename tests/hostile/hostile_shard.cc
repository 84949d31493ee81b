#include "tests/hostile/hostile_shard.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <httplib.h>

#include <cstring>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_lifetime.h"
#include "common/shard_map.h"
#include "proto/grpc_credentials.h"

namespace taups::testing::hostile {
namespace {

constexpr char kTrainersToken[] = "hostile-trainers-token-0123456789";
constexpr char kOthersToken[] = "hostile-others-token-9876543210";
constexpr char kAuditorToken[] = "hostile-auditor-token-5555555555";
constexpr char kFarToken[] = "hostile-far-token-2222222222";
constexpr char kAdminToken[] = "hostile-admin-token-4444444444";
constexpr char kReaderToken[] = "hostile-reader-token-3333333333";

std::string AuthFile(const std::string& dir) {
  const std::string path = dir + "/auth";
  std::ofstream(path) << "token " << kTrainersToken << " trainers worker 0-3\n"
                      << "token " << kOthersToken << " others worker 4-7\n"
                      << "token " << kAuditorToken << " auditor worker 9\n"
                      << "token " << kFarToken << " far worker 62-66\n"
                      << "token " << kAdminToken << " ops admin\n"
                      << "token " << kReaderToken << " dash reader\n"
                      << "cert " << kTestPeerName << " certified worker "
                      << kCertifiedWorker << "\n";
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  return path;
}

std::string Flag(uint64_t value, const char* flag) {
  return absl::StrCat("--", flag, "=", value);
}

int ReadPort(const std::string& path) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  int port = 0;
  while (port == 0 && absl::Now() < deadline) {
    std::ifstream in(path);
    if (!(in >> port)) {
      port = 0;
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  REQUIRE(port > 0);
  return port;
}

template <typename Request, typename Response, typename Method>
void MustSucceed(HostileShard& shard, Who who, Method method,
                 const Request& request, Response* response) {
  auto context = shard.Context(who);
  const grpc::Status status = (shard.stub(who).*method)(context.get(), request, response);
  INFO(status.error_message());
  REQUIRE(status.ok());
}

v1::TableConfig DenseConfig(const std::string& name, uint64_t size,
                            v1::OptimizerKind optimizer) {
  v1::TableConfig config;
  config.set_name(name);
  config.set_kind(v1::TABLE_KIND_DENSE);
  config.set_dense_size(size);
  config.mutable_optimizer()->set_kind(optimizer);
  config.mutable_optimizer()->set_learning_rate(0.05f);
  config.mutable_initializer()->set_kind(v1::INIT_UNIFORM);
  config.mutable_initializer()->set_scale(0.5f);
  config.mutable_initializer()->set_seed(11);
  return config;
}

// The channel security of a TLS shard's clients: its CA, and its `client`
// certificate (a name the auth file does not list).
ChannelSecurity ClientTls(const TestPki& pki) {
  ChannelSecurity security;
  security.ca_file = pki.ca;
  security.cert_file = pki.client_cert;
  security.key_file = pki.client_key;
  return security;
}

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address,
                                         const TestPki* pki,
                                         grpc::ChannelArguments args = {}) {
  if (pki == nullptr) {
    return grpc::CreateCustomChannel(
        address, grpc::experimental::LocalCredentials(LOCAL_TCP), args);
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      OpenChannel(address, ClientTls(*pki), args);
  REQUIRE(channel.ok());
  return *channel;
}

std::vector<std::string> TlsFlags(const TestPki* pki) {
  if (pki == nullptr) return {};
  return {"--tls_cert=" + pki->server_cert, "--tls_key=" + pki->server_key,
          "--tls_ca=" + pki->ca, "--tls_require_client_cert"};
}

std::vector<std::string> With(std::vector<std::string> flags,
                              const std::vector<std::string>& more) {
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

}  // namespace

std::string Floats(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()),
                     values.size() * sizeof(float));
}

std::string Keys(const std::vector<uint64_t>& keys) {
  return std::string(reinterpret_cast<const char*>(keys.data()),
                     keys.size() * sizeof(uint64_t));
}

HostileShard::HostileShard(const TempDir& dir, const TestPki* pki) : pki_(pki) {
  const std::string metrics_port_file = dir.path() + "/metrics.port";
  shards_ = StartShards(
      dir.path(), 1, With(
      {Flag(kNumShards, "num_shards"), "--auth_file=" + AuthFile(dir.path()),
       Flag(kBudgetMb, "memory_budget_mb"), Flag(kMaxTables, "max_tables"),
       Flag(kMaxWorkers, "max_workers"),
       Flag(kMaxWorkersPerTable, "max_workers_per_table"),
       Flag(kMaxWaitingPerWorker, "max_waiting_per_worker"),
       Flag(kMaxWaitingCalls, "max_waiting_calls"),
       Flag(kMaxKeys, "max_keys_per_request"),
       Flag(kMaxBlockValues, "max_block_values"),
       Flag(kMaxNameLength, "max_table_name_length"), "--max_pull_mb=1",
       absl::StrCat("--max_lease_s=", kMaxLeaseS), "--lease_s=5",
       "--stats_interval_s=0", "--metrics_port=0",
       "--metrics_port_file=" + metrics_port_file}, TlsFlags(pki)));
  metrics_port_ = ReadPort(metrics_port_file);
  address_ = shards_[0].address();
  // The flood cases make callback-API calls (see grpc_lifetime.h).
  KeepCallbackQueueAlive();
  stub_ = v1::ParameterServer::NewStub(ChannelTo(address_, pki));
  grpc::ChannelArguments own_connection;
  own_connection.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  anonymous_ = v1::ParameterServer::NewStub(ChannelTo(address_, pki, own_connection));
  plaintext_ = v1::ParameterServer::NewStub(
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  for (uint64_t key = 1; own_keys_.size() < 8 || foreign_keys_.size() < 4; ++key) {
    if (SparseShardOf(key, kNumShards) == 0) {
      if (own_keys_.size() < 8) own_keys_.push_back(key);
    } else if (foreign_keys_.size() < 4) {
      foreign_keys_.push_back(key);
    }
  }
}

std::unique_ptr<v1::ParameterServer::Stub> HostileShard::TlsStub(
    ChannelSecurity security) const {
  REQUIRE(pki_ != nullptr);
  if (security.ca_file.empty()) security.ca_file = pki_->ca;
  grpc::ChannelArguments own_connection;
  own_connection.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      OpenChannel(address_, security, own_connection);
  REQUIRE(channel.ok());
  return v1::ParameterServer::NewStub(*channel);
}

std::unique_ptr<grpc::ClientContext> HostileShard::Context(
    Who who, std::chrono::milliseconds timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  const char* token = nullptr;
  switch (who) {
    case Who::kNobody: break;
    case Who::kTrainers: token = kTrainersToken; break;
    case Who::kOthers: token = kOthersToken; break;
    case Who::kAuditor: token = kAuditorToken; break;
    case Who::kFar: token = kFarToken; break;
    case Who::kAdmin: token = kAdminToken; break;
    case Who::kReader: token = kReaderToken; break;
    case Who::kUnknownToken: token = "hostile-made-up-token-0000000000"; break;
    case Who::kBasicAuth:
      context->AddMetadata("authorization", "Basic dHJhaW5lcnM6c2VjcmV0");
      break;
    case Who::kEmptyBearer:
      context->AddMetadata("authorization", "Bearer ");
      break;
  }
  if (token != nullptr) {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", token));
  }
  return context;
}

void HostileShard::SetUp() {
  v1::CreateTableResponse created;
  for (const v1::TableConfig& config :
       {DenseConfig(kDense, kDenseSize, v1::OPTIMIZER_ADAM),
        DenseConfig(kSync, kSyncSize, v1::OPTIMIZER_SGD)}) {
    v1::CreateTableRequest request;
    *request.mutable_config() = config;
    if (config.name() == kSync) {
      request.mutable_config()->mutable_consistency()->set_kind(v1::CONSISTENCY_SYNC);
      request.mutable_config()->mutable_consistency()->set_num_workers(2);
    }
    MustSucceed(*this, Who::kAdmin, &v1::ParameterServer::Stub::CreateTable,
                request, &created);
  }
  v1::CreateTableRequest sparse;
  sparse.mutable_config()->set_name(kSparse);
  sparse.mutable_config()->set_kind(v1::TABLE_KIND_SPARSE);
  sparse.mutable_config()->set_dim(kDim);
  sparse.mutable_config()->set_sparse_max_rows(1024);
  sparse.mutable_config()->mutable_optimizer()->set_kind(v1::OPTIMIZER_ADAGRAD);
  sparse.mutable_config()->mutable_optimizer()->set_learning_rate(0.1f);
  MustSucceed(*this, Who::kAdmin, &v1::ParameterServer::Stub::CreateTable, sparse,
              &created);

  for (uint32_t worker : {0u, 1u}) {
    v1::RegisterRequest request;
    request.set_worker_id(worker);
    request.set_worker_incarnation(kIncarnation);
    request.set_lease_s(kMaxLeaseS);
    v1::RegisterResponse response;
    MustSucceed(*this, Who::kTrainers, &v1::ParameterServer::Stub::Register,
                request, &response);
    REQUIRE(response.lease_s() == kMaxLeaseS);
  }

  // Each of workers 0 and 1 pushes the dense and sparse tables twice.
  uint64_t seq = 1;
  for (uint32_t worker : {0u, 1u}) {
    for (int round = 0; round < 2; ++round, ++seq) {
      std::vector<float> gradient(kDenseHere);
      for (size_t i = 0; i < gradient.size(); ++i) {
        gradient[i] = 0.01f * static_cast<float>(i + 1) * (worker + 1) - 0.1f * round;
      }
      v1::PushDenseRequest push;
      push.set_table(kDense);
      push.set_gradient(Floats(gradient));
      push.mutable_origin()->set_worker_id(worker);
      push.mutable_origin()->set_worker_incarnation(kIncarnation);
      push.mutable_origin()->set_seq(seq);
      v1::PushResponse pushed;
      MustSucceed(*this, Who::kTrainers, &v1::ParameterServer::Stub::PushDense,
                  push, &pushed);
      REQUIRE(pushed.accepted());

      v1::PushSparseRequest sparse_push;
      sparse_push.set_table(kSparse);
      sparse_push.set_keys(Keys(own_keys_));
      std::vector<float> rows(own_keys_.size() * kDim);
      for (size_t i = 0; i < rows.size(); ++i) {
        rows[i] = 0.02f * static_cast<float>(i % 7) - 0.05f * worker + 0.01f * round;
      }
      sparse_push.set_gradients(Floats(rows));
      *sparse_push.mutable_origin() = push.origin();
      MustSucceed(*this, Who::kTrainers, &v1::ParameterServer::Stub::PushSparse,
                  sparse_push, &pushed);
      REQUIRE(pushed.accepted());
    }
  }

  // Sync step 0: worker 1 pulls (its seat), worker 0 pushes; the step waits
  // for worker 1's push, which never comes.
  v1::PullDenseRequest pull;
  pull.set_table(kSync);
  pull.set_count(kSyncHere);
  pull.set_worker_id(1);
  v1::PullDenseResponse pulled;
  MustSucceed(*this, Who::kTrainers, &v1::ParameterServer::Stub::PullDense, pull,
              &pulled);
  v1::PushDenseRequest step;
  step.set_table(kSync);
  step.set_gradient(Floats(std::vector<float>(kSyncHere, 0.5f)));
  step.mutable_origin()->set_worker_id(0);
  step.mutable_origin()->set_worker_incarnation(kIncarnation);
  step.mutable_origin()->set_seq(seq++);
  v1::PushResponse stepped;
  MustSucceed(*this, Who::kTrainers, &v1::ParameterServer::Stub::PushDense, step,
              &stepped);
  REQUIRE(stepped.accepted());

  // The auditor's seats: the digest's own reads then change nothing.
  Digest();
}

void HostileShard::RenewLeases() {
  for (uint32_t worker : {0u, 1u}) {
    v1::HeartbeatRequest request;
    request.set_worker_id(worker);
    request.set_worker_incarnation(kIncarnation);
    v1::HeartbeatResponse response;
    MustSucceed(*this, Who::kTrainers, &v1::ParameterServer::Stub::Heartbeat, request,
                &response);
    INFO("worker " << worker << " is no longer known: its lease ran out");
    REQUIRE(response.known());
  }
}

double HostileShard::Metric(const std::string& series) {
  const std::string text = Metrics();
  const size_t at = text.find("\n" + series + " ");
  REQUIRE(at != std::string::npos);
  const size_t begin = at + series.size() + 2;
  double value = 0;
  REQUIRE(absl::SimpleAtod(text.substr(begin, text.find('\n', begin) - begin), &value));
  return value;
}

std::string HostileShard::Metrics() {
  httplib::Client http("127.0.0.1", metrics_port_);
  http.set_read_timeout(5, 0);
  auto res = http.Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return "\n" + res->body;
}

}  // namespace taups::testing::hostile

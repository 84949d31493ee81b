#include "worker/tools/shard_admin.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "proto/grpc_credentials.h"
#include "proto/grpc_status_convert.h"
#include "ps.grpc.pb.h"
#include "worker/src/client_security.h"

namespace taups {
namespace {

using Stub = v1::ParameterServer::Stub;

// One unary call on every shard, in shard order.
template <typename Request, typename Response>
std::vector<absl::StatusOr<Response>> OnEveryShard(
    const std::vector<std::unique_ptr<Stub>>& stubs, absl::Duration timeout,
    grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
    const Request& request,
    absl::FunctionRef<absl::Status(int, const absl::Status&)> named) {
  std::vector<absl::StatusOr<Response>> answers;
  for (size_t i = 0; i < stubs.size(); ++i) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    Response response;
    const absl::Status status =
        FromGrpcStatus((stubs[i].get()->*method)(&context, request, &response));
    if (status.ok()) {
      answers.push_back(std::move(response));
    } else {
      answers.push_back(named(static_cast<int>(i), status));
    }
  }
  return answers;
}

}  // namespace

struct ShardAdmin::Stubs {
  std::vector<std::unique_ptr<Stub>> stubs;
};

ShardAdmin::ShardAdmin(std::vector<std::string> addresses,
                       std::unique_ptr<Stubs> stubs, absl::Duration timeout)
    : addresses_(std::move(addresses)), stubs_(std::move(stubs)), timeout_(timeout) {}

ShardAdmin::~ShardAdmin() = default;

absl::StatusOr<std::unique_ptr<ShardAdmin>> ShardAdmin::Open(
    const ClientOptions& options, absl::Duration timeout) {
  if (options.servers.empty()) {
    return absl::InvalidArgumentError("no shards given (--servers or --config)");
  }
  const ChannelSecurity security = ChannelSecurityOf(options);
  auto stubs = std::make_unique<Stubs>();
  for (size_t i = 0; i < options.servers.size(); ++i) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        OpenChannel(options.servers[i], security);
    if (!channel.ok()) {
      return absl::Status(channel.status().code(),
                          absl::StrCat("shard ", i, " (", options.servers[i],
                                       "): ", channel.status().message()));
    }
    stubs->stubs.push_back(v1::ParameterServer::NewStub(*channel));
  }
  return std::unique_ptr<ShardAdmin>(
      new ShardAdmin(options.servers, std::move(stubs), timeout));
}

absl::Status ShardAdmin::Named(int shard, const absl::Status& status) const {
  return absl::Status(status.code(), absl::StrCat("shard ", shard, " (",
                                                  addresses_[shard],
                                                  "): ", status.message()));
}

std::vector<absl::StatusOr<v1::ShardStatusResponse>> ShardAdmin::ShardStatus() {
  return OnEveryShard(stubs_->stubs, timeout_, &Stub::ShardStatus,
                      v1::ShardStatusRequest(),
                      [this](int i, const absl::Status& s) { return Named(i, s); });
}

std::vector<absl::StatusOr<v1::CheckpointResponse>> ShardAdmin::Checkpoint() {
  return OnEveryShard(stubs_->stubs, timeout_, &Stub::Checkpoint,
                      v1::CheckpointRequest(),
                      [this](int i, const absl::Status& s) { return Named(i, s); });
}

std::vector<absl::StatusOr<v1::EvictWorkerResponse>> ShardAdmin::EvictWorker(
    uint32_t worker, bool drain) {
  v1::EvictWorkerRequest request;
  request.set_worker_id(worker);
  request.set_drain(drain);
  return OnEveryShard(stubs_->stubs, timeout_, &Stub::EvictWorker, request,
                      [this](int i, const absl::Status& s) { return Named(i, s); });
}

std::vector<absl::StatusOr<v1::RollbackResponse>> ShardAdmin::Rollback(uint64_t step) {
  v1::RollbackRequest request;
  request.set_step(step);
  return OnEveryShard(stubs_->stubs, timeout_, &Stub::Rollback, request,
                      [this](int i, const absl::Status& s) { return Named(i, s); });
}

}  // namespace taups

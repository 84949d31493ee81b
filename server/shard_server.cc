#include "server/shard_server.h"

#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/shard_map.h"
#include "server/grpc_service.h"
#include "server/parameter_store.h"
#include "spdlog/spdlog.h"

namespace taups {

absl::Status ShardServerOptions::Validate() const {
  if (num_shards == 0 || shard_index >= num_shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard_index ", shard_index, " must be below num_shards ", num_shards));
  }
  if (listen_address.empty()) {
    return absl::InvalidArgumentError("listen address is empty");
  }
  if (max_message_bytes < (1 << 20)) {
    return absl::InvalidArgumentError("max_message_bytes must be >= 1 MiB");
  }
  return absl::OkStatus();
}

struct ShardServer::State {
  ShardServerOptions options;
  uint64_t incarnation = 0;
  int port = 0;
  std::unique_ptr<ParameterStore> store;
  std::unique_ptr<ParameterServerService> service;
  std::unique_ptr<grpc::Server> server;
  absl::Notification stop_stats;
  std::thread stats_thread;
  std::once_flag shutdown_once;
  absl::Notification shut_down;
};

namespace {

uint64_t NewIncarnation() {
  const uint64_t now = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  const uint64_t mixed = MixKey(now ^ (static_cast<uint64_t>(getpid()) << 32));
  return mixed == 0 ? 1 : mixed;
}

void LogStats(const ParameterStore& store) {
  for (const TableInfo& t : store.ListTables()) {
    const StalenessStats& s = t.staleness;
    const double tau_mean =
        s.pushes == 0 ? 0.0 : static_cast<double>(s.tau_sum) / s.pushes;
    spdlog::info(
        "stats shard={} table={} kind={} version={} pushes={} rejected={} "
        "tau_mean={:.2f} tau_max={}{}",
        t.shard_index, t.config.name, TableKindName(t.config.kind), t.version,
        s.pushes, s.rejected, tau_mean, s.tau_max,
        t.config.kind == TableKind::kSparse
            ? absl::StrCat(" rows=", t.sparse_rows)
            : std::string());
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardServer>> ShardServer::Start(
    const ShardServerOptions& options) {
  absl::Status valid = options.Validate();
  if (!valid.ok()) return valid;
  auto state = std::make_unique<State>();
  state->options = options;
  state->incarnation = NewIncarnation();
  state->store =
      std::make_unique<ParameterStore>(options.shard_index, options.num_shards);
  state->service = std::make_unique<ParameterServerService>(
      state->store.get(), state->incarnation);

  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address,
                           grpc::InsecureServerCredentials(), &state->port);
  builder.RegisterService(state->service.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  state->server = builder.BuildAndStart();
  if (state->server == nullptr || state->port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address));
  }
  spdlog::info("shard {}/{} serving on port {} (incarnation {:016x})",
               options.shard_index, options.num_shards, state->port,
               state->incarnation);
  if (options.stats_interval > absl::ZeroDuration()) {
    State* s = state.get();
    state->stats_thread = std::thread([s] {
      while (!s->stop_stats.WaitForNotificationWithTimeout(
          s->options.stats_interval)) {
        LogStats(*s->store);
      }
    });
  }
  return std::unique_ptr<ShardServer>(new ShardServer(std::move(state)));
}

ShardServer::ShardServer(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

ShardServer::~ShardServer() {
  Shutdown();
  Wait();
}

int ShardServer::port() const { return state_->port; }
uint64_t ShardServer::incarnation() const { return state_->incarnation; }

void ShardServer::Wait() { state_->shut_down.WaitForNotification(); }

void ShardServer::Shutdown(absl::Duration grace) {
  std::call_once(state_->shutdown_once, [this, grace] {
    state_->server->Shutdown(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(absl::ToInt64Milliseconds(grace)));
    state_->server->Wait();
    state_->stop_stats.Notify();
    if (state_->stats_thread.joinable()) state_->stats_thread.join();
    LogStats(*state_->store);
    spdlog::info("shard {} stopped", state_->options.shard_index);
    state_->shut_down.Notify();
  });
}

}  // namespace taups

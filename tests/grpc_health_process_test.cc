// A real ps_server answers the standard gRPC health service
// (grpc.health.v1.Health) and server reflection (grpc.reflection.v1alpha) the
// way generic tools and Kubernetes gRPC probes ask them: SERVING once started
// (and after a checkpoint restore), NOT_SERVING to a watcher once SIGTERM
// begins the shutdown, and a reflection listing that names the tauPS service.
#include <signal.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "proto/grpc_credentials.h"
#include "taups/client.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
namespace reflection = grpc::reflection::v1alpha;

constexpr char kTauPsService[] = "taups.v1.ParameterServer";

std::shared_ptr<grpc::Channel> ChannelTo(const Shard& shard) {
  return *OpenChannel(shard.address(), ChannelSecurity{});
}

// Health/Check of `service`; the call's status and the answer.
grpc::Status Check(const Shard& shard, const std::string& service,
                   HealthCheckResponse* response) {
  auto stub = Health::NewStub(ChannelTo(shard));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  HealthCheckRequest request;
  request.set_service(service);
  return stub->Check(&context, request, response);
}

void RequireServing(const Shard& shard, const std::string& service) {
  HealthCheckResponse response;
  const grpc::Status status = Check(shard, service, &response);
  INFO("service '" << service << "': " << status.error_message());
  REQUIRE(status.ok());
  REQUIRE(response.status() == HealthCheckResponse::SERVING);
}

// One request on a reflection stream, its answer.
reflection::ServerReflectionResponse Reflect(
    const Shard& shard, const reflection::ServerReflectionRequest& request) {
  auto stub = reflection::ServerReflection::NewStub(ChannelTo(shard));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto stream = stub->ServerReflectionInfo(&context);
  REQUIRE(stream->Write(request));
  stream->WritesDone();
  reflection::ServerReflectionResponse response;
  REQUIRE(stream->Read(&response));
  while (stream->Read(nullptr)) {
  }
  REQUIRE(stream->Finish().ok());
  return response;
}

TEST_CASE("a shard reports SERVING for the server and the tauPS service and "
          "NOT_FOUND for a service it lacks") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 1);
  RequireServing(shards[0], "");
  RequireServing(shards[0], kTauPsService);
  HealthCheckResponse response;
  REQUIRE(Check(shards[0], "no.such.Service", &response).error_code() ==
          grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("a watcher sees NOT_SERVING when SIGTERM starts the shutdown") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 1);
  auto stub = Health::NewStub(ChannelTo(shards[0]));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  HealthCheckRequest request;
  request.set_service(kTauPsService);
  auto watch = stub->Watch(&context, request);
  HealthCheckResponse update;
  REQUIRE(watch->Read(&update));
  REQUIRE(update.status() == HealthCheckResponse::SERVING);

  REQUIRE(kill(shards[0].process->pid(), SIGTERM) == 0);
  REQUIRE(watch->Read(&update));
  CHECK(update.status() == HealthCheckResponse::NOT_SERVING);
  context.TryCancel();
  REQUIRE(shards[0].process->Wait(absl::Seconds(20)) == 0);
}

TEST_CASE("a shard restored from its checkpoint reports SERVING") {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  std::vector<Shard> first =
      StartShards(dir.path(), 1, {"--checkpoint_dir=" + checkpoints, "--start_empty"});
  {
    ClientOptions options;
    options.servers = {first[0].address()};
    options.worker_id = 0;
    auto client = Client::Connect(options);
    REQUIRE(client.ok());
    REQUIRE((*client)->CreateTable(TableConfig::Dense("w", 8)).ok());
  }
  REQUIRE(first[0].process->Stop() == 0);  // SIGTERM: a last checkpoint

  TempDir again;
  std::vector<Shard> second =
      StartShards(again.path(), 1, {"--checkpoint_dir=" + checkpoints});
  RequireServing(second[0], kTauPsService);
  INFO(second[0].process->Output());
  CHECK(second[0].process->Output().find("restored table 'w'") != std::string::npos);
}

TEST_CASE("reflection lists the tauPS, health and reflection services and "
          "serves the tauPS descriptor") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 1);
  reflection::ServerReflectionRequest list;
  list.set_list_services("");
  const reflection::ServerReflectionResponse listed = Reflect(shards[0], list);
  REQUIRE(listed.has_list_services_response());
  std::vector<std::string> names;
  for (const auto& s : listed.list_services_response().service()) {
    names.push_back(s.name());
  }
  INFO("services: " << names.size());
  for (const char* want : {kTauPsService, "grpc.health.v1.Health",
                           "grpc.reflection.v1alpha.ServerReflection"}) {
    CAPTURE(want);
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }

  reflection::ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol(kTauPsService);
  const reflection::ServerReflectionResponse file = Reflect(shards[0], symbol);
  REQUIRE(file.has_file_descriptor_response());
  REQUIRE(file.file_descriptor_response().file_descriptor_proto_size() >= 1);
  google::protobuf::FileDescriptorProto descriptor;
  REQUIRE(descriptor.ParseFromString(
      file.file_descriptor_response().file_descriptor_proto(0)));
  CHECK(descriptor.package() == "taups.v1");
  REQUIRE(descriptor.service_size() >= 1);
  CHECK(descriptor.service(0).name() == "ParameterServer");
}

}  // namespace
}  // namespace taups::testing

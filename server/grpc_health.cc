#include "server/grpc_health.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <mutex>

#include "ps.grpc.pb.h"

namespace taups {

void EnableHealthAndReflection() {
  static std::once_flag once;
  std::call_once(once, [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  });
}

const std::string& ParameterServiceName() {
  static const std::string* const name =
      new std::string(v1::ParameterServer::service_full_name());
  return *name;
}

void SetServingHealth(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return;  // EnableHealthAndReflection() not called
  health->SetServingStatus("", serving);
  health->SetServingStatus(ParameterServiceName(), serving);
}

}  // namespace taups

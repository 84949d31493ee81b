#include "common/grpc_logging.h"

#include <grpc/support/log.h>

#include "spdlog/spdlog.h"

namespace taups {
namespace {

void LogThroughSpdlog(gpr_log_func_args* args) {
  spdlog::level::level_enum level = spdlog::level::err;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) level = spdlog::level::debug;
  if (args->severity == GPR_LOG_SEVERITY_INFO) level = spdlog::level::info;
  spdlog::log(level, "grpc: {}", args->message);
}

}  // namespace

void RouteGrpcLogsToSpdlog() { gpr_set_log_function(LogThroughSpdlog); }

}  // namespace taups

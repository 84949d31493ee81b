#include "common/grpc_logging.h"

#include <grpc/support/log.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/log_rate_limiter.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

void LogThroughSpdlog(gpr_log_func_args* args) {
  spdlog::level::level_enum level = spdlog::level::err;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) level = spdlog::level::debug;
  if (args->severity == GPR_LOG_SEVERITY_INFO) level = spdlog::level::info;
  if (!spdlog::should_log(level)) return;
  // One line per place in gRPC's source, rate-limited: a peer that keeps
  // failing makes gRPC repeat itself.
  const std::string key = absl::StrCat(
      "grpc ", args->file == nullptr ? "" : args->file, ":", args->line);
  LogRateLimited(DefaultLogRateLimiter(), level, key, "grpc: {}",
                 args->message == nullptr ? "" : args->message);
}

}  // namespace

void RouteGrpcLogsToSpdlog() { gpr_set_log_function(LogThroughSpdlog); }

}  // namespace taups

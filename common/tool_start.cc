#include "common/tool_start.h"

#include <cstdio>
#include <cstdlib>

#include "common/command_line.h"
#include "common/grpc_logging.h"
#include "common/logging.h"

namespace taups {

std::vector<char*> StartToolOrExit(int argc, char** argv, const ToolStart& tool) {
  std::vector<char*> args =
      ParseCommandLineOrExit(argc, argv, tool.name, tool.usage, tool.ranges);
  LogOptions log;
  log.tag = tool.name;
  log.level = tool.log_level;
  if (tool.daemon_log) log = tool.daemon_log();
  absl::Status flags = SetUpLogging(log);
  RouteGrpcLogsToSpdlog();
  if (flags.ok()) flags = CheckNumericFlags(tool.ranges);
  if (flags.ok()) return args;
  if (!tool.daemon_log) std::exit(ToolFailure(tool.name, flags.message(), kExitBadFlags));
  LogFailure(flags.message());
  std::exit(kExitBadFlags);
}

int ToolFailure(absl::string_view name, absl::string_view message,
                int exit_code) {
  std::fprintf(stderr, "%.*s: %.*s\n", static_cast<int>(name.size()),
               name.data(), static_cast<int>(message.size()), message.data());
  return exit_code;
}

}  // namespace taups

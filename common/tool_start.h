// The start of a tauPS program (ps_admin, ps_health_probe, and the daemons
// ps_server and ps_worker): the steps every such main takes before its own
// work, in one place so each only names itself, its usage and its numeric
// flags.
//
// StartToolOrExit, in order:
//   1. ParseCommandLineOrExit (command_line.h): --help lists the tool's own
//      flags (exactly those linked into it), --version, absl's parse;
//   2. SetUpLogging with the tool's name as the tag at `log_level` (tools
//      print results on stdout; log lines go to stderr);
//   3. gRPC's own log lines through spdlog (grpc_logging.h);
//   4. CheckNumericFlags(ranges).
// A refusal in 2 or 4 prints "<name>: <why>" on stderr (a daemon: logs it,
// see ToolStart::daemon_log) and exits kExitBadFlags (2). Call once at the
// start of main, before any other thread exists.
#ifndef TAUPS_COMMON_TOOL_START_H_
#define TAUPS_COMMON_TOOL_START_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/flag_checks.h"
#include "common/logging.h"

namespace taups {

struct ToolStart {
  std::string name;                // "ps_admin": log tag and stderr prefix
  std::string usage;               // first part of --help
  std::vector<FlagRange> ranges;   // the tool's numeric flags
  std::string log_level = "warn";  // see ParseLogLevel (logging.h)
  // Daemons (ps_server, ps_worker), whose stderr is their log: when set,
  // step 2 uses what this answers once the flags are parsed (a tag naming
  // the shard or worker, the --log_level flag) instead of `name` and
  // `log_level`, and a refusal is logged as an error line (LogFailure)
  // rather than printed as "<name>: <why>".
  std::function<LogOptions()> daemon_log = nullptr;
};

// Steps 1-4 above. Returns the positional arguments, argv[0] first.
std::vector<char*> StartToolOrExit(int argc, char** argv, const ToolStart& tool);

// Prints "<name>: <message>" on stderr and returns `exit_code`, for
// `return ToolFailure(...)` from main or the tool's run function.
int ToolFailure(absl::string_view name, absl::string_view message,
                int exit_code);

}  // namespace taups

#endif  // TAUPS_COMMON_TOOL_START_H_

// Command-line handling shared by ps_server, ps_worker and ps_admin:
//
//   --help, --helpfull, --helpshort, -h   print the usage and every flag of
//                                          the program by name (no source
//                                          paths), then exit 0
//   --version                              print VersionLine(), exit 0
//
// then absl::ParseCommandLine for everything else (an unknown or unparsable
// flag still exits 1 with absl's message). Flags after a bare "--" are left
// alone.
//
// Call once at the start of main, before any other thread exists.
#ifndef TAUPS_COMMON_COMMAND_LINE_H_
#define TAUPS_COMMON_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/flag_checks.h"

namespace taups {

// Exit status of a program whose flags were refused after parsing (a value
// out of range, an unknown log level, ...): distinct from 1 (a runtime
// failure), so a supervisor can tell a configuration error apart (systemd:
// RestartPreventExitStatus=2).
inline constexpr int kExitBadFlags = 2;

// Handles help and version as above, then parses. Returns the positional
// arguments, argv[0] first. `ranges` (the program's CheckNumericFlags list)
// only adds each flag's allowed values to --help.
std::vector<char*> ParseCommandLineOrExit(
    int argc, char** argv, absl::string_view program, absl::string_view usage,
    absl::Span<const FlagRange> ranges = {});

// The text --help prints: `usage`, then each flag defined outside Abseil,
// sorted by name, with its default, its range when `ranges` has one, and
// its help, wrapped to 80 columns.
std::string FlagHelpText(absl::string_view usage,
                         absl::Span<const FlagRange> ranges = {});

// True when argv (before a bare "--") asks for help.
bool WantsHelp(int argc, char** argv);

}  // namespace taups

#endif  // TAUPS_COMMON_COMMAND_LINE_H_

// Abseil's usage configuration for tauPS programs. Abseil's --help lists
// only flags defined in a file named after the program; tauPS mains are
// <name>_main.cc and share flag files, so every flag defined outside Abseil
// itself is shown, and under its file's base name rather than the path it
// was compiled from.
//
// ps_server, ps_worker and ps_admin go further through
// common/command_line.h (their own --help listing, --version); the
// benchmarks call SetUsage() directly.
#ifndef TAUPS_COMMON_USAGE_H_
#define TAUPS_COMMON_USAGE_H_

#include <string>

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace taups {

inline bool DefinedByAbseil(absl::string_view file) {
  return absl::StrContains(file, "absl/");
}

// "/src/taups/server/server_main.cc" -> "server_main.cc"; Abseil's own files
// keep their "absl/..." tail so DefinedByAbseil() still tells them apart.
inline std::string ShortFileName(absl::string_view path) {
  const size_t absl_at = path.rfind("absl/");
  if (absl_at != absl::string_view::npos) {
    return std::string(path.substr(absl_at));
  }
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path
                                                      : path.substr(slash + 1));
}

inline void SetUsage(absl::string_view usage) {
  absl::SetProgramUsageMessage(usage);
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view file) {
    return !DefinedByAbseil(file);
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  config.normalize_filename = ShortFileName;
  absl::SetFlagsUsageConfig(config);
}

}  // namespace taups

#endif  // TAUPS_COMMON_USAGE_H_

// --help for tauPS programs. Abseil's --help lists only flags defined in a
// file named after the program; tauPS mains are <name>_main.cc and share
// flag files, so every flag defined outside Abseil itself is shown.
#ifndef TAUPS_COMMON_USAGE_H_
#define TAUPS_COMMON_USAGE_H_

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace taups {

inline void SetUsage(absl::string_view usage) {
  absl::SetProgramUsageMessage(usage);
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view file) {
    return !absl::StrContains(file, "absl/");
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  absl::SetFlagsUsageConfig(config);
}

}  // namespace taups

#endif  // TAUPS_COMMON_USAGE_H_

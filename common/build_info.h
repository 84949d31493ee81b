// What was built: the project version (CMake's project(VERSION)), the git
// commit of the source tree at build time ("unknown" without git; "-dirty"
// appended when tracked files had uncommitted changes) and the build type.
// `ps_server --version` and friends print VersionLine(); metrics may export
// the fields as build info.
//
// Immutable after static initialisation; thread-safe.
#ifndef TAUPS_COMMON_BUILD_INFO_H_
#define TAUPS_COMMON_BUILD_INFO_H_

#include <string>

#include "absl/strings/string_view.h"

namespace taups {

struct BuildInfo {
  absl::string_view version;     // e.g. "0.1.0"
  absl::string_view commit;      // e.g. "45eaedc1a2b3", "45eaedc1a2b3-dirty"
  absl::string_view build_type;  // e.g. "RelWithDebInfo"
};

const BuildInfo& GetBuildInfo();

// "<program> (tauPS) 0.1.0, commit 45eaedc1a2b3, RelWithDebInfo build"
std::string VersionLine(absl::string_view program);

}  // namespace taups

#endif  // TAUPS_COMMON_BUILD_INFO_H_

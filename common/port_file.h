// Port files: how a process started on port 0 tells scripts and tests the
// port it got (ps_server --port_file / --metrics_port_file, ps_worker
// --metrics_port_file).
//
// Thread-compatible (writes only the named file and its ".tmp" sibling).
#ifndef TAUPS_COMMON_PORT_FILE_H_
#define TAUPS_COMMON_PORT_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace taups {

// Writes "<port>\n" to `path` atomically (a sibling temporary renamed over
// it), so a reader never sees a half-written number. INTERNAL naming `flag`
// and the path when the file cannot be written.
absl::Status WritePortFile(absl::string_view flag, const std::string& path,
                           int port);

}  // namespace taups

#endif  // TAUPS_COMMON_PORT_FILE_H_

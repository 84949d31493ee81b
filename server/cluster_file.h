// Cluster files: the shard addresses of one tauPS cluster, one "host:port"
// per line in shard order. Blank lines and lines starting with '#' are
// ignored. ps_server and ps_worker both read them.
#ifndef TAUPS_SERVER_CLUSTER_FILE_H_
#define TAUPS_SERVER_CLUSTER_FILE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"

namespace taups {

// Parses cluster-file text. INVALID_ARGUMENT for a line that is not
// host:port or for a file with no shards.
absl::StatusOr<std::vector<std::string>> ParseClusterText(absl::string_view text);
// Reads and parses a file. NOT_FOUND if it cannot be opened.
absl::StatusOr<std::vector<std::string>> ReadClusterFile(const std::string& path);

// The port of "host:port", or INVALID_ARGUMENT.
absl::StatusOr<int> PortOf(absl::string_view address);

}  // namespace taups

#endif  // TAUPS_SERVER_CLUSTER_FILE_H_

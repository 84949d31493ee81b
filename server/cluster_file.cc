#include "server/cluster_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/string_view.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"

namespace taups {

absl::StatusOr<int> PortOf(absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", address, "' is not host:port"));
  }
  return port;
}

absl::StatusOr<std::vector<std::string>> ParseClusterText(
    absl::string_view text) {
  std::vector<std::string> shards;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    absl::StatusOr<int> port = PortOf(line);
    if (!port.ok() || *port == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster file line ", line_number, ": '", line,
          "' is not host:port with a non-zero port"));
    }
    shards.emplace_back(line);
  }
  if (shards.empty()) {
    return absl::InvalidArgumentError("cluster file lists no shards");
  }
  return shards;
}

absl::StatusOr<std::vector<std::string>> ReadClusterFile(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open cluster file ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseClusterText(text.str());
}

}  // namespace taups

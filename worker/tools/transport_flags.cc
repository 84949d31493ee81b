#include "worker/tools/transport_flags.h"

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/transport_security.h"

ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA bundle the shards' certificates are checked against: talk "
          "TLS to them.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM client certificate for mutual TLS (needs --tls_key, --tls_ca).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name the shards' certificates carry, when not the host dialled.");
ABSL_FLAG(std::string, auth_token_file, "",
          "File holding this principal's bearer token (mode 600).");

namespace taups {
namespace {

absl::Status ReadToken(const std::string& path, std::string* token) {
  if (absl::Status s = CheckReadableFile("--auth_token_file", path); !s.ok()) {
    return s;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--auth_token_file=", path,
        " may be read by group or others; chmod 600 it"));
  }
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const absl::string_view stripped = absl::StripAsciiWhitespace(line);
  if (stripped.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_token_file=", path, " holds no token"));
  }
  *token = std::string(stripped);
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyTransportFlags(ClientOptions& options) {
  const std::string ca = absl::GetFlag(FLAGS_tls_ca);
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_tls_key);
  const std::string name = absl::GetFlag(FLAGS_tls_server_name);
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{
                                       "--tls_ca", ca},
                                   {"--tls_cert", cert},
                                   {"--tls_key", key}}) {
    if (path.empty()) continue;
    if (absl::Status s = CheckReadableFile(flag, path); !s.ok()) return s;
  }
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if ((!cert.empty() || !name.empty()) && ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_server_name need --tls_ca");
  }
  std::string token;
  const std::string token_file = absl::GetFlag(FLAGS_auth_token_file);
  if (!token_file.empty()) {
    if (absl::Status s = ReadToken(token_file, &token); !s.ok()) return s;
  }
  options.tls_ca_file = ca;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  options.tls_server_name = name;
  options.auth_token = std::move(token);
  return absl::OkStatus();
}

}  // namespace taups

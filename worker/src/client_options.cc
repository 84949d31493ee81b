#include "absl/strings/str_cat.h"
#include "taups/client.h"
#include "worker/src/client_security.h"

namespace taups {

ChannelSecurity ChannelSecurityOf(const ClientOptions& options) {
  return ChannelSecurity{options.tls_ca_file, options.tls_cert_file,
                         options.tls_key_file, options.tls_server_name,
                         options.auth_token};
}

absl::Status ClientOptions::Validate() const {
  if (servers.empty()) {
    return absl::InvalidArgumentError("ClientOptions.servers is empty");
  }
  for (const std::string& server : servers) {
    if (server.empty() || server.find(':') == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("server address '", server, "' is not host:port"));
    }
  }
  if (call_timeout <= absl::ZeroDuration() ||
      connect_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeouts must be positive");
  }
  if (max_attempts < 1) {
    return absl::InvalidArgumentError("max_attempts must be >= 1");
  }
  if (initial_backoff <= absl::ZeroDuration() || max_backoff < initial_backoff) {
    return absl::InvalidArgumentError(
        "need 0 < initial_backoff <= max_backoff");
  }
  if (slice_bytes < 4096) {
    return absl::InvalidArgumentError("slice_bytes must be >= 4096");
  }
  if (channels_per_shard < 1 || channels_per_shard > 64) {
    return absl::InvalidArgumentError("channels_per_shard must be in 1..64");
  }
  const ChannelSecurity security = ChannelSecurityOf(*this);
  if (absl::Status s = security.Validate("ClientOptions.tls_"); !s.ok()) return s;
  if (!security.tls() && !auth_token.empty()) {
    for (const std::string& server : servers) {
      if (!IsLoopbackHost(HostOf(server))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ClientOptions.auth_token without tls_ca_file is only sent to "
            "loopback shards, not ", server));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace taups

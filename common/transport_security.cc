#include "common/transport_security.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace taups {

absl::Status CheckReadableFile(absl::string_view setting,
                               const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        setting, "=", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, "=", path, ": not a regular file"));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        setting, "=", path, ": cannot be read: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckIfSet(absl::string_view setting, const std::string& path) {
  return path.empty() ? absl::OkStatus() : CheckReadableFile(setting, path);
}

absl::Status NeedsOther(absl::string_view setting, absl::string_view needs) {
  return absl::InvalidArgumentError(
      absl::StrCat(setting, " is set but ", needs, " is not"));
}

}  // namespace

absl::Status ServerSecurity::Validate() const {
  if (cert_file.empty() != key_file.empty()) {
    return cert_file.empty() ? NeedsOther("tls key", "the tls certificate")
                             : NeedsOther("tls certificate", "the tls key");
  }
  if (!client_ca_file.empty() && cert_file.empty()) {
    return NeedsOther("tls client CA", "the tls certificate");
  }
  if (require_client_cert && client_ca_file.empty()) {
    return NeedsOther("require client certificate", "the tls client CA");
  }
  if (local && tls()) {
    return absl::InvalidArgumentError(
        "local credentials and TLS exclude each other");
  }
  for (const auto& [setting, path] :
       {std::pair<const char*, const std::string&>{"tls certificate", cert_file},
        {"tls key", key_file},
        {"tls client CA", client_ca_file}}) {
    if (absl::Status s = CheckIfSet(setting, path); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ChannelSecurity::Validate(absl::string_view prefix) const {
  const std::string ca = absl::StrCat(prefix, "ca_file");
  const std::string cert = absl::StrCat(prefix, "cert_file");
  const std::string key = absl::StrCat(prefix, "key_file");
  if (cert_file.empty() != key_file.empty()) {
    return cert_file.empty() ? NeedsOther(key, cert) : NeedsOther(cert, key);
  }
  if (!cert_file.empty() && ca_file.empty()) return NeedsOther(cert, ca);
  if (!server_name.empty() && ca_file.empty()) {
    return NeedsOther(absl::StrCat(prefix, "server_name"), ca);
  }
  for (const auto& [setting, path] :
       {std::pair<const std::string&, const std::string&>{ca, ca_file},
        {cert, cert_file},
        {key, key_file}}) {
    if (absl::Status s = CheckIfSet(setting, path); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::string_view HostOf(absl::string_view address) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    return close == absl::string_view::npos ? address
                                            : address.substr(1, close - 1);
  }
  const size_t colon = address.rfind(':');
  // More than one colon without brackets: a bare IPv6 address.
  if (colon == absl::string_view::npos ||
      address.find(':') != colon) {
    return address;
  }
  return address.substr(0, colon);
}

bool IsLoopbackHost(absl::string_view host) {
  host = absl::StripPrefix(absl::StripSuffix(host, "]"), "[");
  if (host == "localhost" || host == "::1") return true;
  if (!absl::StartsWith(host, "127.")) return false;
  // Four dotted decimal parts, the first 127 (counted already, with the
  // part after its dot).
  int parts = 2;
  for (char c : host.substr(4)) {
    if (c == '.') {
      ++parts;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return parts == 4;
}

}  // namespace taups

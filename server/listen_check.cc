#include "server/listen_check.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace taups {
namespace {

// errno of binding a TCP socket to `host`:`port`; 0 when it binds, -1 when
// the host does not resolve.
int ProbeBind(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints,
                  &found) != 0) {
    return -1;
  }
  int error = 0;
  for (addrinfo* a = found; a != nullptr && error == 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      break;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0) error = errno;
    close(fd);
  }
  freeaddrinfo(found);
  return error;
}

}  // namespace

absl::Status ExplainListenFailure(absl::string_view address) {
  const std::string generic = absl::StrCat("cannot listen on ", address);
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return absl::UnavailableError(generic);
  std::string host(address.substr(0, colon));
  const std::string port(address.substr(colon + 1));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const int error = ProbeBind(host, port);
  switch (error) {
    case 0:
      return absl::UnavailableError(generic);
    case -1:
      return absl::UnavailableError(
          absl::StrCat(generic, ": host '", host, "' does not resolve"));
    case EADDRINUSE:
      return absl::UnavailableError(absl::StrCat(
          generic, ": port ", port, " is already in use (another ps_server, "
          "or another program, listens there)"));
    case EACCES:
      return absl::UnavailableError(absl::StrCat(
          generic, ": permission denied (ports below 1024 need "
          "CAP_NET_BIND_SERVICE)"));
    case EADDRNOTAVAIL:
      return absl::UnavailableError(absl::StrCat(
          generic, ": '", host, "' is not an address of this host"));
    default:
      return absl::UnavailableError(
          absl::StrCat(generic, ": ", std::strerror(error)));
  }
}

}  // namespace taups

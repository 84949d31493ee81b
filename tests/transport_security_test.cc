// The plain transport settings (no network): which hosts count as loopback,
// the host of an address, and refusals of incomplete TLS settings.
#include <catch2/catch.hpp>

#include <fstream>

#include "absl/strings/match.h"
#include "common/transport_security.h"
#include "tests/process_harness.h"

namespace taups {
namespace {

TEST_CASE("loopback hosts") {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"}) {
    INFO(host);
    CHECK(IsLoopbackHost(host));
  }
  for (const char* host : {"0.0.0.0", "10.0.0.1", "127.0.0", "127.0.0.1.5",
                           "127.a.0.1", "128.0.0.1", "::", "[::]", "",
                           "localhost.example.com"}) {
    INFO(host);
    CHECK(!IsLoopbackHost(host));
  }
  CHECK(HostOf("127.0.0.1:7000") == "127.0.0.1");
  CHECK(HostOf("[::1]:7000") == "::1");
  CHECK(HostOf("shard0.example:7000") == "shard0.example");
  CHECK(HostOf("::1") == "::1");
}

TEST_CASE("incomplete TLS settings are refused naming the setting") {
  testing::TempDir dir;
  const std::string pem = dir.path() + "/a.pem";
  std::ofstream(pem) << "x";
  ServerSecurity server;
  CHECK(server.Validate().ok());
  server.cert_file = pem;
  CHECK(absl::StrContains(server.Validate().message(), "tls key"));
  server.key_file = pem;
  CHECK(server.Validate().ok());
  server.require_client_cert = true;
  CHECK(absl::StrContains(server.Validate().message(), "tls client CA"));
  server.client_ca_file = dir.path() + "/none.pem";
  const absl::Status missing = server.Validate();
  CHECK(absl::IsInvalidArgument(missing));
  CHECK(absl::StrContains(missing.message(), "none.pem: No such file"));

  ChannelSecurity channel;
  CHECK(channel.Validate("ClientOptions.tls_").ok());
  channel.cert_file = pem;
  channel.key_file = pem;
  CHECK(absl::StrContains(channel.Validate("ClientOptions.tls_").message(),
                          "ClientOptions.tls_cert_file is set but "
                          "ClientOptions.tls_ca_file is not"));
  channel.ca_file = dir.path();
  CHECK(absl::StrContains(channel.Validate("o.").message(),
                          "o.ca_file=" + dir.path() + ": not a regular file"));
  channel.ca_file = pem;
  CHECK(channel.Validate("o.").ok());
}

}  // namespace
}  // namespace taups

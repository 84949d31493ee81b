// ps_health_probe against real ps_server processes on 127.0.0.1: exit 0
// and "SERVING" from a serving shard (plaintext, and TLS with bearer tokens
// as deploy/k8s runs it), 1 for a service the shard does not have, 3 while
// nothing listens (a shard down, or still restoring its checkpoint before
// its port opens) and when the TLS handshake is refused, 2 for bad flags.
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "taups/client.h"
#include "tests/process_harness.h"
#include "tests/test_pki.h"

namespace taups::testing {
namespace {

struct ProbeRun {
  int exit_code = -1;
  std::string output;
};

ProbeRun Probe(const TempDir& dir, const std::vector<std::string>& args) {
  static int runs = 0;
  const std::string log = absl::StrCat(dir.path(), "/probe", runs++, ".log");
  Process probe(BinDir() + "/ps_health_probe", args, log);
  const std::optional<int> code = probe.Wait(absl::Seconds(20));
  REQUIRE(code.has_value());
  return {*code, probe.Output()};
}

// A port nothing listens on now (bound once by the kernel's choice, closed).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST_CASE("the probe exits 0 only for a serving shard") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 1);
  const std::string server = "--server=" + shards[0].address();
  ProbeRun up = Probe(dir, {server});
  INFO(up.output);
  CHECK(up.exit_code == 0);
  CHECK(up.output.find(shards[0].address() + ": SERVING") != std::string::npos);
  CHECK(Probe(dir, {server, "--service=taups.v1.ParameterServer"}).exit_code == 0);
  ProbeRun unknown = Probe(dir, {server, "--service=no.such.Service"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.output.find("SERVICE_UNKNOWN") != std::string::npos);
  CHECK(Probe(dir, {}).exit_code == 2);
  CHECK(Probe(dir, {server, "--timeout_s=0"}).exit_code == 2);
  REQUIRE(shards[0].process->Stop() == 0);
  ProbeRun down = Probe(dir, {server, "--timeout_s=2"});
  INFO(down.output);
  CHECK(down.exit_code == 3);
}

TEST_CASE("the probe fails while a shard restores and passes once it serves") {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  std::vector<Shard> first = StartShards(
      dir.path(), 1, {"--checkpoint_dir=" + checkpoints, "--start_empty"});
  {
    ClientOptions options;
    options.servers = {first[0].address()};
    options.worker_id = 0;
    auto client = Client::Connect(options);
    REQUIRE(client.ok());
    // 16 Mi floats: the restore reads 64 MiB before the port opens.
    REQUIRE((*client)->CreateTable(TableConfig::Dense("w", uint64_t{1} << 24)).ok());
  }
  REQUIRE(first[0].process->Stop(absl::Seconds(30)) == 0);  // a last checkpoint

  const int port = FreePort();
  const std::string server = absl::StrCat("--server=127.0.0.1:", port);
  Process restarted(BinDir() + "/ps_server",
                    {absl::StrCat("--port=", port), "--checkpoint_dir=" + checkpoints},
                    dir.path() + "/restarted.log");
  std::vector<int> codes;
  const absl::Time deadline = absl::Now() + absl::Seconds(40);
  while (codes.empty() || codes.back() != 0) {
    REQUIRE(absl::Now() < deadline);
    REQUIRE(!restarted.Wait(absl::ZeroDuration()).has_value());
    codes.push_back(Probe(dir, {server, "--timeout_s=1"}).exit_code);
  }
  INFO(restarted.Output());
  // The first probe ran before the port opened: not ready is not 0.
  CHECK(codes.front() == 3);
  for (size_t i = 0; i + 1 < codes.size(); ++i) CHECK(codes[i] != 0);
  CHECK(restarted.Output().find("restored table 'w'") != std::string::npos);
  CHECK(restarted.Stop(absl::Seconds(30)) == 0);
}

TEST_CASE("the probe speaks TLS with tokens as the Kubernetes probes do", "[openssl]") {
  TempDir dir;
  REQUIRE_TEST_PKI(dir, pki);
  const std::string auth = dir.path() + "/auth.txt";
  {
    std::ofstream(auth) << "token probe-secret-0123456789 ops admin\n"
                        << "token worker-secret-0123456789 trainers worker 0\n";
    REQUIRE(::chmod(auth.c_str(), 0600) == 0);
  }
  std::vector<Shard> shards = StartShards(
      dir.path(), 1,
      {"--tls_cert=" + pki.server_cert, "--tls_key=" + pki.server_key,
       "--auth_file=" + auth});
  const std::string server = "--server=" + shards[0].address();
  const std::string name = std::string("--tls_server_name=") + kTestServerName;
  ProbeRun tls = Probe(dir, {server, "--tls_ca=" + pki.ca, name});
  INFO(tls.output);
  CHECK(tls.exit_code == 0);
  CHECK(tls.output.find("SERVING") != std::string::npos);
  // With a token too, as ps_worker would send it.
  const std::string token = dir.path() + "/probe.token";
  {
    std::ofstream(token) << "probe-secret-0123456789\n";
    REQUIRE(::chmod(token.c_str(), 0600) == 0);
  }
  CHECK(Probe(dir, {server, "--tls_ca=" + pki.ca, name, "--auth_token_file=" + token})
            .exit_code == 0);
  // Plaintext to a TLS port, and a CA that did not sign the shard: refused.
  CHECK(Probe(dir, {server, "--timeout_s=2"}).exit_code == 3);
  CHECK(Probe(dir, {server, "--tls_ca=" + pki.other_ca, name, "--timeout_s=2"})
            .exit_code == 3);
  // The certificate's name is checked.
  CHECK(Probe(dir, {server, "--tls_ca=" + pki.ca, "--tls_server_name=other.test",
                    "--timeout_s=2"})
            .exit_code == 3);
  REQUIRE(shards[0].process->Stop() == 0);
}

}  // namespace
}  // namespace taups::testing

// Transport security and roles against real ps_server processes on
// 127.0.0.1, with a CA and certificates the openssl CLI makes for the test:
// TLS and mutual TLS are enforced, bearer tokens and certificate names map
// to roles, a spoofed worker id changes nothing, SIGHUP rereads the auth
// file, no secret reaches the log, and the flags refuse bad settings.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_lifetime.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "taups/client.h"
#include "tests/process_harness.h"
#include "tests/test_pki.h"
#include "tests/test_skip.h"

namespace taups::testing {
namespace {

#define REQUIRE_PKI(dir, pki) REQUIRE_TEST_PKI(dir, pki)

std::unique_ptr<v1::ParameterServer::Stub> StubTo(const Shard& shard,
                                                  const ChannelSecurity& security) {
  KeepCallbackQueueAlive();
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      OpenChannel(shard.address(), security);
  REQUIRE(channel.ok());
  return v1::ParameterServer::NewStub(*channel);
}

void Deadline(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

grpc::StatusCode StatsCode(v1::ParameterServer::Stub& stub,
                           v1::StatsResponse* out = nullptr) {
  grpc::ClientContext context;
  Deadline(context);
  v1::StatsRequest request;
  v1::StatsResponse response;
  grpc::Status status = stub.Stats(&context, request, &response);
  if (out != nullptr) *out = response;
  return status.error_code();
}

grpc::Status CreateDense(v1::ParameterServer::Stub& stub, const std::string& name) {
  grpc::ClientContext context;
  Deadline(context);
  v1::CreateTableRequest request;
  request.mutable_config()->set_name(name);
  request.mutable_config()->set_kind(v1::TABLE_KIND_DENSE);
  request.mutable_config()->set_dense_size(4);
  v1::CreateTableResponse response;
  return stub.CreateTable(&context, request, &response);
}

grpc::Status RegisterAs(v1::ParameterServer::Stub& stub, uint32_t worker) {
  grpc::ClientContext context;
  Deadline(context);
  v1::RegisterRequest request;
  request.set_worker_id(worker);
  request.set_worker_incarnation(7);
  v1::RegisterResponse response;
  return stub.Register(&context, request, &response);
}

grpc::Status PushAs(v1::ParameterServer::Stub& stub, uint32_t worker,
                    v1::PushResponse* response) {
  grpc::ClientContext context;
  Deadline(context);
  v1::PushDenseRequest request;
  request.set_table("w");
  request.mutable_origin()->set_worker_id(worker);
  request.mutable_origin()->set_worker_incarnation(7);
  request.mutable_origin()->set_seq(1);
  const float gradient[4] = {1, 1, 1, 1};
  request.set_gradient(reinterpret_cast<const char*>(gradient), sizeof(gradient));
  return stub.PushDense(&context, request, response);
}

grpc::Status PullAs(v1::ParameterServer::Stub& stub, uint32_t worker) {
  grpc::ClientContext context;
  Deadline(context);
  v1::PullDenseRequest request;
  request.set_table("w");
  request.set_count(4);
  request.set_worker_id(worker);
  v1::PullDenseResponse response;
  return stub.PullDense(&context, request, &response);
}

void WriteAuthFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  REQUIRE(::chmod(tmp.c_str(), 0600) == 0);
  REQUIRE(std::rename(tmp.c_str(), path.c_str()) == 0);
}

constexpr char kWorkerToken[] = "worker-secret-0123456789";
constexpr char kAdminToken[] = "admin-secret-9876543210";
constexpr char kReaderToken[] = "reader-secret-5555555555";

std::string AuthFileText() {
  return absl::StrCat("token ", kWorkerToken, " trainers worker 0-1\n",
                      "token ", kAdminToken, " ops admin\n",
                      "token ", kReaderToken, " dashboard reader\n",
                      "cert worker-cert.taups.test certified worker 2\n");
}

ChannelSecurity Tls(const TestPki& pki, std::string token = "") {
  ChannelSecurity security;
  security.ca_file = pki.ca;
  security.bearer_token = std::move(token);
  return security;
}

TEST_CASE("TLS: a client with the CA is served, one without it is not", "[openssl]") {
  TempDir dir;
  REQUIRE_PKI(dir, pki);
  std::vector<Shard> shards = StartShards(
      dir.path(), 1, {"--tls_cert=" + pki.server_cert, "--tls_key=" + pki.server_key});
  CHECK(StatsCode(*StubTo(shards[0], Tls(pki))) == grpc::StatusCode::OK);
  ChannelSecurity named = Tls(pki);
  named.server_name = "shard.taups.test";
  CHECK(StatsCode(*StubTo(shards[0], named)) == grpc::StatusCode::OK);
  CHECK(StatsCode(*StubTo(shards[0], ChannelSecurity{})) ==
        grpc::StatusCode::UNAVAILABLE);
  ChannelSecurity stranger;
  stranger.ca_file = pki.other_ca;
  CHECK(StatsCode(*StubTo(shards[0], stranger)) == grpc::StatusCode::UNAVAILABLE);

  // The client library and ps_admin over the same TLS.
  ClientOptions options;
  options.servers = {shards[0].address()};
  options.register_worker = false;
  options.tls_ca_file = pki.ca;
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  REQUIRE((*client)->CreateTable(TableConfig::Dense("w", 16)).ok());
  std::vector<float> values(16);
  CHECK((*client)->PullDense("w", absl::MakeSpan(values)).ok());
  options.tls_ca_file.clear();
  options.connect_timeout = absl::Seconds(2);
  CHECK(absl::IsUnavailable(Client::Connect(options).status()));
  const std::string stats =
      RunAdmin(dir, shards, {"--tls_ca=" + pki.ca, "--table=w", "stats"});
  CHECK(absl::StrContains(stats, "shard 0 table w: version 0"));
  CHECK(absl::StrContains(shards[0].process->Output(), "transport: TLS"));
}

TEST_CASE("mutual TLS: a client without a certificate is refused", "[openssl]") {
  TempDir dir;
  REQUIRE_PKI(dir, pki);
  std::vector<Shard> shards = StartShards(
      dir.path(), 1,
      {"--tls_cert=" + pki.server_cert, "--tls_key=" + pki.server_key,
       "--tls_ca=" + pki.ca, "--tls_require_client_cert"});
  CHECK(StatsCode(*StubTo(shards[0], Tls(pki))) == grpc::StatusCode::UNAVAILABLE);
  ChannelSecurity mutual = Tls(pki);
  mutual.cert_file = pki.client_cert;
  mutual.key_file = pki.client_key;
  CHECK(StatsCode(*StubTo(shards[0], mutual)) == grpc::StatusCode::OK);
}

TEST_CASE("tokens and certificates map to roles; a spoofed worker id changes nothing", "[openssl]") {
  TempDir dir;
  REQUIRE_PKI(dir, pki);
  const std::string auth = dir.path() + "/auth";
  WriteAuthFile(auth, AuthFileText());
  std::vector<Shard> shards = StartShards(
      dir.path(), 1,
      {"--tls_cert=" + pki.server_cert, "--tls_key=" + pki.server_key,
       "--tls_ca=" + pki.ca, "--auth_file=" + auth});
  auto anonymous = StubTo(shards[0], Tls(pki));
  auto unknown = StubTo(shards[0], Tls(pki, "not-a-token-of-this-shard"));
  auto worker = StubTo(shards[0], Tls(pki, kWorkerToken));
  auto admin = StubTo(shards[0], Tls(pki, kAdminToken));
  auto reader = StubTo(shards[0], Tls(pki, kReaderToken));
  ChannelSecurity cert = Tls(pki);
  cert.cert_file = pki.client_cert;
  cert.key_file = pki.client_key;
  auto certified = StubTo(shards[0], cert);

  CHECK(StatsCode(*anonymous) == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(StatsCode(*unknown) == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(CreateDense(*anonymous, "w").error_code() ==
        grpc::StatusCode::UNAUTHENTICATED);
  CHECK(StatsCode(*reader) == grpc::StatusCode::OK);
  CHECK(CreateDense(*reader, "w").error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  CHECK(CreateDense(*worker, "w").error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  REQUIRE(CreateDense(*admin, "w").ok());
  CHECK(RegisterAs(*admin, 0).error_code() == grpc::StatusCode::PERMISSION_DENIED);

  // Worker principal "trainers" owns ids 0-1.
  REQUIRE(RegisterAs(*worker, 0).ok());
  const grpc::Status spoofed_register = RegisterAs(*worker, 5);
  CHECK(spoofed_register.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(absl::StrContains(spoofed_register.error_message(),
                          "'trainers' acts as workers 0-1, not worker 5"));
  v1::PushResponse pushed;
  CHECK(PushAs(*worker, 5, &pushed).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  CHECK(PushAs(*worker, 2, &pushed).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);  // the certificate's id
  CHECK(PullAs(*worker, 5).error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(PullAs(*reader, 0).error_code() == grpc::StatusCode::PERMISSION_DENIED);
  v1::StatsResponse stats;
  REQUIRE(StatsCode(*admin, &stats) == grpc::StatusCode::OK);
  REQUIRE(stats.tables_size() == 1);
  CHECK(stats.tables(0).info().version() == 0);  // refused pushes applied nothing
  CHECK(stats.tables(0).pushes() == 0);
  CHECK(stats.live_workers() == 1);  // only worker 0 registered

  // A certificate the auth file names is a principal of its own (worker 2).
  CHECK(PushAs(*certified, 0, &pushed).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  REQUIRE(PushAs(*certified, 2, &pushed).ok());
  CHECK(pushed.accepted());
  REQUIRE(PushAs(*worker, 0, &pushed).ok());
  CHECK(pushed.accepted());
  REQUIRE(StatsCode(*reader, &stats) == grpc::StatusCode::OK);
  CHECK(stats.tables(0).info().version() == 2);

  // The client library as worker 1 of "trainers", and as a worker id the
  // token does not own (its registration at Connect is refused).
  ClientOptions options;
  options.servers = {shards[0].address()};
  options.tls_ca_file = pki.ca;
  options.auth_token = kWorkerToken;
  options.worker_id = 1;
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  std::vector<float> values(4);
  REQUIRE((*client)->PullDense("w", absl::MakeSpan(values)).ok());
  CHECK((*client)->PushDense("w", std::vector<float>(4, 0.5f)).ok());
  CHECK(absl::IsPermissionDenied((*client)->CreateTable(TableConfig::Dense("x", 4))));
  options.worker_id = 6;
  CHECK(absl::IsPermissionDenied(Client::Connect(options).status()));

  // ps_admin with an admin token; with a reader's, a policy change is denied.
  const std::string admin_token = dir.path() + "/admin.token";
  WriteAuthFile(admin_token, kAdminToken);
  RunAdmin(dir, shards, {"--tls_ca=" + pki.ca, "--auth_token_file=" + admin_token,
                         "--table=w", "set-policy", "--consistency=async"});
  const std::string reader_token = dir.path() + "/reader.token";
  WriteAuthFile(reader_token, kReaderToken);
  Process denied(BinDir() + "/ps_admin",
                 {"--servers=" + shards[0].address(), "--tls_ca=" + pki.ca,
                  "--auth_token_file=" + reader_token, "--table=w", "set-policy",
                  "--consistency=async"},
                 dir.path() + "/denied.log");
  CHECK(denied.Wait(absl::Seconds(30)) == 1);
  CHECK(absl::StrContains(denied.Output(), "PERMISSION_DENIED"));

  const std::string log = shards[0].process->Output();
  for (const char* secret : {kWorkerToken, kAdminToken, kReaderToken}) {
    CHECK(!absl::StrContains(log, secret));
  }
}

TEST_CASE("SIGHUP rereads the auth file; tokens work over local credentials") {
  TempDir dir;
  const std::string auth = dir.path() + "/auth";
  const std::string first = "first-reader-token-aaaa";
  const std::string second = "second-reader-token-bbbb";
  WriteAuthFile(auth, absl::StrCat("token ", first, " dash reader\n"));
  std::vector<Shard> shards = StartShards(dir.path(), 1, {"--auth_file=" + auth});
  ChannelSecurity one, two;
  one.bearer_token = first;
  two.bearer_token = second;
  CHECK(StatsCode(*StubTo(shards[0], one)) == grpc::StatusCode::OK);
  CHECK(StatsCode(*StubTo(shards[0], two)) == grpc::StatusCode::UNAUTHENTICATED);
  // Local credentials but no token.
  auto bare = v1::ParameterServer::NewStub(grpc::CreateChannel(
      shards[0].address(), grpc::experimental::LocalCredentials(LOCAL_TCP)));
  CHECK(StatsCode(*bare) == grpc::StatusCode::UNAUTHENTICATED);

  WriteAuthFile(auth, absl::StrCat("token ", second, " dash reader\n"));
  REQUIRE(::kill(shards[0].process->pid(), SIGHUP) == 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (StatsCode(*StubTo(shards[0], two)) != grpc::StatusCode::OK &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  CHECK(StatsCode(*StubTo(shards[0], two)) == grpc::StatusCode::OK);
  CHECK(StatsCode(*StubTo(shards[0], one)) == grpc::StatusCode::UNAUTHENTICATED);

  // A broken file keeps the principals loaded before.
  WriteAuthFile(auth, "token short dash reader\n");
  REQUIRE(::kill(shards[0].process->pid(), SIGHUP) == 0);
  const absl::Time logged = absl::Now() + absl::Seconds(10);
  while (!absl::StrContains(shards[0].process->Output(), "principals loaded before stay") &&
         absl::Now() < logged) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const std::string log = shards[0].process->Output();
  CHECK(absl::StrContains(log, "line 1: token shorter than 16 characters"));
  CHECK(StatsCode(*StubTo(shards[0], two)) == grpc::StatusCode::OK);
  CHECK(!absl::StrContains(log, first));
  CHECK(!absl::StrContains(log, second));
  CHECK(shards[0].process->Stop() == 0);
}

// Runs ps_server with `args` (and --port=0) and returns its exit code and
// output.
std::pair<std::optional<int>, std::string> RunServer(
    const TempDir& dir, const std::vector<std::string>& args) {
  static int runs = 0;
  std::vector<std::string> argv = {"--port=0"};
  argv.insert(argv.end(), args.begin(), args.end());
  Process server(BinDir() + "/ps_server", argv,
                 absl::StrCat(dir.path(), "/server", runs++, ".log"));
  std::optional<int> code = server.Wait(absl::Seconds(10));
  return {code, server.Output()};
}

TEST_CASE("ps_server refuses bad TLS and auth settings naming the flag") {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    int code;
    const char* error;
  };
  const std::string loose = dir.path() + "/loose";
  std::ofstream(loose) << "token reader-token-0123456789 r reader\n";
  ::chmod(loose.c_str(), 0644);
  const std::string pem = dir.path() + "/x.pem";
  std::ofstream(pem) << "not a certificate\n";
  const Case cases[] = {
      {{"--tls_cert=/nonexistent/cert.pem", "--tls_key=" + pem}, 2,
       "--tls_cert=/nonexistent/cert.pem: No such file or directory"},
      {{"--tls_cert=" + pem}, 2, "--tls_cert and --tls_key go together"},
      {{"--tls_ca=" + pem}, 2, "--tls_ca needs --tls_cert"},
      {{"--tls_require_client_cert"}, 2, "--tls_require_client_cert needs --tls_ca"},
      {{"--tls_cert=" + pem, "--tls_key=" + pem}, 1, "holds no PEM CERTIFICATE block"},
      {{"--auth_file=" + loose}, 1, "chmod 600"},
      {{"--host=0.0.0.0"}, 1, "without TLS a shard listens on loopback only"},
      {{"--host=0.0.0.0", "--insecure", "--auth_file=" + loose}, 1,
       "tokens without TLS are checked over local credentials"},
  };
  for (const Case& c : cases) {
    auto [code, output] = RunServer(dir, c.args);
    INFO(output);
    CHECK(code == c.code);
    CHECK(absl::StrContains(output, c.error));
  }
  // --insecure serves plaintext on every interface, warning at start.
  Process open(BinDir() + "/ps_server",
               {"--host=0.0.0.0", "--insecure", "--port=0",
                "--port_file=" + dir.path() + "/open.port"},
               dir.path() + "/open.log");
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  // The transport line follows "serving on port": wait for both, or the
  // check can read the log between the two lines.
  auto started = [&open] {
    const std::string log = open.Output();
    return absl::StrContains(log, "serving on port") &&
           absl::StrContains(log, "transport:");
  };
  while (!started() && absl::Now() < deadline) {
    REQUIRE_FALSE(open.Wait(absl::Milliseconds(20)).has_value());
  }
  INFO(open.Output());
  CHECK(absl::StrContains(open.Output(), "transport: INSECURE plaintext"));
  CHECK(open.Stop() == 0);
}

}  // namespace
}  // namespace taups::testing

// The auth file's parser and the role table (no network): which method each
// role may call, the worker-id binding, and precise refusals of malformed
// files.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/match.h"
#include "server/authorization.h"
#include "server/principals.h"
#include "tests/process_harness.h"

namespace taups {
namespace {

constexpr char kFile[] =
    "# kind credential principal role [worker ids]\n"
    "token tok-worker-aaaaaaaaaa  trainers  worker 0-3\n"
    "cert  worker4.taups.test     trainer4  worker 4\n"
    "token tok-admin-bbbbbbbbbbb  ops       admin   # trailing comment\n"
    "token tok-reader-ccccccccc   dashboard reader\n"
    "\n"
    "cert  ops.taups.test         ops       admin\n";

PrincipalTable Parsed() {
  absl::StatusOr<PrincipalTable> table = PrincipalTable::Parse(kFile, "test");
  INFO(table.status().ToString());
  REQUIRE(table.ok());
  return *std::move(table);
}

TEST_CASE("an auth file names principals by token and by certificate") {
  const PrincipalTable table = Parsed();
  CHECK(table.principals() == 4);
  CHECK(table.tokens() == 3);
  CHECK(table.cert_names() == 2);
  const Principal* trainers = table.FindByToken("tok-worker-aaaaaaaaaa");
  REQUIRE(trainers != nullptr);
  CHECK(trainers->name == "trainers");
  CHECK(trainers->role == Role::kWorker);
  CHECK(trainers->first_worker == 0);
  CHECK(trainers->last_worker == 3);
  CHECK(table.FindByCertName("ops.taups.test") == table.FindByName("ops"));
  CHECK(table.FindByToken("tok-admin-bbbbbbbbbbb") == table.FindByName("ops"));
  CHECK(table.FindByCertName("worker4.taups.test")->last_worker == 4);
  CHECK(table.FindByToken("tok-worker-aaaaaaaaab") == nullptr);
  CHECK(table.FindByToken("tok-worker-aaaaaaaaa") == nullptr);  // a prefix
  CHECK(table.FindByToken("") == nullptr);
  CHECK(table.FindByCertName("nobody") == nullptr);
}

TEST_CASE("a malformed auth file is refused naming the line, never the secret") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"token short1 p worker 1\n", "line 1: token shorter than 16"},
      {"key tok-aaaaaaaaaaaaaaa p admin\n", "'key' is neither token nor cert"},
      {"token tok-aaaaaaaaaaaaaaa p root\n", "role 'root'"},
      {"token tok-aaaaaaaaaaaaaaa p worker\n", "a worker needs its worker ids"},
      {"token tok-aaaaaaaaaaaaaaa p admin 3\n", "only a worker has worker ids"},
      {"token tok-aaaaaaaaaaaaaaa p worker 5-2\n", "worker ids '5-2'"},
      {"token tok-aaaaaaaaaaaaaaa p worker x\n", "worker ids 'x'"},
      {"token tok-aaaaaaaaaaaaaaa p worker 0-3\n"
       "token tok-bbbbbbbbbbbbbbb q worker 3-5\n",
       "line 2: worker ids of 'q' overlap those of 'p'"},
      {"token tok-aaaaaaaaaaaaaaa p worker 0-3\n"
       "token tok-aaaaaaaaaaaaaaa q reader\n",
       "line 2: token already listed"},
      {"token tok-aaaaaaaaaaaaaaa p worker 0-3\n"
       "cert  c.test p worker 0-4\n",
       "'p' appears earlier with another role or ids"},
      {"cert c.test p reader\ncert c.test q reader\n",
       "certificate name 'c.test' already listed"},
      {"token tok-aaaaaaaaaaaaaaa\n", "expected: token|cert"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<PrincipalTable> table = PrincipalTable::Parse(c.text, "f");
    INFO(c.text << " -> " << table.status().ToString());
    REQUIRE(absl::IsInvalidArgument(table.status()));
    CHECK(absl::StrContains(table.status().message(), c.error));
    CHECK(!absl::StrContains(table.status().message(), "tok-aaaa"));
  }
}

TEST_CASE("an auth file others may read is refused") {
  taups::testing::TempDir dir;
  const std::string path = dir.path() + "/auth";
  std::ofstream(path) << kFile;
  ::chmod(path.c_str(), 0644);
  absl::StatusOr<PrincipalTable> loose = PrincipalTable::Load(path);
  REQUIRE(absl::IsInvalidArgument(loose.status()));
  CHECK(absl::StrContains(loose.status().message(), "mode 0644"));
  ::chmod(path.c_str(), 0600);
  REQUIRE(PrincipalTable::Load(path).ok());
  CHECK(absl::IsInvalidArgument(PrincipalTable::Load(path + ".none").status()));
}

TEST_CASE("every method against every role") {
  const PrincipalTable table = Parsed();
  const Principal& worker = *table.FindByName("trainers");
  const Principal& admin = *table.FindByName("ops");
  const Principal& reader = *table.FindByName("dashboard");
  struct Row {
    Rpc method;
    bool worker, admin, reader;
  };
  const Row rows[] = {
      {Rpc::kRegister, true, false, false},
      {Rpc::kHeartbeat, true, false, false},
      {Rpc::kLeave, true, false, false},
      {Rpc::kPullDense, true, false, false},
      {Rpc::kPushDense, true, false, false},
      {Rpc::kPullSparse, true, false, false},
      {Rpc::kPushSparse, true, false, false},
      {Rpc::kCreateTable, false, true, false},
      {Rpc::kDropTable, false, true, false},
      {Rpc::kSetConsistency, false, true, false},
      {Rpc::kGetTable, true, true, true},
      {Rpc::kStats, true, true, true},
      {Rpc::kCheckpoint, false, true, false},
      {Rpc::kEvictWorker, false, true, false},
      {Rpc::kShardStatus, false, true, true},
      {Rpc::kRollback, false, true, false},
  };
  for (const Row& row : rows) {
    INFO(RpcName(row.method));
    for (const auto& [principal, allowed] :
         {std::pair<const Principal*, bool>{&worker, row.worker},
          {&admin, row.admin},
          {&reader, row.reader}}) {
      INFO(principal->name);
      const absl::Status status = Authorize(principal, row.method, 2);
      CHECK(status.ok() == allowed);
      if (!allowed) {
        CHECK(absl::IsPermissionDenied(status));
        CHECK(absl::StrContains(status.message(), RpcName(row.method)));
      }
    }
    const absl::Status anonymous = Authorize(nullptr, row.method, 2);
    CHECK(absl::IsUnauthenticated(anonymous));
  }
}

TEST_CASE("a worker acts only as its own worker ids") {
  const PrincipalTable table = Parsed();
  const Principal* worker = table.FindByName("trainers");  // 0-3
  for (Rpc method : {Rpc::kRegister, Rpc::kHeartbeat,
                           Rpc::kLeave, Rpc::kPushDense,
                           Rpc::kPullSparse}) {
    INFO(RpcName(method));
    CHECK(ActsAsWorker(method));
    CHECK(Authorize(worker, method, 0).ok());
    CHECK(Authorize(worker, method, 3).ok());
    const absl::Status spoofed = Authorize(worker, method, 4);
    REQUIRE(absl::IsPermissionDenied(spoofed));
    CHECK(absl::StrContains(spoofed.message(),
                            "'trainers' acts as workers 0-3, not worker 4"));
    CHECK(absl::IsPermissionDenied(Authorize(worker, method, UINT32_MAX)));
    // The edge must pass the id: forgetting it is not a grant.
    CHECK(absl::IsInvalidArgument(Authorize(worker, method)));
  }
  CHECK(!ActsAsWorker(Rpc::kStats));
  CHECK(!ActsAsWorker(Rpc::kEvictWorker));  // names a worker, acts as none
  CHECK(Authorize(table.FindByName("trainer4"), Rpc::kPushDense, 4).ok());
  CHECK(absl::IsPermissionDenied(
      Authorize(table.FindByName("trainer4"), Rpc::kPushDense, 3)));
}

}  // namespace
}  // namespace taups

// ps_admin (psctl) status, checkpoint and evict against real ps_server
// processes (issue 13 part 6, issue 12 part 2): what status prints is
// checked against what the test's own clients pushed and pulled; a
// checkpoint taken by ps_admin is what a shard killed afterwards restores;
// an evicted worker no longer holds a sync step, a drained one finishes
// its step first; and only the roles allowed may ask.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "taups/client.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

constexpr uint64_t kSize = 8;

// Shard s of n in its own directory (logs, port file), checkpointing into
// <state>/ckpt<s> when `state` is given.
Shard StartShard(const TempDir& run, const std::string& state, int s, int n,
                 std::vector<std::string> extra = {}) {
  const std::string dir = absl::StrCat(run.path(), "/", s);
  std::filesystem::create_directories(dir);
  extra.insert(extra.end(), {absl::StrCat("--shard_index=", s),
                             absl::StrCat("--num_shards=", n),
                             "--stats_interval_s=0"});
  if (!state.empty()) {
    extra.push_back(absl::StrCat("--checkpoint_dir=", state, "/ckpt", s));
  }
  std::vector<Shard> one = StartShards(dir, 1, extra);
  return std::move(one[0]);
}

std::vector<Shard> StartCluster(const TempDir& run, const std::string& state, int n,
                                const std::vector<std::string>& extra = {}) {
  std::vector<Shard> shards;
  for (int s = 0; s < n; ++s) {
    std::vector<std::string> args = extra;
    if (!state.empty()) args.push_back("--start_empty");
    shards.push_back(StartShard(run, state, s, n, args));
  }
  return shards;
}

ClientOptions Options(const std::vector<Shard>& shards, uint32_t worker) {
  ClientOptions options;
  for (const Shard& s : shards) options.servers.push_back(s.address());
  options.worker_id = worker;
  options.lease = absl::Seconds(30);  // only an admin makes these workers dead
  options.call_timeout = absl::Seconds(20);
  return options;
}

std::unique_ptr<Client> Connect(const std::vector<Shard>& shards, uint32_t worker) {
  auto client = Client::Connect(Options(shards, worker));
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  return std::move(*client);
}

TableConfig Table(const std::string& name, ConsistencyKind kind,
                  uint32_t num_workers = 0) {
  TableConfig config = TableConfig::Dense(name, kSize);
  config.optimizer.learning_rate = 1.0f;
  config.consistency.kind = kind;
  config.consistency.num_workers = num_workers;
  return config;
}

// The cells of the row of table `table` on shard `shard` in the text
// status, or empty.
std::vector<std::string> TableRow(const std::string& text, const std::string& table,
                                  int shard) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<std::string> cells = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cells.size() == 12 && cells[0] == table && cells[1] == absl::StrCat(shard)) {
      return cells;
    }
  }
  return {};
}

std::vector<std::string> ShardRow(const std::string& text, int shard) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<std::string> cells = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cells.size() == 16 && cells[0] == absl::StrCat(shard)) return cells;
  }
  return {};
}

TEST_CASE("ps_admin status shows what the clients' own pushes and pulls say") {
  TempDir run, state;
  std::vector<Shard> shards =
      StartCluster(run, state.path(), 2, {"--memory_budget_mb=64"});
  std::unique_ptr<Client> a = Connect(shards, 0);
  std::unique_ptr<Client> b = Connect(shards, 1);
  REQUIRE(a->CreateTable(Table("steps", ConsistencyKind::kSync, 2)).ok());
  REQUIRE(a->CreateTable(Table("free", ConsistencyKind::kAsync)).ok());
  std::vector<float> values(kSize);
  constexpr int kSteps = 3;
  for (int step = 0; step < kSteps; ++step) {
    for (Client* c : {a.get(), b.get()}) REQUIRE(c->PullDense("steps", absl::MakeSpan(values)).ok());
    for (Client* c : {a.get(), b.get()}) {
      REQUIRE(c->PushDense("steps", std::vector<float>(kSize, 1.0f)).ok());
    }
    a->Clock();
    b->Clock();
  }
  // Five async pushes on one pull: taus 0, 1, 2, 3, 4 on each shard.
  absl::StatusOr<PullInfo> basis = a->PullDense("free", absl::MakeSpan(values));
  REQUIRE(basis.ok());
  uint64_t tau_max = 0;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<PushResult> pushed =
        a->PushDense("free", std::vector<float>(kSize, 0.5f), &*basis);
    REQUIRE(pushed.ok());
    for (const ShardPushResult& s : pushed->shards) tau_max = std::max(tau_max, s.tau);
  }
  REQUIRE(tau_max == 4);
  absl::StatusOr<PullInfo> steps = a->PullDense("steps", absl::MakeSpan(values));
  absl::StatusOr<PullInfo> free = a->PullDense("free", absl::MakeSpan(values));
  REQUIRE(steps.ok());
  REQUIRE(free.ok());

  auto [code, text] = TryAdmin(run, shards, {"status"});
  INFO(text);
  REQUIRE(code == 0);
  for (int s = 0; s < 2; ++s) {
    const std::vector<std::string> shard = ShardRow(text, s);
    REQUIRE(shard.size() == 16);
    CHECK(shard[1] == shards[s].address());
    CHECK(shard[4] == "yes");
    CHECK(shard[5] == "2");    // tables
    CHECK(shard[6] == "2");    // live
    CHECK(shard[7] == "0");    // dead
    CHECK(shard[12] == "64");  // --memory_budget_mb
    CHECK(std::stod(shard[11]) > 0.0);
    CHECK(shard[13] == "-");   // no checkpoint yet
    const std::vector<std::string> sync = TableRow(text, "steps", s);
    REQUIRE(sync.size() == 12);
    CHECK(sync[2] == absl::StrCat(steps->shard_versions[s]));
    CHECK(sync[3] == "sync/n=2");
    CHECK(sync[7] == absl::StrCat(2 * kSteps));  // pushes: both workers, every step
    CHECK(sync[9] == absl::StrCat(kSteps));      // steps closed
    const std::vector<std::string> async = TableRow(text, "free", s);
    REQUIRE(async.size() == 12);
    CHECK(async[2] == absl::StrCat(free->shard_versions[s]));
    CHECK(async[3] == "async");
    CHECK(async[6] == "4");  // tau max
    CHECK(async[7] == "5");
    CHECK(async[11] == "-");  // async: no straggler
  }
  CHECK(steps->shard_versions == std::vector<uint64_t>{kSteps, kSteps});
  CHECK(free->shard_versions == std::vector<uint64_t>{5, 5});

  // A checkpoint, then the JSON says so; --tables filters.
  auto [taken, written] = TryAdmin(run, shards, {"checkpoint", "--json"});
  INFO(written);
  REQUIRE(taken == 0);
  CHECK(absl::StrContains(written, "{\"shard\":0,\"sequence\":1,"));
  CHECK(absl::StrContains(written, "{\"shard\":1,\"sequence\":1,"));
  CHECK(absl::StrContains(written, "{\"name\":\"steps\",\"version\":3,\"open_step\":3}"));
  auto [json_code, json] = TryAdmin(run, shards, {"status", "--json", "--tables=free"});
  INFO(json);
  REQUIRE(json_code == 0);
  CHECK(absl::StartsWith(json, "{\"shards\":[{\"shard\":0,"));
  CHECK(absl::StrContains(json, "\"workers\":{\"live\":2,\"dead\":0,\"left\":0,"
                                "\"evicted\":0,\"draining\":[],\"awaited\":0,"
                                "\"awaited_ids\":[]}"));
  CHECK(absl::StrContains(json, "\"budget\":{\"used_bytes\":"));
  CHECK(absl::StrContains(json, ",\"limit_bytes\":67108864}"));
  CHECK(absl::StrContains(json, "\"checkpoint\":{\"enabled\":true,\"taken\":1,"
                                "\"failed\":0,\"last_sequence\":1,"));
  CHECK(absl::StrContains(json, "{\"name\":\"free\",\"policy\":\"async\",\"version\":5,"
                                "\"pushes\":5,"));
  CHECK(absl::StrContains(json, "\"tau_max\":4,"));
  CHECK(!absl::StrContains(json, "\"steps\""));
  CHECK(absl::EndsWith(json, "\"errors\":[]}\n"));

  // A shard that is down: the others still show, the error names it.
  shards[1].process->Stop();
  auto [down_code, down] = TryAdmin(run, shards, {"status"});
  INFO(down);
  CHECK(down_code == 1);
  CHECK(ShardRow(down, 0).size() == 16);
  CHECK(ShardRow(down, 1).empty());
  CHECK(absl::StrContains(down, absl::StrCat("UNAVAILABLE: shard 1 (", shards[1].address(), "): ")));
}

TEST_CASE("a checkpoint ps_admin took is what a killed shard restores") {
  TempDir run, state;
  std::vector<Shard> shards = StartCluster(run, state.path(), 1);
  std::vector<float> at_checkpoint(kSize), later(kSize);
  {
    std::unique_ptr<Client> a = Connect(shards, 0);
    REQUIRE(a->CreateTable(Table("t", ConsistencyKind::kAsync)).ok());
    for (int i = 0; i < 7; ++i) {
      REQUIRE(a->PullDense("t", absl::MakeSpan(later)).ok());
      REQUIRE(a->PushDense("t", std::vector<float>(kSize, 0.25f * (i + 1))).ok());
    }
    REQUIRE(a->PullDense("t", absl::MakeSpan(at_checkpoint)).ok());
    auto [code, out] = TryAdmin(run, shards, {"checkpoint"});
    INFO(out);
    REQUIRE(code == 0);
    CHECK(absl::StrContains(out, "shard 0: checkpoint 1 written to "));
    CHECK(absl::StrContains(out, "(full, "));
    CHECK(absl::StrContains(out, ": t@7"));
    // Two more pushes that no checkpoint holds.
    for (int i = 0; i < 2; ++i) {
      REQUIRE(a->PushDense("t", std::vector<float>(kSize, 1.0f)).ok());
    }
    absl::StatusOr<PullInfo> now = a->PullDense("t", absl::MakeSpan(later));
    REQUIRE(now.ok());
    REQUIRE(now->shard_versions[0] == 9);
    // No Leave: the shard dies under the worker.
    REQUIRE(::kill(shards[0].process->pid(), SIGKILL) == 0);
    shards[0].process->Wait(absl::Seconds(10));
  }
  std::filesystem::remove(run.path() + "/0/shard0.port");  // the first start's
  shards[0] = StartShard(run, state.path(), 0, 1);
  ClientOptions reader = Options(shards, 0);
  reader.register_worker = false;
  auto client = Client::Connect(reader);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  std::vector<float> restored(kSize);
  absl::StatusOr<PullInfo> pulled = (*client)->PullDense("t", absl::MakeSpan(restored));
  REQUIRE(pulled.ok());
  CHECK(pulled->shard_versions[0] == 7);
  CHECK(restored == at_checkpoint);
  CHECK(restored != later);
  auto [code, json] = TryAdmin(run, shards, {"status", "--json"});
  INFO(json);
  REQUIRE(code == 0);
  CHECK(absl::StrContains(json, "\"restored\":true"));
  CHECK(absl::StrContains(json, "\"taken\":0,"));  // none since this start
}

TEST_CASE("ps_admin evict closes a sync step without the evicted worker") {
  TempDir run;
  std::vector<Shard> shards = StartCluster(run, "", 2);
  std::unique_ptr<Client> a = Connect(shards, 0);
  std::unique_ptr<Client> b = Connect(shards, 1);  // registered, never pushes
  REQUIRE(a->CreateTable(Table("w", ConsistencyKind::kSync, 2)).ok());
  std::vector<float> values(kSize);
  REQUIRE(a->PullDense("w", absl::MakeSpan(values)).ok());
  REQUIRE(a->PushDense("w", std::vector<float>(kSize, 3.0f)).ok());
  a->Clock();
  std::future<absl::StatusOr<PullInfo>> next = a->PullDenseAsync("w", absl::MakeSpan(values));
  REQUIRE(next.wait_for(std::chrono::milliseconds(500)) == std::future_status::timeout);

  auto [code, out] = TryAdmin(run, shards, {"evict", "--worker=1"});
  INFO(out);
  REQUIRE(code == 0);
  CHECK(absl::StrContains(out, "shard 0: worker 1 evicted (was live)"));
  CHECK(absl::StrContains(out, "shard 1: worker 1 evicted (was live)"));
  REQUIRE(next.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  absl::StatusOr<PullInfo> pulled = next.get();
  REQUIRE(pulled.ok());
  CHECK(pulled->shard_versions == std::vector<uint64_t>{1, 1});
  CHECK(values == std::vector<float>(kSize, -3.0f));  // worker 0's push alone

  // A worker no shard knows: each shard says so, exit 1.
  auto [unknown, why] = TryAdmin(run, shards, {"evict", "--worker=9"});
  INFO(why);
  CHECK(unknown == 1);
  CHECK(absl::StrContains(why, absl::StrCat("NOT_FOUND: shard 0 (", shards[0].address(),
                                            "): worker 9 never registered")));
}

TEST_CASE("ps_admin evict --drain lets the worker finish its step, then shuts it out") {
  TempDir run;
  std::vector<Shard> shards = StartCluster(run, "", 2);
  std::unique_ptr<Client> a = Connect(shards, 0);
  std::unique_ptr<Client> b = Connect(shards, 1);
  REQUIRE(a->CreateTable(Table("w", ConsistencyKind::kSync, 2)).ok());
  std::vector<float> values(kSize);
  for (Client* c : {a.get(), b.get()}) REQUIRE(c->PullDense("w", absl::MakeSpan(values)).ok());
  for (Client* c : {a.get(), b.get()}) REQUIRE(c->PushDense("w", std::vector<float>(kSize, 1.0f)).ok());
  a->Clock();
  b->Clock();
  // Step 1: worker 0 has pushed when the drain starts; worker 1 not yet.
  REQUIRE(a->PullDense("w", absl::MakeSpan(values)).ok());
  REQUIRE(a->PushDense("w", std::vector<float>(kSize, 1.0f)).ok());
  a->Clock();
  auto [code, out] = TryAdmin(run, shards, {"evict", "--worker=1", "--drain"});
  INFO(out);
  REQUIRE(code == 0);
  CHECK(absl::StrContains(out, "shard 0: worker 1 draining (was live): it may finish "
                               "the open step of w"));
  std::future<absl::StatusOr<PullInfo>> next = a->PullDenseAsync("w", absl::MakeSpan(values));
  // The step waits for the draining worker...
  REQUIRE(next.wait_for(std::chrono::milliseconds(500)) == std::future_status::timeout);
  std::vector<float> mine(kSize);
  REQUIRE(b->PullDense("w", absl::MakeSpan(mine)).ok());
  absl::StatusOr<PushResult> last = b->PushDense("w", std::vector<float>(kSize, 3.0f));
  REQUIRE(last.ok());
  for (const ShardPushResult& s : last->shards) CHECK(s.accepted);
  b->Clock();
  // ... which closes it with its push: mean of 1 and 3.
  REQUIRE(next.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  absl::StatusOr<PullInfo> pulled = next.get();
  REQUIRE(pulled.ok());
  CHECK(pulled->shard_versions == std::vector<uint64_t>{2, 2});
  CHECK(values == std::vector<float>(kSize, -3.0f));
  // Its next step is refused; worker 0's closes alone.
  REQUIRE(b->PullDense("w", absl::MakeSpan(mine)).ok());
  absl::StatusOr<PushResult> refused = b->PushDense("w", std::vector<float>(kSize, 5.0f));
  INFO(refused.status().ToString());
  CHECK(absl::IsFailedPrecondition(refused.status()));
  CHECK(absl::StrContains(refused.status().message(), "drained"));
  REQUIRE(a->PushDense("w", std::vector<float>(kSize, 1.0f)).ok());
  a->Clock();
  pulled = a->PullDense("w", absl::MakeSpan(values));
  REQUIRE(pulled.ok());
  CHECK(pulled->shard_versions == std::vector<uint64_t>{3, 3});
  CHECK(values == std::vector<float>(kSize, -4.0f));
  // It may not register again.
  absl::StatusOr<std::unique_ptr<Client>> again = Client::Connect(Options(shards, 1));
  CHECK(absl::IsFailedPrecondition(again.status()));
  CHECK(absl::StrContains(again.status().message(), "drained"));
  auto [status_code, json] = TryAdmin(run, shards, {"status", "--json"});
  INFO(json);
  REQUIRE(status_code == 0);
  CHECK(absl::StrContains(json, "\"workers\":{\"live\":1,\"dead\":1,\"left\":0,"
                                "\"evicted\":1,\"draining\":[],\"awaited\":0,"
                                "\"awaited_ids\":[]}"));
}

void WriteSecret(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
}

TEST_CASE("ps_admin status needs reader or admin; checkpoint and evict admin") {
  TempDir run, state;
  const std::string auth = run.path() + "/auth";
  WriteSecret(auth,
              "token admin-token-0123456789abcdef ops admin\n"
              "token reader-token-0123456789abcdef dash reader\n"
              "token worker-token-0123456789abcdef trainers worker 0-1\n");
  std::vector<Shard> shards = StartCluster(run, state.path(), 1, {"--auth_file=" + auth});
  const std::string admin = run.path() + "/admin.token";
  const std::string reader = run.path() + "/reader.token";
  const std::string worker = run.path() + "/worker.token";
  WriteSecret(admin, "admin-token-0123456789abcdef\n");
  WriteSecret(reader, "reader-token-0123456789abcdef\n");
  WriteSecret(worker, "worker-token-0123456789abcdef\n");
  const auto as = [&](const std::string& token) { return "--auth_token_file=" + token; };

  CHECK(TryAdmin(run, shards, {as(reader), "status"}).first == 0);
  CHECK(TryAdmin(run, shards, {as(admin), "status"}).first == 0);
  CHECK(TryAdmin(run, shards, {as(admin), "checkpoint"}).first == 0);
  for (const auto& [token, command] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {worker, {"status"}},
           {reader, {"checkpoint"}},
           {worker, {"checkpoint"}},
           {reader, {"evict", "--worker=0"}},
           {worker, {"evict", "--worker=1", "--drain"}}}) {
    std::vector<std::string> args = {as(token)};
    args.insert(args.end(), command.begin(), command.end());
    auto [code, out] = TryAdmin(run, shards, args);
    INFO(out);
    CHECK(code == 1);
    CHECK(absl::StrContains(out, absl::StrCat("PERMISSION_DENIED: shard 0 (",
                                              shards[0].address(), "): principal")));
  }
  auto [code, out] = TryAdmin(run, shards, {"status"});
  INFO(out);
  CHECK(code == 1);
  CHECK(absl::StrContains(out, "UNAUTHENTICATED"));
  // The refused checkpoints wrote nothing: one directory, the admin's.
  int checkpoints = 0;
  for (const auto& entry : std::filesystem::directory_iterator(state.path() + "/ckpt0")) {
    checkpoints += absl::StartsWith(entry.path().filename().string(), "ckpt-") ? 1 : 0;
  }
  CHECK(checkpoints == 1);
}

TEST_CASE("ps_admin checkpoint on a shard without a checkpoint dir names it") {
  TempDir run;
  std::vector<Shard> shards = StartCluster(run, "", 2);
  auto [code, out] = TryAdmin(run, shards, {"checkpoint"});
  INFO(out);
  CHECK(code == 1);
  CHECK(absl::StrContains(out, absl::StrCat("FAILED_PRECONDITION: shard 1 (",
                                            shards[1].address(), "): shard 1 runs "
                                            "without --checkpoint_dir")));
  CHECK(absl::StrContains(out, "checkpoint failed on 2 of 2 shards"));
}

TEST_CASE("ps_admin --help lists every command; a wrong one is named") {
  TempDir run;
  Process help(BinDir() + "/ps_admin", {"--help"}, run.path() + "/help.log");
  REQUIRE(help.Wait(absl::Seconds(30)) == 0);
  for (const char* command : {"\n  status ", "\n  checkpoint ", "\n  evict --worker=N",
                              "\n  rollback [--step=S]", "\n  stats ", "\n  set-policy ",
                              "\n  drop-table "}) {
    INFO(command);
    CHECK(absl::StrContains(help.Output(), command));
  }
  Process wrong(BinDir() + "/ps_admin", {"--servers=127.0.0.1:1", "evicts"},
                run.path() + "/wrong.log");
  REQUIRE(wrong.Wait(absl::Seconds(30)) == 1);
  CHECK(absl::StrContains(wrong.Output(), "unknown command 'evicts'; expected status, "
                                          "checkpoint, evict,"));
  Process no_worker(BinDir() + "/ps_admin", {"--servers=127.0.0.1:1", "evict"},
                    run.path() + "/no_worker.log");
  REQUIRE(no_worker.Wait(absl::Seconds(30)) == 1);
  CHECK(absl::StrContains(no_worker.Output(), "evict needs --worker=N"));
}

}  // namespace
}  // namespace taups::testing

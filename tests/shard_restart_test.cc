// A real ps_server process with a checkpoint directory: killed with -9 it
// comes back from its last checkpoint (not re-initialised), stopped with
// SIGTERM it keeps every acknowledged push, and without a checkpoint it
// refuses to start unless told this is a first start. Its /metrics passes
// promtool and reports the checkpoints. Workers ride through a shard's
// kill -9 and restart, and their summaries and /metrics count it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "httplib.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "taups/client.h"
#include "tests/process_harness.h"
#include "tests/prometheus_text.h"
#include "tests/test_skip.h"

namespace taups {
namespace {

using testing::Process;
using testing::Shard;
using testing::ReadPortFile;
using testing::StartShards;
using testing::TempDir;

constexpr uint64_t kSize = 16;

std::unique_ptr<Client> Connect(int port) {
  ClientOptions options;
  options.servers = {absl::StrCat("127.0.0.1:", port)};
  options.worker_id = 0;
  options.call_timeout = absl::Seconds(10);
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  return std::move(*client);
}

// Pushes gradients k+1, k+2, ... (every element) for `count` pushes.
void Push(Client& client, int first, int count) {
  for (int k = first; k < first + count; ++k) {
    auto pushed = client.PushDense("w", std::vector<float>(kSize, float(k + 1)));
    REQUIRE(pushed.ok());
    REQUIRE(pushed->all_accepted());
  }
}

std::vector<float> Pull(Client& client, uint64_t* version) {
  std::vector<float> values(kSize);
  auto info = client.PullDense("w", absl::MakeSpan(values));
  REQUIRE(info.ok());
  *version = info->shard_versions[0];
  return values;
}

double Metric(const std::string& text, const std::string& name) {
  for (size_t at = text.find("\n" + name + " "); at != std::string::npos;) {
    const size_t begin = at + name.size() + 2;
    double value = 0;
    REQUIRE(absl::SimpleAtod(text.substr(begin, text.find('\n', begin) - begin), &value));
    return value;
  }
  FAIL("no series " << name);
  return 0;
}

struct Started {
  std::vector<Shard> shards;
  int metrics_port = 0;
};

Started StartWithCheckpoints(const TempDir& run, const std::string& ckpt,
                             std::vector<std::string> extra) {
  extra.insert(extra.end(), {"--checkpoint_dir=" + ckpt, "--metrics_port=0",
                             "--metrics_port_file=" + run.path() + "/metrics.port",
                             "--stats_interval_s=0"});
  Started started;
  started.shards = StartShards(run.path(), 1, extra);
  started.metrics_port = ReadPortFile(run.path() + "/metrics.port");
  return started;
}

// Registers `worker` on the shard at `port` saying it saw table 'w' at
// `version` before the restart.
void RegisterSaying(int port, uint32_t worker, uint64_t version) {
  auto channel = OpenChannel(absl::StrCat("127.0.0.1:", port), ChannelSecurity{});
  REQUIRE(channel.ok());
  auto stub = v1::ParameterServer::NewStub(*channel);
  v1::RegisterRequest request;
  request.set_worker_id(worker);
  v1::TableVersionSeen* seen = request.add_seen_before_restart();
  seen->set_table("w");
  seen->set_version(version);
  v1::RegisterResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status status = stub->Register(&context, request, &response);
  INFO(status.error_message());
  REQUIRE(status.ok());
}

// The shard restored table 'w' at version 5; worker 0 pushed versions 1..8
// before the kill. Its report counts, once; a worker the checkpoint did not
// know is not heard, however much it claims.
void CheckLossReportsBelieved(int port, int metrics_port, Process& shard) {
  httplib::Client http("127.0.0.1", metrics_port);
  const std::string lost = "taups_updates_lost{table=\"w\"}";
  const auto gauge = [&http, &lost] {
    auto res = http.Get("/metrics");
    REQUIRE(res);
    return Metric(res->body, lost);
  };
  REQUIRE(gauge() == 0);
  RegisterSaying(port, 9, 1000000);  // unknown to the checkpoint
  CHECK(gauge() == 0);
  RegisterSaying(port, 0, 8);
  CHECK(gauge() == 3);
  RegisterSaying(port, 0, 50);  // worker 0 again: its turn is used
  CHECK(gauge() == 3);
  const std::string log = shard.Output();
  INFO(log);
  const std::string line = "workers saw version";
  const size_t first = log.find(line);
  REQUIRE(first != std::string::npos);
  CHECK(log.find("workers saw version 8 before the restart: 3 updates") == first);
  CHECK(log.find(line, first + 1) == std::string::npos);
}

TEST_CASE("a killed shard restarts from its checkpoint; SIGTERM keeps every push") {
  TempDir state;
  const std::string ckpt = state.path() + "/ckpt";
  std::vector<float> at_checkpoint;
  int port = 0;
  {
    TempDir run;
    Started first = StartWithCheckpoints(
        run, ckpt, {"--start_empty", "--checkpoint_every_versions=5"});
    port = first.shards[0].port;
    auto client = Connect(port);
    TableConfig config = TableConfig::Dense("w", kSize);
    REQUIRE(client->CreateTable(config).ok());
    Push(*client, 0, 5);
    // The version trigger writes a checkpoint of version 5 within a tick.
    httplib::Client http("127.0.0.1", first.metrics_port);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    std::string metrics;
    while (absl::Now() < deadline) {
      auto res = http.Get("/metrics");
      REQUIRE(res);
      metrics = res->body;
      if (Metric(metrics, "taups_checkpoints_total") >= 1) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    REQUIRE(Metric(metrics, "taups_checkpoints_total") == 1);
    REQUIRE(Metric(metrics, "taups_checkpoint_failures_total") == 0);
    REQUIRE(Metric(metrics, "taups_checkpoint_last_success_timestamp_seconds") > 1e9);
    REQUIRE(http.Get("/readyz")->status == 200);
    uint64_t version = 0;
    at_checkpoint = Pull(*client, &version);
    REQUIRE(version == 5);
    Push(*client, 5, 3);  // versions 6..8: after the checkpoint
    REQUIRE(kill(first.shards[0].process->pid(), SIGKILL) == 0);
    first.shards[0].process->Wait(absl::Seconds(5));
  }
  {
    TempDir run;
    Started second = StartWithCheckpoints(run, ckpt, {absl::StrCat("--port=", port)});
    REQUIRE(second.shards[0].port == port);
    auto client = Connect(port);
    uint64_t version = 0;
    REQUIRE(Pull(*client, &version) == at_checkpoint);  // not re-initialised
    REQUIRE(version == 5);
    const std::string log = second.shards[0].process->Output();
    INFO(log);
    REQUIRE(log.find("restored table 'w' at version 5") != std::string::npos);
    CheckLossReportsBelieved(port, second.metrics_port, *second.shards[0].process);
    Push(*client, 10, 2);  // version 7, acknowledged, then a clean stop
    at_checkpoint = Pull(*client, &version);
    REQUIRE(version == 7);
    REQUIRE(second.shards[0].process->Stop() == std::optional<int>(0));
  }
  {
    TempDir run;
    Started third = StartWithCheckpoints(run, ckpt, {absl::StrCat("--port=", port)});
    auto client = Connect(third.shards[0].port);
    uint64_t version = 0;
    REQUIRE(Pull(*client, &version) == at_checkpoint);
    REQUIRE(version == 7);
    if (std::system("promtool --version >/dev/null 2>&1") == 0) {
      httplib::Client http("127.0.0.1", third.metrics_port);
      auto res = http.Get("/metrics");
      REQUIRE(res);
      const std::string path = run.path() + "/metrics.txt";
      std::ofstream(path) << res->body;
      REQUIRE(std::system(("promtool check metrics < " + path).c_str()) == 0);
    }
  }
}

TEST_CASE("without a checkpoint a shard starts only when told it is new") {
  TempDir state;
  const std::string ckpt = state.path() + "/empty";
  TempDir run;
  Process refused(testing::BinDir() + "/ps_server",
                  {"--host=127.0.0.1", "--port=0", "--checkpoint_dir=" + ckpt},
                  run.path() + "/refused.log");
  const std::optional<int> code = refused.Wait(absl::Seconds(20));
  REQUIRE(code.has_value());
  REQUIRE(*code != 0);
  INFO(refused.Output());
  REQUIRE(refused.Output().find("--start_empty") != std::string::npos);
}

// Shard `index` of `count` on `port` (0: any) with its own checkpoint dir.
Shard StartShard(const std::string& dir, int index, int count, int port,
                 const std::string& ckpt, std::vector<std::string> extra = {}) {
  const std::string port_file = absl::StrCat(dir, "/shard", index, ".port");
  std::vector<std::string> args = {
      absl::StrCat("--shard_index=", index), absl::StrCat("--num_shards=", count),
      "--host=127.0.0.1", absl::StrCat("--port=", port), "--port_file=" + port_file,
      "--checkpoint_dir=" + ckpt, "--stats_interval_s=0"};
  args.insert(args.end(), extra.begin(), extra.end());
  Shard shard;
  shard.process = std::make_unique<Process>(
      testing::BinDir() + "/ps_server", args, absl::StrCat(dir, "/shard", index, ".log"));
  shard.port = ReadPortFile(port_file);
  return shard;
}

// Two shards in `run`, each checkpointing every `every_versions` versions
// into its own directory under `state`, started empty.
std::vector<Shard> StartCheckpointedPair(const TempDir& run, const TempDir& state,
                                         int every_versions) {
  std::vector<Shard> shards;
  for (int s = 0; s < 2; ++s) {
    shards.push_back(StartShard(
        run.path(), s, 2, 0, absl::StrCat(state.path(), "/shard", s),
        {"--start_empty", absl::StrCat("--checkpoint_every_versions=", every_versions)}));
  }
  return shards;
}

// Kills shard `index` with -9 and, `down` later, starts it again on its port
// from its checkpoint directory (as systemd would), logging into `dir`.
// `killed` (if set) runs once the shard is gone, before the pause.
void KillAndRestart(std::vector<Shard>& shards, int index, const TempDir& dir,
                    const TempDir& state, absl::Duration down,
                    const std::function<void()>& killed = nullptr) {
  const int port = shards[index].port;
  REQUIRE(kill(shards[index].process->pid(), SIGKILL) == 0);
  shards[index].process->Wait(absl::Seconds(5));
  if (killed) killed();
  absl::SleepFor(down);
  shards[index] = StartShard(dir.path(), index, 2, port,
                             absl::StrCat(state.path(), "/shard", index));
}

// Shard `index`'s version of each table, from `ps_admin status`.
std::map<std::string, uint64_t> TableVersions(const TempDir& dir,
                                              const std::vector<Shard>& shards,
                                              int index) {
  const std::string text =
      testing::RunAdmin(dir, shards, {"--tables=ctr_mlp,ctr_embeddings", "status"});
  INFO(text);
  std::map<std::string, uint64_t> versions;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    // TABLE SHARD VERSION POLICY ...: the table rows have 12 cells.
    std::vector<std::string> cells = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cells.size() != 12 || cells[1] != absl::StrCat(index)) continue;
    uint64_t version = 0;
    if (absl::SimpleAtoi(cells[2], &version)) versions[cells[0]] = version;
  }
  return versions;
}

// The version each table was restored at, from a restarted shard's log
// ("restored table 'T' at version V").
std::map<std::string, uint64_t> RestoredVersions(const std::string& log) {
  std::map<std::string, uint64_t> versions;
  const std::regex line("restored table '([^']+)' at version ([0-9]+)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line);
       it != std::sregex_iterator(); ++it) {
    versions[(*it)[1].str()] = std::stoull((*it)[2].str());
  }
  return versions;
}

// A worker's "shard 1 restarted: table 'T' went back from version B to A; N
// updates this worker saw are lost" line, or its "... table 'T' is at version
// A, at or past version B this worker last saw ..." (N = 0) when the other
// worker's pushes reached the restored shard first.
struct LostLine {
  std::string table;
  uint64_t before = 0, after = 0, lost = 0;
};
std::vector<LostLine> LostLines(const std::string& output) {
  std::vector<LostLine> lines;
  const std::regex line(
      "shard 1 restarted: table '([^']+)' (?:went back from version ([0-9]+) "
      "to ([0-9]+); ([0-9]+) updates this worker saw are lost|is at version "
      "([0-9]+), at or past version ([0-9]+) this worker last saw; no update "
      "it saw is lost)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    const auto number = [&m](int group) { return std::stoull(m[group].str()); };
    if (m[2].matched) {
      lines.push_back({m[1].str(), number(2), number(3), number(4)});
    } else {
      lines.push_back({m[1].str(), number(6), number(5), 0});
    }
  }
  return lines;
}

// The restarted shard's "restored table 'T' at version V ...; workers saw
// version S before the restart: N updates after the checkpoint are lost"
// lines: the last (largest) S and N of each table.
struct ShardLoss {
  uint64_t seen = 0, lost = 0;
};
std::map<std::string, ShardLoss> ShardLosses(const std::string& log) {
  std::map<std::string, ShardLoss> losses;
  const std::regex line(
      "restored table '([^']+)' at version [0-9]+[^;\n]*; workers saw version "
      "([0-9]+) before the restart: ([0-9]+) updates after the checkpoint are "
      "lost");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line);
       it != std::sregex_iterator(); ++it) {
    losses[(*it)[1].str()] = {std::stoull((*it)[2].str()),
                              std::stoull((*it)[3].str())};
  }
  return losses;
}

// The scenario on real processes: kill -9 one of two shards in the
// middle of training, let it come back (as systemd would restart it): the
// workers ride through and finish, and the shard is back at its checkpoint.
TEST_CASE("workers ride through a shard killed and restarted mid-training") {
  TempDir state, run, restart_run;
  std::vector<Shard> shards = StartCheckpointedPair(run, state, 50);
  auto workers = testing::StartWorkers(
      run, shards, 2,
      {"--model=ctr", "--steps=400", "--eval_every=0", "--eval_examples=2000",
       "--log_every=100", "--retry_budget_s=60"});
  // Let the workers train a quarter of their steps (shard 1 checkpoints
  // every 50 versions meanwhile), then hold them still (their calls in
  // flight land meanwhile), read shard 1's versions, kill it, and let the
  // workers go on. Waiting for their progress lines rather than for a fixed
  // time: on a fast machine 400 steps took under 6 s, so a kill after 6 s
  // found them done.
  const absl::Time deadline = absl::Now() + absl::Minutes(2);
  for (auto& w : workers) {
    while (w->Output().find("step 100/400") == std::string::npos) {
      REQUIRE(absl::Now() < deadline);
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  for (auto& w : workers) REQUIRE(kill(w->pid(), SIGSTOP) == 0);
  absl::SleepFor(absl::Milliseconds(300));
  const std::map<std::string, uint64_t> at_kill = TableVersions(run, shards, 1);
  KillAndRestart(shards, 1, restart_run, state, absl::Seconds(1), [&workers] {
    for (auto& w : workers) REQUIRE(kill(w->pid(), SIGCONT) == 0);
  });
  const std::vector<testing::WorkerRun> runs =
      testing::WaitForWorkers(workers, absl::Minutes(4));
  for (const testing::WorkerRun& r : runs) {
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // Each worker's summary names the one restart it rode through, of shard
    // 1, and the calls it retried while shard 1 was down.
    INFO(r.json);
    CHECK(testing::JsonNumber(r.json, "shard_restarts") == 1.0);
    CHECK(r.json.find("\"shard_restarts_by_shard\":[0,1]") != std::string::npos);
    CHECK(testing::JsonNumber(r.json, "rpc_retries") >= 1.0);
    // So does its last progress line (step 400, after the restart).
    CHECK(r.output.find("step 400/400") != std::string::npos);
    CHECK(r.output.find("shard_restarts 1 rpc_retries ") != std::string::npos);
  }
  const std::string log = shards[1].process->Output();
  INFO(log);
  REQUIRE(log.find("restored table 'ctr_embeddings' at version") != std::string::npos);
  const std::map<std::string, uint64_t> restored = RestoredVersions(log);
  REQUIRE(restored.size() == 2);  // ctr_mlp and ctr_embeddings
  REQUIRE(at_kill.size() == 2);
  uint64_t most_lost = 0;  // what any worker could have seen lost, at most
  for (const auto& [table, version] : restored) {
    REQUIRE(at_kill.count(table) == 1);
    REQUIRE(at_kill.at(table) >= version);
    most_lost += at_kill.at(table) - version;
  }
  // most_lost is 0 in a run (a few in a hundred) whose version-triggered
  // checkpoint fell on the workers' last update before they were stopped:
  // then nothing is lost, and every line below must say so.
  uint64_t most_seen_lost = 0;  // the largest loss one worker counted
  for (const testing::WorkerRun& r : runs) {
    INFO(r.output << "\n" << r.json);
    // One line per table of shard 1; the summary sums them.
    const std::vector<LostLine> lines = LostLines(r.output);
    REQUIRE(lines.size() == 2);
    uint64_t lost = 0;
    for (const LostLine& line : lines) {
      REQUIRE(restored.count(line.table) == 1);
      // Before: no newer than shard 1 was at the kill, and at most the two
      // workers' pushes in flight older (each pushes one step at a time).
      CHECK(line.before <= at_kill.at(line.table));
      CHECK(line.before + 2 >= at_kill.at(line.table));
      // After: the restored version, or later when the other worker's
      // pushes reached the restored shard first.
      CHECK(line.after >= restored.at(line.table));
      CHECK(line.lost == (line.before > line.after ? line.before - line.after : 0));
      lost += line.lost;
    }
    CHECK(testing::JsonNumber(r.json, "updates_lost") == static_cast<double>(lost));
    CHECK(r.json.find(absl::StrCat("\"updates_lost_by_shard\":[0,", lost, "]")) !=
          std::string::npos);
    CHECK(lost <= most_lost);
    most_seen_lost = std::max(most_seen_lost, lost);
  }
  // One worker can see nothing lost (the other's redone pushes reached the
  // restored shard first), but the first to hear from it saw a loss when
  // the restore went back further than the pushes the two had in flight.
  if (most_lost > 3) CHECK(most_seen_lost > 0);
  // The shard's own count, from what the workers reported on registering
  // again: per table, the newest version any of them saw, less the
  // restored one.
  // A table no worker saw past its restored version has no such line.
  const std::map<std::string, ShardLoss> shard_losses = ShardLosses(log);
  for (const auto& [table, version] : restored) {
    INFO(table);
    uint64_t newest_seen = 0;
    for (const testing::WorkerRun& r : runs) {
      for (const LostLine& line : LostLines(r.output)) {
        if (line.table == table) newest_seen = std::max(newest_seen, line.before);
      }
    }
    const auto loss = shard_losses.find(table);
    if (newest_seen <= version) {
      CHECK(loss == shard_losses.end());
      continue;
    }
    REQUIRE(loss != shard_losses.end());
    CHECK(loss->second.seen == newest_seen);
    CHECK(loss->second.seen <= at_kill.at(table));
    CHECK(loss->second.lost == loss->second.seen - version);
  }
  CHECK(shard_losses.size() <= restored.size());
  for (int s = 0; s < 2; ++s) REQUIRE(shards[s].process->Stop() == std::optional<int>(0));
}

// Waits up to 20 s for a complete checkpoint (a ckpt-<seq> directory) in
// `dir`.
void WaitForCheckpoint(const std::string& dir) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("ckpt-", 0) == 0 && name.find('.') == std::string::npos) return;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  FAIL("no checkpoint in " << dir);
}

// One scrape of a worker's /metrics, checked by promtool; its samples.
std::map<std::string, double> ScrapeWorker(httplib::Client& http) {
  auto res = http.Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  auto [code, problems] = testing::PromtoolCheckMetrics(res->body);
  INFO(res->body << problems);
  REQUIRE(code == 0);
  REQUIRE(problems.empty());
  return testing::PrometheusSamples(res->body);
}

double SumOf(const std::map<std::string, double>& samples, const std::string& name) {
  double sum = 0;
  for (const auto& [series, value] : samples) {
    if (series.rfind(name + "{", 0) == 0) sum += value;
  }
  return sum;
}

// ps_worker --metrics_port while shard 1 of 2 is killed with -9 and comes
// back from its checkpoint: the restart is counted for shard 1 only, and the
// retries of the calls that found it down show up by method and reason.
TEST_CASE("a worker's /metrics counts the shard restart it rode through and its retries",
          "[promtool]") {
  if (!testing::HavePromtool()) {
    TAUPS_SKIP("promtool not installed (Debian package prometheus)");
  }
  TempDir state, run, restart_run;
  std::vector<Shard> shards = StartCheckpointedPair(run, state, 20);
  const std::string port_file = run.path() + "/worker.metrics_port";
  auto workers = testing::StartWorkers(
      run, shards, 1,
      {"--model=ctr", "--steps=1000000", "--log_every=0", "--ctr_examples=4096",
       "--eval_examples=256", "--batch_size=32", "--retry_budget_s=60",
       "--metrics_port=0", "--metrics_port_file=" + port_file});
  Process& worker = *workers[0];
  httplib::Client http("127.0.0.1", ReadPortFile(port_file));
  WaitForCheckpoint(absl::StrCat(state.path(), "/shard1"));
  const std::map<std::string, double> before = ScrapeWorker(http);
  REQUIRE(before.at("taups_worker_shard_restarts_total{shard=\"0\"}") == 0);
  REQUIRE(before.at("taups_worker_shard_restarts_total{shard=\"1\"}") == 0);
  REQUIRE(before.at("taups_worker_updates_lost_total{shard=\"1\"}") == 0);
  REQUIRE(before.count(
              "taups_worker_rpc_retries_total{method=\"PushSparse\",reason=\"unavailable\"}") == 1);
  REQUIRE(SumOf(before, "taups_worker_rpc_retries_total") == 0);

  // Down long enough that the worker's calls find it gone and retry.
  KillAndRestart(shards, 1, restart_run, state, absl::Milliseconds(500));
  std::map<std::string, double> after;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  do {
    after = ScrapeWorker(http);
  } while (after.at("taups_worker_shard_restarts_total{shard=\"1\"}") < 1 &&
           absl::Now() < deadline);
  INFO(worker.Output());
  REQUIRE(worker.Wait(absl::ZeroDuration()) == std::nullopt);  // still training
  CHECK(after.at("taups_worker_shard_restarts_total{shard=\"1\"}") == 1);
  CHECK(after.at("taups_worker_shard_restarts_total{shard=\"0\"}") == 0);
  CHECK(after.at("taups_worker_updates_lost_total{shard=\"0\"}") == 0);
  CHECK(after.count("taups_worker_updates_lost_total{shard=\"1\"}") == 1);
  CHECK(SumOf(after, "taups_worker_rpc_retries_total") >= 1);
  // Its series exists per shard (heartbeats every lease/4 may all miss a
  // 500 ms outage; client_server_membership_test counts real failures).
  CHECK(after.count("taups_worker_heartbeat_failures_total{shard=\"1\"}") == 1);
  worker.Stop();
  for (int s = 0; s < 2; ++s) REQUIRE(shards[s].process->Stop() == std::optional<int>(0));
}

}  // namespace
}  // namespace taups

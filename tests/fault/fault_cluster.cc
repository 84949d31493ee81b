// The fault harness's processes (see fault_cluster.h).
#include "tests/fault/fault_cluster.h"

#include <signal.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "taups/client.h"

namespace taups::fault {
namespace {

HistoryWriter OpenEvents(const std::string& path) {
  absl::StatusOr<HistoryWriter> writer = HistoryWriter::Open(path);
  REQUIRE(writer.ok());
  return std::move(*writer);
}

// The port in `path` once the process wrote it, or 0 after `timeout`.
int AwaitPort(const std::string& path, testing::Process& process, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    std::ifstream in(path);
    int port = 0;
    if (in >> port && port > 0) return port;
    if (process.Wait(absl::Milliseconds(10)).has_value()) return 0;
  }
  return 0;
}

}  // namespace

FaultCluster::FaultCluster(std::string dir, FaultClusterOptions options)
    : dir_(std::move(dir)),
      options_(std::move(options)),
      events_(OpenEvents(dir_ + "/events.history")),
      shards_(options_.num_shards),
      workers_(options_.num_workers) {
  histories_.push_back(dir_ + "/events.history");
  for (uint32_t s = 0; s < options_.num_shards; ++s) StartShard(s, true);
}

FaultCluster::~FaultCluster() {
  for (WorkerSlot& w : workers_) {
    if (w.process) kill(w.process->pid(), SIGCONT);
  }
  for (ShardSlot& s : shards_) {
    if (s.process) kill(s.process->pid(), SIGCONT);
  }
}

std::string FaultCluster::Servers() const {
  std::vector<std::string> addresses;
  for (const ShardSlot& s : shards_) addresses.push_back(absl::StrCat(options_.host, ":", s.port));
  return absl::StrJoin(addresses, ",");
}

std::string FaultCluster::CheckpointDir(uint32_t s) const {
  return absl::StrCat(dir_, "/ckpt", s);
}

std::string FaultCluster::ShardLog(uint32_t s) const {
  return shards_[s].process ? shards_[s].process->Output() : std::string();
}

std::string FaultCluster::WorkerLog(uint32_t w) const {
  return workers_[w].process ? workers_[w].process->Output() : std::string();
}

void FaultCluster::Note(bool shard, uint32_t index, const std::string& what,
                        std::optional<uint64_t> restored) {
  ProcessEvent e;
  e.shard = shard;
  e.index = index;
  e.what = what;
  e.t = NowNanos();
  e.restored = restored.has_value();
  e.restored_version = restored.value_or(0);
  events_.Event(e);
}

std::optional<uint64_t> FaultCluster::RestoredVersion(const std::string& log) {
  const std::string needle = "restored table 'fault' at version ";
  const size_t at = log.find(needle);
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = at + needle.size();
  size_t end = begin;
  while (end < log.size() && std::isdigit(static_cast<unsigned char>(log[end]))) ++end;
  uint64_t version = 0;
  if (!absl::SimpleAtoi(log.substr(begin, end - begin), &version)) return std::nullopt;
  return version;
}

void FaultCluster::StartShard(uint32_t s, bool first) {
  ShardSlot& shard = shards_[s];
  const int start = shard.starts++;
  const std::string port_file = absl::StrCat(dir_, "/shard", s, ".", start, ".port");
  std::vector<std::string> args = {
      absl::StrCat("--shard_index=", s), absl::StrCat("--num_shards=", options_.num_shards),
      "--host=" + options_.host, absl::StrCat("--port=", first ? 0 : shard.port),
      "--port_file=" + port_file, "--checkpoint_dir=" + CheckpointDir(s),
      "--stats_interval_s=0"};
  if (first) args.push_back("--start_empty");
  if (options_.host != "127.0.0.1") args.push_back("--insecure");
  args.insert(args.end(), options_.shard_args.begin(), options_.shard_args.end());
  Note(true, s, "start");
  shard.process = std::make_unique<testing::Process>(
      testing::BinDir() + "/ps_server", args, absl::StrCat(dir_, "/shard", s, ".", start, ".log"));
  const int port = AwaitPort(port_file, *shard.process, absl::Seconds(30));
  INFO(shard.process->Output());
  REQUIRE(port > 0);
  if (!first) REQUIRE(port == shard.port);
  shard.port = port;
  Note(true, s, "ready", RestoredVersion(shard.process->Output()));
}

void FaultCluster::Signal(testing::Process& process, int signal) {
  REQUIRE(kill(process.pid(), signal) == 0);
}

void FaultCluster::KillShard(uint32_t s) {
  Note(true, s, "kill");
  Signal(*shards_[s].process, SIGKILL);
  REQUIRE(shards_[s].process->Wait(absl::Seconds(10)).has_value());
}

absl::Duration FaultCluster::RestartShard(uint32_t s) {
  const absl::Time begin = absl::Now();
  StartShard(s, false);
  return absl::Now() - begin;
}

void FaultCluster::StopShard(uint32_t s) {
  Note(true, s, "stop");
  Signal(*shards_[s].process, SIGSTOP);
}

void FaultCluster::ContShard(uint32_t s) {
  Note(true, s, "cont");
  Signal(*shards_[s].process, SIGCONT);
}

void FaultCluster::StartWorker(uint32_t w) {
  WorkerSlot& worker = workers_[w];
  const uint32_t n = static_cast<uint32_t>(worker.starts++);
  REQUIRE(n < options_.incarnations_per_worker);
  const std::string history = absl::StrCat(dir_, "/worker", w, ".", n, ".history");
  histories_.push_back(history);
  std::vector<std::string> args = {
      "--servers=" + Servers(), absl::StrCat("--worker_id=", w),
      absl::StrCat("--incarnation=", uint64_t{w} * 1000 + n + 1), "--history=" + history,
      absl::StrCat("--slots=", slots()),
      absl::StrCat("--slot_base=", (uint64_t{w} * options_.incarnations_per_worker + n) *
                                       options_.pushes),
      absl::StrCat("--pushes=", options_.pushes),
      absl::StrCat("--num_workers=", options_.num_workers)};
  args.insert(args.end(), options_.driver_args.begin(), options_.driver_args.end());
  std::string binary = testing::BinDir() + "/fault_driver";
  if (w < options_.worker_prefix.size() && !options_.worker_prefix[w].empty()) {
    const std::vector<std::string>& prefix = options_.worker_prefix[w];
    args.insert(args.begin(), binary);
    args.insert(args.begin(), prefix.begin() + 1, prefix.end());
    binary = prefix[0];
  }
  worker.process = std::make_unique<testing::Process>(
      binary, args, absl::StrCat(dir_, "/worker", w, ".", n, ".log"));
}

void FaultCluster::KillWorker(uint32_t w) {
  Note(false, w, "kill");
  Signal(*workers_[w].process, SIGKILL);
  REQUIRE(workers_[w].process->Wait(absl::Seconds(10)).has_value());
}

void FaultCluster::StopWorker(uint32_t w) {
  Note(false, w, "stop");
  Signal(*workers_[w].process, SIGSTOP);
}

void FaultCluster::ContWorker(uint32_t w) {
  Note(false, w, "cont");
  Signal(*workers_[w].process, SIGCONT);
}

std::vector<int> FaultCluster::WaitWorkers(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<int> codes;
  for (WorkerSlot& w : workers_) {
    if (!w.process) continue;
    codes.push_back(
        w.process->Wait(std::max(deadline - absl::Now(), absl::ZeroDuration())).value_or(-1000));
  }
  return codes;
}

FinalState FaultCluster::ReadTable() const {
  ClientOptions options;
  options.servers = absl::StrSplit(Servers(), ',');
  options.worker_id = 0;
  options.register_worker = false;
  options.call_timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  REQUIRE(client.ok());
  FinalState state;
  state.values.resize(slots() * options_.num_shards);
  absl::StatusOr<PullInfo> info = (*client)->PullDense("fault", absl::MakeSpan(state.values));
  INFO(info.status().ToString());
  REQUIRE(info.ok());
  state.versions = info->shard_versions;
  return state;
}

History FaultCluster::ReadHistories() const {
  absl::StatusOr<History> history = ReadHistory(histories_);
  INFO(history.status().ToString());
  REQUIRE(history.ok());
  return std::move(*history);
}

CheckReport FaultCluster::Check() const {
  CheckOptions check;
  check.num_shards = options_.num_shards;
  check.slots = slots();
  check.num_workers = options_.num_workers;
  check.mode = options_.mode;
  check.staleness_bound = options_.staleness_bound;
  return CheckHistory(ReadHistories(), ReadTable(), check);
}

}  // namespace taups::fault

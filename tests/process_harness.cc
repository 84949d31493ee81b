#include "tests/process_harness.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace taups::testing {

std::string BinDir() {
  const char* dir = std::getenv("TAUPS_BIN_DIR");
  REQUIRE(dir != nullptr);  // run through CTest, or export TAUPS_BIN_DIR
  return dir;
}

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "taups-test-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Process::Process(const std::string& binary,
                 const std::vector<std::string>& args,
                 const std::string& log_path)
    : log_path_(log_path) {
  std::vector<std::string> argv_storage = {binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
}

Process::~Process() {
  if (!status_) Stop(absl::Seconds(2));
}

std::optional<int> Process::Wait(absl::Duration timeout) {
  if (status_) return status_;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int raw = 0;
    const pid_t done = waitpid(pid_, &raw, WNOHANG);
    if (done == pid_) {
      status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : -WTERMSIG(raw);
      return status_;
    }
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::optional<int> Process::Stop(absl::Duration grace) {
  if (status_) return status_;
  kill(pid_, SIGTERM);
  if (auto code = Wait(grace)) return code;
  kill(pid_, SIGKILL);
  return Wait(absl::Seconds(10));
}

std::string Process::Output() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Shard::address() const { return absl::StrCat("127.0.0.1:", port); }

std::vector<Shard> StartShards(const std::string& dir, int num_shards,
                               const std::vector<std::string>& extra_args) {
  std::vector<Shard> shards(num_shards);
  for (int s = 0; s < num_shards; ++s) {
    const std::string port_file = absl::StrCat(dir, "/shard", s, ".port");
    std::vector<std::string> args = {
        absl::StrCat("--shard_index=", s), absl::StrCat("--num_shards=", num_shards),
        "--host=127.0.0.1", "--port=0", "--port_file=" + port_file};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    shards[s].process = std::make_unique<Process>(
        BinDir() + "/ps_server", args, absl::StrCat(dir, "/shard", s, ".log"));
  }
  for (int s = 0; s < num_shards; ++s) {
    const std::string port_file = absl::StrCat(dir, "/shard", s, ".port");
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!std::filesystem::exists(port_file) && absl::Now() < deadline) {
      REQUIRE_FALSE(shards[s].process->Wait(absl::Milliseconds(20)).has_value());
    }
    std::ifstream in(port_file);
    in >> shards[s].port;
    INFO(shards[s].process->Output());
    REQUIRE(shards[s].port > 0);
  }
  return shards;
}

int ReadPortFile(const std::string& path) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    std::ifstream in(path);
    int port = 0;
    if (in >> port && port > 0) return port;
    absl::SleepFor(absl::Milliseconds(20));
  }
  FAIL("no port in " << path);
  return 0;
}

std::string JoinAddresses(const std::vector<Shard>& shards) {
  std::vector<std::string> addresses;
  for (const Shard& s : shards) addresses.push_back(s.address());
  return absl::StrJoin(addresses, ",");
}

std::vector<std::unique_ptr<Process>> StartWorkers(
    const TempDir& dir, const std::vector<Shard>& shards, int workers,
    const std::vector<std::string>& args,
    const std::vector<std::vector<std::string>>& per_worker) {
  std::vector<std::unique_ptr<Process>> processes;
  for (int w = 0; w < workers; ++w) {
    std::vector<std::string> argv = {
        "--servers=" + JoinAddresses(shards), absl::StrCat("--worker_id=", w),
        absl::StrCat("--num_workers=", workers), "--device=cpu"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (w < static_cast<int>(per_worker.size())) {
      argv.insert(argv.end(), per_worker[w].begin(), per_worker[w].end());
    }
    processes.push_back(std::make_unique<Process>(
        BinDir() + "/ps_worker", argv,
        absl::StrCat(dir.path(), "/worker", w, ".log")));
  }
  return processes;
}

std::vector<WorkerRun> WaitForWorkers(
    std::vector<std::unique_ptr<Process>>& workers, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<WorkerRun> runs(workers.size());
  for (size_t w = 0; w < workers.size(); ++w) {
    runs[w].exit_code = workers[w]
                            ->Wait(std::max(deadline - absl::Now(),
                                            absl::ZeroDuration()))
                            .value_or(-1000);
    runs[w].output = workers[w]->Output();
    runs[w].json = LastJsonLine(runs[w].output);
  }
  return runs;
}

std::vector<WorkerRun> RunWorkers(
    const TempDir& dir, const std::vector<Shard>& shards, int workers,
    const std::vector<std::string>& args,
    const std::vector<std::vector<std::string>>& per_worker) {
  std::vector<std::unique_ptr<Process>> processes =
      StartWorkers(dir, shards, workers, args, per_worker);
  return WaitForWorkers(processes);
}

std::pair<int, std::string> TryAdmin(const TempDir& dir, const std::vector<Shard>& shards,
                                     const std::vector<std::string>& args,
                                     absl::Duration timeout) {
  static std::atomic<int> runs{0};
  std::vector<std::string> argv = {"--servers=" + JoinAddresses(shards)};
  argv.insert(argv.end(), args.begin(), args.end());
  Process admin(BinDir() + "/ps_admin", argv,
                absl::StrCat(dir.path(), "/admin", runs++, ".log"));
  const std::optional<int> code = admin.Wait(timeout);
  return {code.value_or(-1000), admin.Output()};
}

std::string RunAdmin(const TempDir& dir, const std::vector<Shard>& shards,
                     const std::vector<std::string>& args) {
  auto [code, output] = TryAdmin(dir, shards, args);
  INFO("ps_admin " << absl::StrJoin(args, " ") << ":\n" << output);
  REQUIRE(code == 0);
  return output;
}

std::string LastJsonLine(const std::string& output) {
  std::string last;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!line.empty() && line.front() == '{') last = std::string(line);
  }
  return last;
}

std::optional<double> JsonNumber(const std::string& json,
                                 const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const size_t at = json.find(needle);
  if (at == std::string::npos) return std::nullopt;
  size_t begin = at + needle.size();
  while (begin < json.size() && json[begin] == ' ') ++begin;
  size_t end = begin;
  while (end < json.size() && json[end] != ',' && json[end] != '}') ++end;
  double value = 0;
  if (!absl::SimpleAtod(json.substr(begin, end - begin), &value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace taups::testing

#include "bench/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace taups::bench {
namespace {

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The number after "<key>:" in /proc/<pid>/status (kB for memory lines).
int64_t StatusField(const std::string& status, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, key) || !absl::ConsumePrefix(&line, ":")) {
      continue;
    }
    line = absl::StripAsciiWhitespace(line);
    line = line.substr(0, line.find(' '));
    int64_t value = 0;
    return absl::SimpleAtoi(line, &value) ? value : 0;
  }
  return 0;
}

// Waits for `pid` to exit for up to `timeout`; true if it did.
bool Reaped(pid_t pid, absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (absl::Now() < until) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

absl::StatusOr<ProcessUsage> ReadProcessUsage(pid_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/");
  absl::StatusOr<std::string> stat = ReadWhole(dir + "stat");
  if (!stat.ok()) return stat.status();
  absl::StatusOr<std::string> status = ReadWhole(dir + "status");
  if (!status.ok()) return status.status();
  // The command name (field 2) may hold spaces; fields resume after its ')'.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) {
    return absl::InternalError(absl::StrCat("unexpected ", dir, "stat"));
  }
  std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(*stat).substr(close + 2), ' ', absl::SkipEmpty());
  // utime and stime are fields 14 and 15 of the whole line: 11 and 12 here.
  uint64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return absl::InternalError(absl::StrCat("unexpected ", dir, "stat"));
  }
  ProcessUsage usage;
  usage.cpu_seconds =
      static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  usage.threads = StatusField(*status, "Threads");
  usage.rss_bytes = StatusField(*status, "VmRSS") * 1024;
  return usage;
}

absl::StatusOr<std::unique_ptr<ScratchDir>> ScratchDir::Make(
    const std::string& prefix) {
  std::string pattern = absl::StrCat("/tmp/", prefix, "XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot make ", pattern));
  }
  return std::unique_ptr<ScratchDir>(new ScratchDir(pattern));
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string OwnBinaryDir() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string self(path, static_cast<size_t>(n));
  const size_t slash = self.rfind('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& binary, const std::vector<std::string>& args,
    const std::string& scratch_dir, const std::string& log_name,
    absl::Duration timeout) {
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("no executable ", binary));
  }
  const std::string port_file = absl::StrCat(scratch_dir, "/", log_name, ".port");
  const std::string log_path = absl::StrCat(scratch_dir, "/", log_name);
  unlink(port_file.c_str());
  std::vector<std::string> argv_strings = {binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  argv_strings.push_back("--port=0");
  argv_strings.push_back("--port_file=" + port_file);
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  auto process = std::unique_ptr<ServerProcess>(new ServerProcess(pid, 0, log_path));
  const absl::Time until = absl::Now() + timeout;
  while (absl::Now() < until) {
    int port = 0;
    absl::StatusOr<std::string> text = ReadWhole(port_file);
    if (text.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &port) &&
        port > 0) {
      process->port_ = port;
      return process;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      process->pid_ = -1;
      return absl::InternalError(
          absl::StrCat(binary, " exited before listening; see ", log_path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(binary, " wrote no port file in time; see ", log_path));
}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  if (!Reaped(pid_, absl::Seconds(10))) {
    kill(pid_, SIGKILL);
    Reaped(pid_, absl::Seconds(5));
  }
}

std::string ServerProcess::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

}  // namespace taups::bench

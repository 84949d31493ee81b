// ServerProcess: a server a benchmark starts as its own process (ps_server,
// raw_transfer_server) on a free loopback port, so what the server costs can
// be read apart from the client: CPU seconds, threads and resident memory
// from /proc/<pid>. The process is stopped (SIGTERM, then SIGKILL) when the
// object is destroyed.
//
// Thread-compatible; ReadProcessUsage is thread-safe.
#ifndef TAUPS_BENCH_SERVER_PROCESS_H_
#define TAUPS_BENCH_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace taups::bench {

// What a process has used so far, from /proc/<pid>/stat and status.
struct ProcessUsage {
  double cpu_seconds = 0;  // user + system, all threads, since it started
  int64_t threads = 0;
  int64_t rss_bytes = 0;
};
absl::StatusOr<ProcessUsage> ReadProcessUsage(pid_t pid);

// The directory this program's binary is in (build/bin: ps_server lives
// next to the benchmarks).
std::string OwnBinaryDir();

// A fresh directory under /tmp for servers' logs and port files, removed
// with everything in it when the object is destroyed.
class ScratchDir {
 public:
  // INTERNAL when no directory can be made; path() is then empty.
  static absl::StatusOr<std::unique_ptr<ScratchDir>> Make(
      const std::string& prefix);
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

class ServerProcess {
 public:
  // Runs `binary` with `args` plus --port=0 --port_file=<file in
  // scratch_dir>, output to <scratch_dir>/<log_name>, and waits up to
  // `timeout` for the port file. Both ps_server and raw_transfer_server
  // take these flags.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& binary, const std::vector<std::string>& args,
      const std::string& scratch_dir, const std::string& log_name,
      absl::Duration timeout = absl::Seconds(20));
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  std::string address() const;  // "127.0.0.1:<port>"
  absl::StatusOr<ProcessUsage> Usage() const { return ReadProcessUsage(pid_); }
  const std::string& log_path() const { return log_path_; }

 private:
  ServerProcess(pid_t pid, int port, std::string log_path)
      : pid_(pid), port_(port), log_path_(std::move(log_path)) {}
  pid_t pid_;
  int port_;
  std::string log_path_;
};

}  // namespace taups::bench

#endif  // TAUPS_BENCH_SERVER_PROCESS_H_

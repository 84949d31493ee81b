// Starting and stopping real tauPS processes from tests: ps_server shards on
// free loopback ports (--port=0 --port_file) and ps_worker jobs, each with its
// output captured to a file. Every process still running when its handle is
// destroyed is killed, so a failing test leaves nothing behind.
#ifndef TAUPS_TESTS_PROCESS_HARNESS_H_
#define TAUPS_TESTS_PROCESS_HARNESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace taups::testing {

// Directory holding ps_server / ps_worker (CTest sets TAUPS_BIN_DIR).
std::string BinDir();

// A fresh scratch directory, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Process {
 public:
  // Starts `binary` with `args`, stdout+stderr to `log_path`.
  Process(const std::string& binary, const std::vector<std::string>& args,
          const std::string& log_path);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `timeout` for exit; the exit code, or nullopt if still
  // running (or killed by a signal: then -signal).
  std::optional<int> Wait(absl::Duration timeout);
  // SIGTERM, then SIGKILL after `grace`; returns the exit status as Wait().
  std::optional<int> Stop(absl::Duration grace = absl::Seconds(5));
  std::string Output() const;  // what the process has written so far

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string log_path_;
};

// A ps_server shard on a free port.
struct Shard {
  std::unique_ptr<Process> process;
  int port = 0;
  std::string address() const;
};

// Starts `num_shards` shards in `dir`; fails the test if one does not come
// up within 20 s.
std::vector<Shard> StartShards(const std::string& dir, int num_shards,
                               const std::vector<std::string>& extra_args = {});
std::string JoinAddresses(const std::vector<Shard>& shards);

// The port a process wrote to `path` (--port_file, --metrics_port_file),
// waiting up to 20 s for it; fails the test if none comes.
int ReadPortFile(const std::string& path);

// A ps_worker run: its exit code (-1000 if it did not end in time), the
// summary JSON line and everything it printed.
struct WorkerRun {
  int exit_code = -1;
  std::string json;
  std::string output;
};

// Starts ps_worker w = 0..workers-1 against `shards` (logs in `dir`) with
// --servers, --worker_id, --num_workers, --device=cpu, then `args`, then
// per_worker[w] when given. The processes run until destroyed.
std::vector<std::unique_ptr<Process>> StartWorkers(
    const TempDir& dir, const std::vector<Shard>& shards, int workers,
    const std::vector<std::string>& args,
    const std::vector<std::vector<std::string>>& per_worker = {});
// Waits up to `timeout` for each of `workers` and collects its run.
std::vector<WorkerRun> WaitForWorkers(
    std::vector<std::unique_ptr<Process>>& workers,
    absl::Duration timeout = absl::Minutes(8));
// StartWorkers, then WaitForWorkers.
std::vector<WorkerRun> RunWorkers(
    const TempDir& dir, const std::vector<Shard>& shards, int workers,
    const std::vector<std::string>& args,
    const std::vector<std::vector<std::string>>& per_worker = {});

// Runs ps_admin with `args` after --servers=<shards> (its log in `dir`) and
// waits up to `timeout` for it: its exit code (-1000 if it did not end in
// time) and what it printed, whatever the code.
std::pair<int, std::string> TryAdmin(const TempDir& dir, const std::vector<Shard>& shards,
                                     const std::vector<std::string>& args,
                                     absl::Duration timeout = absl::Seconds(30));
// TryAdmin, failing the test unless ps_admin exits 0. Returns what it printed.
std::string RunAdmin(const TempDir& dir, const std::vector<Shard>& shards,
                     const std::vector<std::string>& args);

// The last line of `output` that starts with '{' (the worker's summary).
std::string LastJsonLine(const std::string& output);
// A number field of a flat one-line JSON object, or nullopt.
std::optional<double> JsonNumber(const std::string& json,
                                 const std::string& key);

}  // namespace taups::testing

#endif  // TAUPS_TESTS_PROCESS_HARNESS_H_

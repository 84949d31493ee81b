#include "bench/machine_info.h"

#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

#ifndef TAUPS_BENCH_BUILD_TYPE
#define TAUPS_BENCH_BUILD_TYPE "unknown"
#endif

namespace taups::bench {
namespace {

// The value of the first "key<spaces>: value" line of `path` starting with
// `key`, or "" when absent.
std::string ProcField(const char* path, absl::string_view key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, key)) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    return std::string(
        absl::StripAsciiWhitespace(absl::string_view(line).substr(colon + 1)));
  }
  return "";
}

int UsableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

}  // namespace

std::vector<std::string> DescribeMachine() {
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("cpus (nproc): ", UsableCpus(), " of ",
                               sysconf(_SC_NPROCESSORS_ONLN), " online"));
  const std::string model = ProcField("/proc/cpuinfo", "model name");
  if (!model.empty()) lines.push_back(absl::StrCat("cpu model: ", model));
  const std::string memory = ProcField("/proc/meminfo", "MemTotal");
  if (!memory.empty()) lines.push_back(absl::StrCat("memory: ", memory));
  struct utsname name;
  if (uname(&name) == 0) {
    lines.push_back(absl::StrCat("kernel: ", name.sysname, " ", name.release,
                                 " ", name.machine));
  }
  std::ifstream loadavg("/proc/loadavg");
  std::string one, five, fifteen;
  if (loadavg >> one >> five >> fifteen) {
    // Other work on the machine skews every figure; say how busy it was.
    lines.push_back(absl::StrCat("load average at start (1/5/15 min): ", one,
                                 " ", five, " ", fifteen));
  }
  // The allocator's settings change large-buffer costs a lot (see
  // docs/BENCHMARKS.md), so a run made with tuned malloc says so.
  if (const char* tunables = std::getenv("GLIBC_TUNABLES")) {
    lines.push_back(absl::StrCat("env GLIBC_TUNABLES=", tunables));
  }
  lines.push_back(absl::StrCat("compiler: ", __VERSION__, ", build type ",
                               TAUPS_BENCH_BUILD_TYPE));
  lines.push_back(absl::StrCat("grpc: ", grpc::Version()));
  return lines;
}

}  // namespace taups::bench

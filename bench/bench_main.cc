#include "bench/bench_main.h"

#include <cstdio>
#include <string>

#include "absl/flags/parse.h"
#include "common/malloc_tuning.h"
#include "common/usage.h"

namespace taups::bench {

int BenchMainWithExitCode(int argc, char** argv, absl::string_view name,
                          absl::string_view usage,
                          const std::function<absl::StatusOr<int>()>& run) {
  KeepLargeBuffersMapped();
  SetUsage(usage);
  absl::ParseCommandLine(argc, argv);
  const absl::StatusOr<int> code = run();
  if (!code.ok()) {
    std::fprintf(stderr, "%s: %s\n", std::string(name).c_str(),
                 code.status().ToString().c_str());
    return 1;
  }
  return *code;
}

int BenchMain(int argc, char** argv, absl::string_view name,
              absl::string_view usage, const std::function<absl::Status()>& run) {
  return BenchMainWithExitCode(argc, argv, name, usage,
                               [&run]() -> absl::StatusOr<int> {
                                 const absl::Status status = run();
                                 if (!status.ok()) return status;
                                 return 0;
                               });
}

}  // namespace taups::bench

// The part of main() every report benchmark shares: the allocator settings
// of ps_server and ps_worker (common/malloc_tuning.h), Abseil's usage and
// flag parsing, and the exit: a failed run prints "<name>: <status>" to
// stderr and exits 1. The benchmark's own Run() does the rest (its flags,
// measurements and report on stdout).
//
// Call from main() only, once.
#ifndef TAUPS_BENCH_BENCH_MAIN_H_
#define TAUPS_BENCH_BENCH_MAIN_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace taups::bench {

// Exits 0 when `run` succeeds.
int BenchMain(int argc, char** argv, absl::string_view name,
              absl::string_view usage, const std::function<absl::Status()>& run);

// Exits with the code `run` answers (a benchmark whose report can fail a
// target, such as codec_bench's exit 2).
int BenchMainWithExitCode(int argc, char** argv, absl::string_view name,
                          absl::string_view usage,
                          const std::function<absl::StatusOr<int>()>& run);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_BENCH_MAIN_H_

#include "tests/test_skip.h"

#include <atomic>

namespace taups::testing {
namespace {

std::atomic<int> skipped_cases{0};

}  // namespace

void NoteSkipped() { skipped_cases.fetch_add(1, std::memory_order_relaxed); }

int SkippedCases() { return skipped_cases.load(std::memory_order_relaxed); }

int ExitCodeFor(int catch_result) {
  if (catch_result != 0) return catch_result == kSkipExitCode ? 1 : catch_result;
  return SkippedCases() > 0 ? kSkipExitCode : 0;
}

}  // namespace taups::testing

// Reporting a test case that cannot run on this machine (no CUDA device, no
// dataset, no torch) as *skipped*, never as passed. Catch2 2.13 has no SKIP,
// so the pieces are:
//
//   TEST_CASE("CPU and CUDA agree", "[cuda]") {
//     if (!CudaDeviceAvailable()) TAUPS_SKIP("no usable CUDA device");
//     ...
//   }
//
// TAUPS_SKIP prints "SKIPPED: <reason>" (a Catch2 warning), counts the skip
// and returns from the test case. The tests' main (tests/catch_main.cc) then
// exits with kSkipExitCode when no assertion failed and at least one case
// skipped. tests/CMakeLists.txt runs the cases carrying a skippable tag
// ([cuda], [dataset]) as their own CTest entry with SKIP_RETURN_CODE 77 and
// excludes them from the binary's main entry, where an exit of 77 is a
// failure: a skip in a case that should always run cannot hide.
//
// Thread-safety: NoteSkipped and SkippedCases may be called from any thread.
#ifndef TAUPS_TESTS_TEST_SKIP_H_
#define TAUPS_TESTS_TEST_SKIP_H_

namespace taups::testing {

// The exit code of a test binary whose selected cases skipped (the GNU
// convention Automake and Meson use too).
inline constexpr int kSkipExitCode = 77;

// Records that the running test case could not run here.
void NoteSkipped();
// How many test cases skipped so far in this process.
int SkippedCases();

// The exit code for a Catch2 run that ended with `catch_result` (failed
// assertions, capped at 255, or Catch2's own error code): a failure stays a
// failure (and never reads as a skip), a clean run with a skip is
// kSkipExitCode, a clean run without one is 0.
int ExitCodeFor(int catch_result);

}  // namespace taups::testing

// Skips the rest of the current test case; `reason` is streamed, as in INFO.
#define TAUPS_SKIP(reason)                   \
  do {                                       \
    ::taups::testing::NoteSkipped();         \
    WARN("SKIPPED: " << reason);             \
    return;                                  \
  } while (false)

#endif  // TAUPS_TESTS_TEST_SKIP_H_

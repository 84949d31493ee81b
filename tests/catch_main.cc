// The Catch2 main of every test binary: Catch2's own, except that a run in
// which a case skipped (tests/test_skip.h) and nothing failed exits with
// kSkipExitCode, which CTest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/test_skip.h"

int main(int argc, char* argv[]) {
  return taups::testing::ExitCodeFor(Catch::Session().run(argc, argv));
}

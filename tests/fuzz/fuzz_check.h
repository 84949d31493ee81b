// A property check for the fuzz targets: a failed check is a finding, so it
// prints what was expected and aborts, which libFuzzer records as a crash
// (the input is saved and CI fails). Unlike assert() it stays on in release
// builds, since the fuzz builds are optimised.
#ifndef TAUPS_TESTS_FUZZ_FUZZ_CHECK_H_
#define TAUPS_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define TAUPS_FUZZ_CHECK(cond, what)                                     \
  do {                                                                   \
    if (!(cond)) {                                                       \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s (%s)\n",     \
                   __FILE__, __LINE__, #cond, (what));                   \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

#endif  // TAUPS_TESTS_FUZZ_FUZZ_CHECK_H_

// Test hooks of common/vector_math: MaxAbs, MaxAbsOfBytes and CopyMaxAbs run
// in AVX2 on CPUs that have it and in SSE2 (or portable C++) elsewhere;
// tests on an AVX2 machine check both forms by narrowing the choice.
#ifndef TAUPS_COMMON_VECTOR_MATH_TESTING_H_
#define TAUPS_COMMON_VECTOR_MATH_TESTING_H_

namespace taups {

// true: the scans use the narrower form even where AVX2 runs; false: the
// widest form again. Process-wide; call it while no scan is running.
void NarrowMaxAbsForTesting(bool narrow);
// Whether the scans use AVX2 now.
bool MaxAbsUsesAvx2();

}  // namespace taups

#endif  // TAUPS_COMMON_VECTOR_MATH_TESTING_H_

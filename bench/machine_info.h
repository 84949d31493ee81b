// What the benchmark ran on, for the header of its report: CPUs this process
// may use (as `nproc` counts them), the CPU model from /proc/cpuinfo, memory,
// kernel, load average, GLIBC_TUNABLES if set, compiler, build type and
// gRPC version.
#ifndef TAUPS_BENCH_MACHINE_INFO_H_
#define TAUPS_BENCH_MACHINE_INFO_H_

#include <string>
#include <vector>

namespace taups::bench {

// "key: value" lines, one per fact; facts that cannot be read are omitted.
std::vector<std::string> DescribeMachine();

}  // namespace taups::bench

#endif  // TAUPS_BENCH_MACHINE_INFO_H_

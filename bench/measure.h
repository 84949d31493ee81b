// Timing loop for the throughput benchmark: repeats one operation until it
// has run at least `min_iterations` times AND for at least `min_seconds`,
// after untimed warm-up runs, and reports the totals. With trials > 1 the
// whole timed loop runs that many times and the median trial (by time per
// iteration) is reported, which damps interference from other work on the
// machine.
//
// Single-threaded; the operation itself may use many threads.
#ifndef TAUPS_BENCH_MEASURE_H_
#define TAUPS_BENCH_MEASURE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace taups::bench {

struct MeasureOptions {
  double min_seconds = 0.5;
  int64_t min_iterations = 5;
  int64_t warmup_iterations = 1;
  int trials = 1;
  // When set: the CPU seconds the server processes of the operation have
  // used so far (ServerProcess::Usage), read before and after each timed
  // run, so a Measurement splits CPU into this process's and the servers'.
  std::function<double()> server_cpu_seconds;
};

// `options` with `server_cpu_seconds` set to `server_cpu` (may be null).
MeasureOptions WithServerCpu(MeasureOptions options,
                             std::function<double()> server_cpu);

// The options from a benchmark's --min_seconds, --min_iters and --trials
// flags (iterations and trials at least 1).
MeasureOptions MeasureOptionsFrom(double min_seconds, int64_t min_iterations,
                                  int trials);

struct Measurement {
  int64_t iterations = 0;
  double seconds = 0;      // wall time of the timed iterations, all together
  double cpu_seconds = 0;  // CPU time of this whole process (all threads,
                           // user + system) over the same iterations
  // CPU time of the server processes over the same iterations; meaningful
  // only when has_server_cpu (MeasureOptions::server_cpu_seconds was set).
  double server_cpu_seconds = 0;
  bool has_server_cpu = false;

  // `bytes_per_iteration` moved per iteration; 1 GB = 1e9 bytes.
  double GigabytesPerSecond(double bytes_per_iteration) const;
  // Bytes per second of process CPU time: what the transfer costs, which
  // other work on the machine hardly changes (unlike wall time).
  double GigabytesPerCpuSecond(double bytes_per_iteration) const;
  // CPU seconds spent per GB moved: by this process (the client, plus
  // in-process servers), and by the server processes (0 without them).
  double CpuSecondsPerGigabyte(double bytes_per_iteration) const;
  double ServerCpuSecondsPerGigabyte(double bytes_per_iteration) const;
  double IterationsPerSecond() const;
  double MillisecondsPerIteration() const;
};

// Runs `op` as described above. Stops at and returns the first error.
absl::StatusOr<Measurement> Measure(const MeasureOptions& options,
                                    const std::function<absl::Status()>& op);

// Times exactly one run of `op` (no warm-up): for runs that change state,
// such as the first pull of a sparse table, which creates its rows.
absl::StatusOr<Measurement> MeasureOnce(
    const std::function<absl::Status()>& op,
    const std::function<double()>& server_cpu_seconds = nullptr);

// A cell for a CPU-seconds-per-GB figure: the number, or "n/a" when the
// measurement has no server CPU and `server` asks for it.
std::string FormatCpuPerGigabyte(const Measurement& m, double bytes,
                                 bool server);

// Combines runs of the same operation (e.g. several one-shot runs).
Measurement Combine(const Measurement& a, const Measurement& b);

// Keeps the compiler from eliding writes to `p` (e.g. a memcpy whose
// destination is never read).
inline void KeepMemory(void* p) { asm volatile("" : : "r"(p) : "memory"); }

}  // namespace taups::bench

#endif  // TAUPS_BENCH_MEASURE_H_

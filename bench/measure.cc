#include "bench/measure.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace taups::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// User + system CPU seconds used so far by all threads of this process.
double ProcessCpuSeconds() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

absl::StatusOr<Measurement> TimedLoop(const MeasureOptions& options,
                                      const std::function<absl::Status()>& op) {
  // Fast operations run in growing batches so reading the clock stays a
  // negligible part of what is timed.
  Measurement m;
  int64_t batch = 1;
  const double cpu_start = ProcessCpuSeconds();
  const Clock::time_point start = Clock::now();
  while (true) {
    for (int64_t i = 0; i < batch; ++i) {
      absl::Status status = op();
      if (!status.ok()) return status;
    }
    m.iterations += batch;
    m.seconds = SecondsSince(start);
    if (m.iterations >= options.min_iterations &&
        m.seconds >= options.min_seconds) {
      m.cpu_seconds = ProcessCpuSeconds() - cpu_start;
      return m;
    }
    if (m.seconds < options.min_seconds / 20 && batch < (int64_t{1} << 20)) {
      batch *= 2;
    }
  }
}

}  // namespace

double Measurement::GigabytesPerSecond(double bytes_per_iteration) const {
  return seconds > 0 ? bytes_per_iteration * iterations / seconds / 1e9 : 0;
}

double Measurement::GigabytesPerCpuSecond(double bytes_per_iteration) const {
  return cpu_seconds > 0 ? bytes_per_iteration * iterations / cpu_seconds / 1e9
                         : 0;
}

double Measurement::IterationsPerSecond() const {
  return seconds > 0 ? iterations / seconds : 0;
}

double Measurement::MillisecondsPerIteration() const {
  return iterations > 0 ? seconds * 1e3 / iterations : 0;
}

absl::StatusOr<Measurement> Measure(const MeasureOptions& options,
                                    const std::function<absl::Status()>& op) {
  for (int64_t i = 0; i < options.warmup_iterations; ++i) {
    absl::Status status = op();
    if (!status.ok()) return status;
  }
  std::vector<Measurement> trials;
  for (int t = 0; t < std::max(1, options.trials); ++t) {
    absl::StatusOr<Measurement> m = TimedLoop(options, op);
    if (!m.ok()) return m.status();
    trials.push_back(*m);
  }
  std::sort(trials.begin(), trials.end(),
            [](const Measurement& a, const Measurement& b) {
              return a.seconds / a.iterations < b.seconds / b.iterations;
            });
  return trials[trials.size() / 2];
}

absl::StatusOr<Measurement> MeasureOnce(
    const std::function<absl::Status()>& op) {
  const double cpu_start = ProcessCpuSeconds();
  const Clock::time_point start = Clock::now();
  absl::Status status = op();
  if (!status.ok()) return status;
  const double seconds = SecondsSince(start);
  return Measurement{1, seconds, ProcessCpuSeconds() - cpu_start};
}

Measurement Combine(const Measurement& a, const Measurement& b) {
  return Measurement{a.iterations + b.iterations, a.seconds + b.seconds,
                     a.cpu_seconds + b.cpu_seconds};
}

MeasureOptions MeasureOptionsFrom(double min_seconds, int64_t min_iterations,
                                  int trials) {
  MeasureOptions options;
  options.min_seconds = min_seconds;
  options.min_iterations = std::max<int64_t>(1, min_iterations);
  options.trials = std::max(1, trials);
  return options;
}

}  // namespace taups::bench

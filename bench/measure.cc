#include "bench/measure.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "bench/report_table.h"

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

double ServerCpu(const std::function<double()>& read) {
  return read ? read() : 0.0;
}

absl::StatusOr<Measurement> TimedLoop(const MeasureOptions& options,
                                      const std::function<absl::Status()>& op) {
  // Fast operations run in growing batches so reading the clock stays a
  // negligible part of what is timed.
  Measurement m;
  int64_t batch = 1;
  m.has_server_cpu = static_cast<bool>(options.server_cpu_seconds);
  const double server_start = ServerCpu(options.server_cpu_seconds);
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
      m.server_cpu_seconds = ServerCpu(options.server_cpu_seconds) - server_start;
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

double Measurement::CpuSecondsPerGigabyte(double bytes_per_iteration) const {
  const double gb = bytes_per_iteration * iterations / 1e9;
  return gb > 0 ? cpu_seconds / gb : 0;
}

double Measurement::ServerCpuSecondsPerGigabyte(
    double bytes_per_iteration) const {
  const double gb = bytes_per_iteration * iterations / 1e9;
  return gb > 0 && has_server_cpu ? server_cpu_seconds / gb : 0;
}

std::string FormatCpuPerGigabyte(const Measurement& m, double bytes,
                                 bool server) {
  if (server && !m.has_server_cpu) return "n/a";
  return FormatNumber(server ? m.ServerCpuSecondsPerGigabyte(bytes)
                             : m.CpuSecondsPerGigabyte(bytes));
}

MeasureOptions WithServerCpu(MeasureOptions options,
                             std::function<double()> server_cpu) {
  options.server_cpu_seconds = std::move(server_cpu);
  return options;
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
    const std::function<absl::Status()>& op,
    const std::function<double()>& server_cpu_seconds) {
  const double server_start = ServerCpu(server_cpu_seconds);
  const double cpu_start = ProcessCpuSeconds();
  const Clock::time_point start = Clock::now();
  absl::Status status = op();
  if (!status.ok()) return status;
  Measurement m;
  m.iterations = 1;
  m.seconds = SecondsSince(start);
  m.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  m.has_server_cpu = static_cast<bool>(server_cpu_seconds);
  m.server_cpu_seconds = ServerCpu(server_cpu_seconds) - server_start;
  return m;
}

Measurement Combine(const Measurement& a, const Measurement& b) {
  Measurement m;
  m.iterations = a.iterations + b.iterations;
  m.seconds = a.seconds + b.seconds;
  m.cpu_seconds = a.cpu_seconds + b.cpu_seconds;
  m.server_cpu_seconds = a.server_cpu_seconds + b.server_cpu_seconds;
  // An empty side (the start of a sum) takes the other's kind.
  m.has_server_cpu = (a.iterations == 0 || a.has_server_cpu) &&
                     (b.iterations == 0 || b.has_server_cpu);
  return m;
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

// Prometheus text exposition (format 0.0.4), written from the core.
//
// MetricsWriter collects samples family by family and renders them grouped
// (one # HELP / # TYPE per family, its samples together), as the format
// requires, whatever order a collector adds them in. Names and label names
// are checked against Prometheus' rules (an invalid one is a programming
// error: the sample is dropped and counted in taups_metrics_dropped_total);
// label values are escaped. Histograms are cumulative, with `le` buckets,
// `_sum` and `_count`; a fine-grained taups::Histogram (e.g. unit buckets
// for tau) is exposed with a subset of its bounds, so counts stay exact.
//
// MetricsRegistry: the one place a process's metrics come from. Sources
// register a collector that writes their current figures when scraped.
//
// Thread-compatible (MetricsWriter); MetricsRegistry is thread-safe.
#ifndef TAUPS_COMMON_METRICS_H_
#define TAUPS_COMMON_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/build_info.h"
#include "common/histogram.h"

namespace taups {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricsWriter {
 public:
  void Counter(absl::string_view name, absl::string_view help,
               const MetricLabels& labels, double value);
  void Gauge(absl::string_view name, absl::string_view help,
             const MetricLabels& labels, double value);
  // At most `max_buckets` finite bounds of `histogram` (chosen roughly
  // geometrically among its own) plus +Inf.
  void Histogram(absl::string_view name, absl::string_view help,
                 const MetricLabels& labels, const taups::Histogram& histogram,
                 size_t max_buckets = 16);

  // The exposition text of everything added so far.
  std::string Render() const;

  static bool ValidMetricName(absl::string_view name);
  static bool ValidLabelName(absl::string_view name);

 private:
  struct Family {
    std::string help;
    std::string type;
    std::vector<std::string> lines;  // rendered samples
  };
  Family* FamilyFor(absl::string_view name, absl::string_view help,
                    absl::string_view type, const MetricLabels& labels);
  std::map<std::string, Family> families_;
  uint64_t dropped_ = 0;
};

// taups_build_info{version,commit,build_type} 1: the series every tauPS
// process exports, so a dashboard can tell which build a target runs.
void WriteBuildInfoMetric(const BuildInfo& build, MetricsWriter& out);

class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricsWriter&)>;
  // Adds a source; collectors run in the order they were added.
  void Add(Collector collector) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs every collector and renders the result.
  std::string Scrape() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::vector<Collector> collectors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_COMMON_METRICS_H_

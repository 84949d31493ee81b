#include "common/metrics.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace taups {
namespace {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(absl::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LabelText(const MetricLabels& labels, absl::string_view le = "") {
  if (labels.empty() && le.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ",";
    absl::StrAppend(&out, labels[i].first, "=\"",
                    EscapeLabelValue(labels[i].second), "\"");
  }
  if (!le.empty()) absl::StrAppend(&out, labels.empty() ? "" : ",", "le=\"", le, "\"");
  out += "}";
  return out;
}

}  // namespace

bool MetricsWriter::ValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' || c == ':' ||
                    (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

bool MetricsWriter::ValidLabelName(absl::string_view name) {
  if (name.empty() || (name.size() >= 2 && name.substr(0, 2) == "__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' ||
                    (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return name != "le";
}

MetricsWriter::Family* MetricsWriter::FamilyFor(absl::string_view name,
                                                absl::string_view help,
                                                absl::string_view type,
                                                const MetricLabels& labels) {
  bool ok = ValidMetricName(name);
  for (const auto& [label, value] : labels) ok = ok && ValidLabelName(label);
  Family* family = nullptr;
  if (ok) {
    auto [it, inserted] = families_.try_emplace(std::string(name));
    family = &it->second;
    if (inserted) {
      family->help = std::string(help);
      family->type = std::string(type);
    } else if (family->type != type) {
      family = nullptr;  // one name, two types: a bug in a collector
    }
  }
  if (family == nullptr) ++dropped_;
  return family;
}

void MetricsWriter::Counter(absl::string_view name, absl::string_view help,
                            const MetricLabels& labels, double value) {
  Family* family = FamilyFor(name, help, "counter", labels);
  if (family == nullptr) return;
  family->lines.push_back(absl::StrCat(name, LabelText(labels), " ", FormatValue(value)));
}

void MetricsWriter::Gauge(absl::string_view name, absl::string_view help,
                          const MetricLabels& labels, double value) {
  Family* family = FamilyFor(name, help, "gauge", labels);
  if (family == nullptr) return;
  family->lines.push_back(absl::StrCat(name, LabelText(labels), " ", FormatValue(value)));
}

void MetricsWriter::Histogram(absl::string_view name, absl::string_view help,
                              const MetricLabels& labels,
                              const taups::Histogram& histogram,
                              size_t max_buckets) {
  Family* family = FamilyFor(name, help, "histogram", labels);
  if (family == nullptr) return;
  const std::vector<double>& bounds = histogram.bounds();
  const std::vector<uint64_t>& counts = histogram.counts();
  // The bounds to expose: all when few; else roughly doubling ones (0, 1,
  // 2, 4, ... for unit buckets), thinned to max_buckets, the last kept.
  std::vector<size_t> kept;
  if (bounds.size() <= max_buckets) {
    for (size_t i = 0; i < bounds.size(); ++i) kept.push_back(i);
  } else {
    for (size_t i = 0; i < bounds.size(); ++i) {
      if (kept.empty() || (bounds[kept.back()] <= 0 && bounds[i] > 0) ||
          bounds[i] >= 2 * bounds[kept.back()]) {
        kept.push_back(i);
      }
    }
    if (kept.size() > max_buckets) {
      const size_t stride = (kept.size() + max_buckets - 1) / max_buckets;
      std::vector<size_t> thinned;
      for (size_t k = 0; k < kept.size(); k += stride) thinned.push_back(kept[k]);
      kept = std::move(thinned);
    }
    if (kept.back() != bounds.size() - 1) kept.push_back(bounds.size() - 1);
  }
  uint64_t cumulative = 0;
  size_t next = 0;
  for (size_t k : kept) {
    for (; next <= k; ++next) cumulative += counts[next];
    family->lines.push_back(absl::StrCat(name, "_bucket",
                                         LabelText(labels, FormatValue(bounds[k])),
                                         " ", cumulative));
  }
  family->lines.push_back(absl::StrCat(name, "_bucket", LabelText(labels, "+Inf"),
                                       " ", histogram.count()));
  family->lines.push_back(absl::StrCat(name, "_sum", LabelText(labels), " ",
                                       FormatValue(histogram.sum())));
  family->lines.push_back(absl::StrCat(name, "_count", LabelText(labels), " ",
                                       histogram.count()));
}

std::string MetricsWriter::Render() const {
  std::string out;
  for (const auto& [name, family] : families_) {
    absl::StrAppend(&out, "# HELP ", name, " ", EscapeHelp(family.help), "\n");
    absl::StrAppend(&out, "# TYPE ", name, " ", family.type, "\n");
    for (const std::string& line : family.lines) absl::StrAppend(&out, line, "\n");
  }
  absl::StrAppend(&out,
                  "# HELP taups_metrics_dropped_total Samples a collector "
                  "wrote with an invalid name (a bug; see the log).\n"
                  "# TYPE taups_metrics_dropped_total counter\n"
                  "taups_metrics_dropped_total ",
                  dropped_, "\n");
  return out;
}

void MetricsRegistry::Add(Collector collector) {
  absl::MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Scrape() const {
  MetricsWriter writer;
  absl::MutexLock lock(&mu_);
  for (const Collector& collect : collectors_) collect(writer);
  return writer.Render();
}

void WriteBuildInfoMetric(const BuildInfo& build, MetricsWriter& out) {
  out.Gauge("taups_build_info", "What this binary is: version, commit, build type.",
            {{"version", std::string(build.version)},
             {"commit", std::string(build.commit)},
             {"build_type", std::string(build.build_type)}},
            1);
}

}  // namespace taups

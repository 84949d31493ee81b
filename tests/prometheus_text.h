// Reading Prometheus text exposition in tests: its samples by name, and the
// real promtool's verdict on it (Debian package prometheus).
//
// Thread-compatible; Promtool writes a scratch file under /tmp.
#ifndef TAUPS_TESTS_PROMETHEUS_TEXT_H_
#define TAUPS_TESTS_PROMETHEUS_TEXT_H_

#include <map>
#include <string>
#include <utility>

namespace taups::testing {

// Every sample line, "name{labels}" -> value (+Inf as HUGE_VAL). Fails the
// test on a line that is not "<series> <number>".
std::map<std::string, double> PrometheusSamples(const std::string& text);

// `promtool check metrics` on `text`: its exit code and what it printed.
std::pair<int, std::string> PromtoolCheckMetrics(const std::string& text);

bool HavePromtool();

}  // namespace taups::testing

#endif  // TAUPS_TESTS_PROMETHEUS_TEXT_H_

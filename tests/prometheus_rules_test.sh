#!/usr/bin/env bash
# The alert rules in deploy/prometheus/ load (promtool check rules), the
# scrape config example is valid (promtool check config), and the rules fire
# exactly as their unit tests expect on synthetic series (promtool test
# rules). Exit 77 (CTest: skipped) where promtool is not installed.
set -euo pipefail
src="${1:?usage: prometheus_rules_test.sh SOURCE_DIR}"
if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIPPED: promtool not installed (Debian package prometheus)"
  exit 77
fi
cd "$src/deploy/prometheus"
promtool check rules taups-alerts.yml
# The scrape config example (shard and worker jobs) is a valid config.
promtool check config prometheus.yml.example
cd tests
promtool test rules taups-alerts.test.yml

#include "common/process_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(int, metrics_port, -1,
          "Serve Prometheus /metrics, /healthz and /readyz on this port; -1: "
          "off, 0: any free port (see --metrics_port_file).");
ABSL_FLAG(std::string, metrics_host, "127.0.0.1",
          "Address the metrics endpoint listens on.");
ABSL_FLAG(std::string, metrics_port_file, "",
          "Once serving metrics, write their port to this file.");
ABSL_FLAG(std::string, log_level, "info",
          "Least severe level logged: trace, debug, info, warn, error, "
          "critical or off (case-insensitive)");

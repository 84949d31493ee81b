// The flags every long-running tauPS program shares: where it serves its
// Prometheus endpoint and how much it logs. Defined once here, so ps_server
// and ps_worker (and any program that reads them) spell and explain them
// the same way; a program that never reads them does not link them.
//
// Range checks stay with each program's table of ranges (flag_checks.h).
#ifndef TAUPS_COMMON_PROCESS_FLAGS_H_
#define TAUPS_COMMON_PROCESS_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(int, metrics_port);
ABSL_DECLARE_FLAG(std::string, metrics_host);
ABSL_DECLARE_FLAG(std::string, metrics_port_file);
ABSL_DECLARE_FLAG(std::string, log_level);

#endif  // TAUPS_COMMON_PROCESS_FLAGS_H_

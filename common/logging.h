// One log setup for every tauPS program (spdlog).
//
// Every line carries the process tag, e.g. "ps_server[shard 1]" or
// "ps_worker[3]", and goes to stderr:
//
//   [2026-12-01 07:29:10.123] ps_server[shard 1] [warning] worker 3 ...
//
// Under systemd, when stderr is the journal stream (JOURNAL_STREAM names
// stderr's device and inode), the timestamp is left out (the journal adds
// its own) and each line starts with its syslog priority, which journald
// strips and files the line under:
//
//   <4>ps_server[shard 1] [warning] worker 3 ...
//
// trace and debug are <7>, info <6>, warning <4>, error <3>, critical <2>.
//
// SetUpLogging replaces spdlog's default logger; call it from main before
// other threads log (spdlog's default-logger swap is not synchronised with
// concurrent logging). Logging itself is thread-safe.
#ifndef TAUPS_COMMON_LOGGING_H_
#define TAUPS_COMMON_LOGGING_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spdlog/common.h"

namespace taups {

// The level names --log_level accepts, case-insensitively.
inline constexpr absl::string_view kLogLevelNames =
    "trace, debug, info, warn (or warning), error, critical, off";

// "INFO" -> info; INVALID_ARGUMENT listing kLogLevelNames for anything else.
absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(absl::string_view name);

// The syslog priority journald files a line of `level` under (<N> prefix).
int SyslogPriority(spdlog::level::level_enum level);

// True when `journal_stream` (the JOURNAL_STREAM variable, "<dev>:<inode>")
// names the file open on `fd`: the process's output is read by journald.
// False for null, malformed or non-matching values.
bool IsJournalStream(const char* journal_stream, int fd);

struct LogOptions {
  std::string tag;               // "ps_server[shard 1]", "ps_worker[3]"
  std::string level = "info";    // see ParseLogLevel
  // Journal format (no timestamp, <N> priority prefix). Default: detected
  // from JOURNAL_STREAM and stderr.
  bool journal = false;
  bool detect_journal = true;
};

// Installs a stderr logger named `tag` with the format above as spdlog's
// default logger, at `level`. INVALID_ARGUMENT for an unknown level (the
// logger is then installed at info, so the error can still be logged).
absl::Status SetUpLogging(const LogOptions& options);

// Logs `message` at error level through the default logger's sinks even
// when its level is above error (--log_level=off), for the failure that
// ends a program: that must never be silent.
void LogFailure(absl::string_view message);

}  // namespace taups

#endif  // TAUPS_COMMON_LOGGING_H_

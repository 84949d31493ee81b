#include "common/logging.h"

#include <sys/stat.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace taups {
namespace {

// %* in a pattern: "<N>", the line's syslog priority.
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const char text[3] = {'<', static_cast<char>('0' + SyslogPriority(msg.level)),
                          '>'};
    dest.append(text, text + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

}  // namespace

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  using spdlog::level::level_enum;
  if (lower == "trace") return level_enum::trace;
  if (lower == "debug") return level_enum::debug;
  if (lower == "info") return level_enum::info;
  if (lower == "warn" || lower == "warning") return level_enum::warn;
  if (lower == "error") return level_enum::err;
  if (lower == "critical") return level_enum::critical;
  if (lower == "off") return level_enum::off;
  return absl::InvalidArgumentError(
      absl::StrCat("--log_level: unknown level '", name, "'; expected one of ",
                   kLogLevelNames));
}

int SyslogPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return 7;
    case spdlog::level::info:
      return 6;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::err:
      return 3;
    default:  // critical
      return 2;
  }
}

bool IsJournalStream(const char* journal_stream, int fd) {
  if (journal_stream == nullptr) return false;
  const std::vector<absl::string_view> parts =
      absl::StrSplit(journal_stream, ':');
  uint64_t device = 0, inode = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &device) ||
      !absl::SimpleAtoi(parts[1], &inode)) {
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  return static_cast<uint64_t>(st.st_dev) == device &&
         static_cast<uint64_t>(st.st_ino) == inode;
}

absl::Status SetUpLogging(const LogOptions& options) {
  const bool journal =
      options.detect_journal
          ? IsJournalStream(std::getenv("JOURNAL_STREAM"), /*fd=*/2)
          : options.journal;
  auto logger = std::make_shared<spdlog::logger>(
      options.tag, std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<SyslogPriorityFlag>('*');
  formatter->set_pattern(journal ? "%*%n [%l] %v"
                                 : "[%Y-%m-%d %H:%M:%S.%e] %n [%l] %v");
  logger->set_formatter(std::move(formatter));
  absl::StatusOr<spdlog::level::level_enum> level =
      ParseLogLevel(options.level);
  logger->set_level(level.ok() ? *level : spdlog::level::info);
  // Warnings and errors reach the file or journal at once.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
  return level.status();
}

void LogFailure(absl::string_view message) {
  const std::shared_ptr<spdlog::logger> logger = spdlog::default_logger();
  if (logger->should_log(spdlog::level::err)) {
    logger->error("{}", std::string(message));
    return;
  }
  const spdlog::details::log_msg msg(
      logger->name(), spdlog::level::err,
      spdlog::string_view_t(message.data(), message.size()));
  for (const spdlog::sink_ptr& sink : logger->sinks()) {
    sink->log(msg);
    sink->flush();
  }
}

}  // namespace taups

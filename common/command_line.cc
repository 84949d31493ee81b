#include "common/command_line.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/build_info.h"
#include "common/usage.h"

namespace taups {
namespace {

// Appends `text` to `out`, each line indented by `indent` spaces and broken
// at spaces before column 80.
void AppendWrapped(std::string& out, absl::string_view text, size_t indent) {
  const std::string pad(indent, ' ');
  size_t column = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column > 0 && column + 1 + word.size() > 80) {
      out += "\n";
      column = 0;
    }
    if (column == 0) {
      out += pad;
      column = indent;
    } else {
      out += " ";
      ++column;
    }
    absl::StrAppend(&out, word);
    column += word.size();
  }
  out += "\n";
}

}  // namespace

bool WantsHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--help" || arg == "-help" || arg == "--helpfull" ||
        arg == "-helpfull" || arg == "--helpshort" || arg == "-helpshort" ||
        arg == "-h") {
      return true;
    }
  }
  return false;
}

std::string FlagHelpText(absl::string_view usage,
                         absl::Span<const FlagRange> ranges) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!flag->IsRetired() && !DefinedByAbseil(flag->Filename())) {
      flags.push_back(flag);
    }
  }
  std::sort(flags.begin(), flags.end(),
            [](const absl::CommandLineFlag* a, const absl::CommandLineFlag* b) {
              return a->Name() < b->Name();
            });
  std::string out = absl::StrCat(usage, "\n\nFlags:\n");
  for (const absl::CommandLineFlag* flag : flags) {
    const std::string default_value = flag->DefaultValue();
    std::string allowed;
    for (const FlagRange& range : ranges) {
      if (range.flag == flag->Name()) {
        allowed = absl::StrCat("; allowed ", FormatFlagRange(range));
      }
    }
    absl::StrAppend(&out, "  --", flag->Name(), "  (default: ",
                    default_value.empty() ? "\"\"" : default_value, allowed,
                    ")\n");
    AppendWrapped(out, flag->Help(), 6);
  }
  out +=
      "  --help\n      Print this help and exit.\n"
      "  --version\n      Print the version, git commit and build type, and "
      "exit.\n";
  return out;
}

std::vector<char*> ParseCommandLineOrExit(int argc, char** argv,
                                          absl::string_view program,
                                          absl::string_view usage,
                                          absl::Span<const FlagRange> ranges) {
  SetUsage(usage);
  // SetFlagsUsageConfig() replaces only the fields that are set.
  absl::FlagsUsageConfig config;
  const std::string version = VersionLine(program) + "\n";
  config.version_string = [version] { return version; };
  absl::SetFlagsUsageConfig(config);
  if (WantsHelp(argc, argv)) {
    std::fputs(FlagHelpText(usage, ranges).c_str(), stdout);
    std::fflush(stdout);
    std::exit(0);
  }
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace taups

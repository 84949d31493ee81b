#include "bench/report_table.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace taups::bench {
namespace {

// Columns a UTF-8 string occupies on a terminal: its code points ("×" is one
// column, two bytes).
size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80;
  return width;
}

}  // namespace

ReportTable::ReportTable(std::vector<std::string> header, int left_columns)
    : header_(std::move(header)), left_columns_(left_columns) {}

void ReportTable::AddRow(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

void ReportTable::Print(TableFormat format, std::FILE* out) const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = DisplayWidth(header_[c]);
    for (const auto& row : rows_) {
      width[c] = std::max(width[c], DisplayWidth(row[c]));
    }
  }
  const auto cell = [&](const std::string& text, size_t c) {
    const std::string pad(width[c] - DisplayWidth(text), ' ');
    return static_cast<int>(c) < left_columns_ ? text + pad : pad + text;
  };
  const char* sep = format == TableFormat::kMarkdown ? " | " : "  ";
  const auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line = format == TableFormat::kMarkdown ? "| " : "";
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) line += sep;
      line += cell(cells[c], c);
    }
    if (format == TableFormat::kMarkdown) line += " |";
    std::fprintf(out, "%s\n", line.c_str());
  };
  print_row(header_);
  std::string rule = format == TableFormat::kMarkdown ? "|" : "";
  for (size_t c = 0; c < header_.size(); ++c) {
    if (format == TableFormat::kMarkdown) {
      const bool left = static_cast<int>(c) < left_columns_;
      rule += left ? absl::StrCat(":", std::string(width[c] + 1, '-'), "|")
                   : absl::StrCat(std::string(width[c] + 1, '-'), ":|");
    } else {
      if (c > 0) rule += sep;
      rule += std::string(width[c], '-');
    }
  }
  std::fprintf(out, "%s\n", rule.c_str());
  for (const auto& row : rows_) print_row(row);
}

std::string FormatNumber(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude >= 100 || magnitude == 0) return absl::StrFormat("%.0f", value);
  if (magnitude >= 10) return absl::StrFormat("%.1f", value);
  if (magnitude >= 1) return absl::StrFormat("%.2f", value);
  return absl::StrFormat("%.3f", value);
}

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 3) {
    bytes /= 1024;
    ++unit;
  }
  const std::string number = bytes == std::floor(bytes)
                                 ? absl::StrFormat("%.0f", bytes)
                                 : absl::StrFormat("%.1f", bytes);
  return absl::StrCat(number, " ", kUnits[unit]);
}

void PrintReportHeader(TableFormat format, const std::string& title,
                       const std::vector<std::string>& lines) {
  const bool markdown = format == TableFormat::kMarkdown;
  std::printf(markdown ? "### %s\n\n" : "%s\n", title.c_str());
  for (const std::string& line : lines) {
    std::printf(markdown ? "- %s\n" : "  %s\n", line.c_str());
  }
  std::printf("\n");
}

absl::StatusOr<TableFormat> ParseTableFormat(absl::string_view name) {
  if (name == "text") return TableFormat::kText;
  if (name == "markdown") return TableFormat::kMarkdown;
  return absl::InvalidArgumentError("--format must be text or markdown");
}

}  // namespace taups::bench

// ReportTable: rows of already-formatted cells printed either as an aligned
// plain-text table (first column left-aligned, the rest right-aligned) or as
// a GitHub markdown table ready to paste into docs/.
//
// Thread-compatible.
#ifndef TAUPS_BENCH_REPORT_TABLE_H_
#define TAUPS_BENCH_REPORT_TABLE_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace taups::bench {

enum class TableFormat { kText, kMarkdown };

// "text" | "markdown" (a --format flag); INVALID_ARGUMENT otherwise.
absl::StatusOr<TableFormat> ParseTableFormat(absl::string_view name);

class ReportTable {
 public:
  // `left_columns`: how many leading columns hold labels (left-aligned).
  ReportTable(std::vector<std::string> header, int left_columns = 1);

  // A row with fewer cells than the header is padded with empty cells.
  void AddRow(std::vector<std::string> cells);

  void Print(TableFormat format, std::FILE* out) const;

 private:
  std::vector<std::string> header_;
  int left_columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Prints a benchmark's title and its description lines (machine, flags,
// units) as a markdown heading with a bullet list, or as indented text,
// followed by a blank line.
void PrintReportHeader(TableFormat format, const std::string& title,
                       const std::vector<std::string>& lines);

// Number formatting shared by the tables: 3 significant digits below 100,
// no decimals above (1.23, 12.3, 123, 12345).
std::string FormatNumber(double value);
// 4096 -> "4 KiB", 16777216 -> "16 MiB", 4718592 -> "4.5 MiB".
std::string FormatBytes(double bytes);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_REPORT_TABLE_H_

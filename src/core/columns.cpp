// Aligned text columns, and the same rows as a Markdown table.
#include "core/columns.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tileforge::columns {

std::string format_columns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) line += "  ";
      const bool r = i < right.size() && right[i];
      line += r ? fmt::format("{:>{}}", row[i], width[i]) : fmt::format("{:<{}}", row[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string format_markdown(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::string out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line = "|";
    for (const std::string& cell : rows[r]) {
      std::string escaped;
      for (char ch : cell) {
        if (ch == '|') escaped += '\\';
        escaped += ch;
      }
      line += " " + escaped + " |";
    }
    out += line + "\n";
    if (r == 0) {
      std::string rule = "|";
      for (std::size_t i = 0; i < rows[0].size(); ++i) rule += i < right.size() && right[i] ? "---:|" : "---|";
      out += rule + "\n";
    }
  }
  return out;
}

}  // namespace tileforge::columns

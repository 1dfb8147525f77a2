// Rows of cells as aligned text columns (the bench, tune and compare tables) or as a Markdown table.
#pragma once

#include <string>
#include <vector>

namespace tileforge::columns {

// Two spaces apart, right-aligned where `right` says so, no trailing blanks, one line each.
std::string format_columns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right);
// The first row as the header, right-aligned columns marked "---:", '|' in a cell escaped.
std::string format_markdown(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right);

}  // namespace tileforge::columns

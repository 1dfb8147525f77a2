// Rows of cells as aligned text columns (the bench and tune tables).
#pragma once

#include <string>
#include <vector>

namespace tileforge::columns {

// Two spaces apart, right-aligned where `right` says so, no trailing blanks, one line each.
std::string format_columns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right);

}  // namespace tileforge::columns

// Tuning reports: every candidate with its prediction, screening time or skip reason, the confirmation, the winner,
// what was measured out of the space, and where the time went; as a table for people or as JSON.
#pragma once

#include <string>
#include <vector>

#include "tune/tune.hpp"

namespace tileforge::tune {

std::string to_table(const std::vector<TuneResult>& results, bool markdown = false);  // markdown: Markdown tables
// {"tool": "tileforge", "tool_version": ..., "results": [ ... one object per tuned problem ... ]}
std::string to_json(const std::vector<TuneResult>& results);

}  // namespace tileforge::tune

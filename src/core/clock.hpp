// Wall-clock stamps for reports: one formatting of "now" for every verb's JSON.
#pragma once

#include <string>

namespace tileforge {

// Now, as ISO 8601 UTC ("2026-11-29T09:12:00Z").
std::string iso_date_now();

}  // namespace tileforge

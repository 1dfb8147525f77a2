// Wall-clock stamps for reports and tuning records: one "YYYY-MM-DDTHH:MM:SSZ" form everywhere.
#pragma once

#include <cstdint>
#include <string>

namespace tileforge {

// Seconds since the epoch as ISO 8601 UTC ("2026-11-29T09:12:00Z"): fixed width, so text order is time order.
std::string iso_time(int64_t unix_seconds);
// Now, in the same form.
std::string iso_date_now();

}  // namespace tileforge

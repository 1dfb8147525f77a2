// Wall-clock stamps for reports and tuning records (clock.hpp).
#include "core/clock.hpp"

#include <ctime>

#include <fmt/format.h>

namespace tileforge {

std::string iso_time(int64_t unix_seconds) {
  const std::time_t t = std::time_t(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

std::string iso_date_now() { return iso_time(int64_t(std::time(nullptr))); }

}  // namespace tileforge

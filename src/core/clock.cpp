// Wall-clock stamps for reports (clock.hpp).
#include "core/clock.hpp"

#include <chrono>
#include <ctime>

namespace tileforge {

std::string iso_date_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace tileforge

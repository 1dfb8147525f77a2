// libFuzzer target: chip records (profile JSON, `--profile FILE`), and planning for every record accepted.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hw/hw.hpp"
#include "plan/planner.hpp"
#include "tileforge/tileforge.hpp"

using namespace tileforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = hw::parse_profile(text, "fuzz.json");
  if (!profile) return 0;
  // A record the parser accepted must survive its own writer: tune and `devices --format json` write records back.
  auto again = hw::parse_profile(hw::to_json(*profile), "fuzz.json (rewritten)");
  if (!again) __builtin_trap();
  // The planner divides and multiplies by the record's numbers: every accepted record must plan without a fault,
  // whatever it decides (an unserved chip and a refusal are both fine).
  Problem p;
  p.m = 96;
  p.n = 80;
  p.k = 64;
  (void)plan::choose_family(*profile, p);
  plan::PlanOptions options;
  options.top_n = 1;
  options.pick_only = true;
  (void)plan::make_plan(p, *profile, options);
  return 0;
}

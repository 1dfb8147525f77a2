// libFuzzer target: `--set NAME=VALUE` values (config parameter parsing), applied by the planner.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/parse.hpp"
#include "hw/hw.hpp"
#include "plan/planner.hpp"
#include "tileforge/tileforge.hpp"

using namespace tileforge;

namespace {

// Records of each served family (the CPU's two ISAs, sm80 and sm90) and one no backend serves.
const std::vector<hw::HwProfile>& profiles() {
  static const std::vector<hw::HwProfile> all = [] {
    std::vector<hw::HwProfile> v;
    for (const char* name : {"generic-avx2", "generic-avx512", "a100-sxm", "h200", "mi300x"}) {
      auto p = hw::load_profile(name);
      if (!p) __builtin_trap();
      v.push_back(std::move(*p));
    }
    return v;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // The first byte picks the chip, the dtype and the layout; each following line is one --set.
  const uint8_t pick = data[0];
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  plan::PlanOptions options;
  options.top_n = 1;
  // Dispatch's own walk (rejected configs counted, not listed): the full sm90 space is ~10M combinations, which a
  // listing plan checks one by one (seconds under ASan: 14 inputs in the CI's 10 s), the pruned walk in
  // milliseconds. Where the pins leave nothing legal it falls back to the full enumeration, which names the rule.
  options.pick_only = true;
  options.legal_only = true;
  while (!text.empty() && options.pins.size() < 8) {
    const std::size_t eol = text.find('\n');
    auto pin = parse_pin(text.substr(0, eol), "--set");
    if (!pin) return 0;
    options.pins.push_back(*pin);
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  const auto& all = profiles();
  const hw::HwProfile& profile = all[pick % all.size()];
  Problem p;
  p.m = 100;
  p.n = 72;
  p.k = 48;
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  const DType in = dtypes[(pick / 8) % 3];
  p.precision = {in, in, DType::f32};
  const Layout layouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  p.layout = layouts[(pick / 32) % 4];
  auto plan = plan::make_plan(p, profile, options);
  // A plan made with pins must honour them: its choice carries every pinned value (the last one, where a name is
  // pinned twice).
  if (plan && plan->choice()) {
    std::map<std::string, int64_t> last(options.pins.begin(), options.pins.end());
    for (const auto& pin : options.pins) last[pin.first] = pin.second;
    for (const auto& [name, value] : last) {
      if (plan->choice()->config.get(name) != value) __builtin_trap();
    }
  }
  return 0;
}

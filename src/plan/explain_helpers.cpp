// Phrases every family's decision log uses: neighbours of the choice, the waves line, ordinals.
#include "plan/explain_helpers.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/format.hpp"

namespace tileforge::plan {
// "BLOCK_K=64: needs ... (predicted -3.1% if allowed); BLOCK_K=16: +8.2% (bound by L2)"
std::string neighbours_of(const Plan& plan, std::initializer_list<const char*> params) {
  std::vector<std::string> parts;
  for (const char* p : params) {
    if (std::any_of(plan.pins.begin(), plan.pins.end(), [&](const auto& pin) { return pin.first == p; })) {
      parts.push_back(fmt::format("{} pinned by --set", p));
      continue;
    }
    for (const Neighbour& n : plan.neighbours) {
      if (n.param != p) continue;
      if (n.legal) {
        parts.push_back(fmt::format("{}={}: {}", n.param, n.value, fmtx::delta(n.delta)));
      } else {
        parts.push_back(fmt::format("{}={}: rejected, {}{}", n.param, n.value, n.detail,
                                    n.delta < -1e-9 ? fmt::format(" (would be {})", fmtx::delta(n.delta)) : ""));
      }
    }
  }
  if (parts.empty()) return {};
  return fmt::format("one step away: {}", fmt::join(parts, "; "));
}

std::string waves_text(const WaveAnalysis& w, int64_t batch, const char* core_name) {
  return fmt::format(
      "{} x {}{} = {} tiles of {}x{} over {} {} x {} = {} slots: {:.2f} waves, last wave {} full; the busiest "
      "one runs {} tiles (balance {}); tail waste M {}, N {}",
      w.tiles_m, w.tiles_n, batch > 1 ? fmt::format(" x {}", batch) : "", w.tiles, w.tile_m, w.tile_n, w.cores,
      core_name, w.occupancy, w.slots, w.waves_exact, fmtx::pct(w.last_wave_fill), w.max_tiles_per_core,
      fmtx::pct(w.core_balance), fmtx::pct(w.waste_m), fmtx::pct(w.waste_n));
}

const LevelTime* find_level(const Cost& c, std::string_view name) {
  for (const LevelTime& l : c.levels)
    if (l.level == name) return &l;
  return nullptr;
}

std::string ordinal(int64_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return fmt::format("a {}{}", n, suffix);
}

}  // namespace tileforge::plan

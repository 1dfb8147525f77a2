// The analytic block-size model of the CPU backend (see blocking.hpp for the reasoning and its source).
#include "backends/cpu/blocking.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "backends/cpu/microkernel.hpp"

namespace tileforge::cpu {
namespace {

constexpr int kFloatBytes = 4;

int64_t round_down(int64_t v, int64_t to) { return std::max<int64_t>(to, v / to * to); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

CacheGeometry cache_geometry(const hw::HwProfile& profile, int level) {
  CacheGeometry g;
  const hw::CacheLevel* c = profile.cache(level);
  if (!c) {
    g.size_bytes = 0;
    return g;
  }
  g.size_bytes = c->size_bytes;
  if (c->ways > 0) g.ways = c->ways;
  if (c->line_bytes > 0) g.line_bytes = c->line_bytes;
  // NOTE: parse_profile refuses such records (hw::find_implausible), but a profile detected or built in code is not
  // parsed: a cache without one set (smaller than ways x line, e.g. 4 KiB with the default 8 ways of 1 KiB lines)
  // would divide by zero below, and one beyond the bounds would overflow int64_t. It is treated as absent.
  if (!hw::bounds::cache_size_bytes.admits(double(g.size_bytes)) || !hw::bounds::cache_ways.admits(g.ways) ||
      !hw::bounds::cache_line_bytes.admits(g.line_bytes) || g.sets() < 1) {
    g.size_bytes = 0;
  }
  return g;
}

BlockSizes choose_register_block(std::string_view family, const hw::HwProfile& profile) {
  BlockSizes best;
  const int regs = vector_registers(family);
  const int lanes = vector_floats(family);
  // Independent accumulators that keep the FMA pipes busy: pipes x latency, from the chip record. A record without
  // them leaves latency cover unchecked (every kernel counts as covering it) rather than assuming a core.
  const int pipes = profile.fma_pipes, latency = profile.fma_latency_cycles;
  const bool known = pipes > 0 && latency > 0;
  double best_intensity = -1;
  for (const MicroKernel& k : microkernels_for(family)) {
    const int accumulators = k.mr * k.nr / lanes;
    const int used = accumulators + k.nr / lanes + 1;
    if (used > regs) continue;
    const bool hides_latency = !known || accumulators >= pipes * latency;
    // Prefer kernels that hide latency; among equals, the most FLOPs per element loaded.
    const double intensity = double(k.mr) * k.nr / (k.mr + k.nr) + (hides_latency ? 1000.0 : 0.0);
    if (intensity > best_intensity) {
      best_intensity = intensity;
      best.mr = k.mr;
      best.nr = k.nr;
    }
  }
  const std::string cover = known ? fmt::format("cover {} FMA pipes x {} cycles of latency", pipes, latency)
                                  : std::string("(latency cover unchecked: the profile records no fma_pipes and "
                                                "fma_latency_cycles)");
  best.reasons.push_back(fmt::format(
      "MR x NR = {} x {}: {} accumulators + {} B vectors + 1 broadcast fit {} vector registers, {}, and give the most "
      "FLOPs per element loaded of the {} micro-kernels",
      best.mr, best.nr, best.mr * best.nr / lanes, best.nr / lanes, regs, cover, family));
  return best;
}

BlockSizes analytic_block_sizes(const hw::HwProfile& profile, std::string_view family, int threads) {
  BlockSizes b = choose_register_block(family, profile);
  // At least 1: a family without micro-kernels leaves MR x NR at 0, which the formulas below divide by.
  const int64_t mr = std::max(b.mr, 1), nr = std::max(b.nr, 1);
  // At most the bound on cores: the threads' A blocks are summed below, and a larger count would overflow.
  threads = std::clamp(threads, 1, int(hw::bounds::threads.max));

  // L1: ways for the streaming A micro-panel, C_Ar = floor((W - 1) / (1 + NR/MR)); one way stays for C.
  // KC = C_Ar * sets * line / (MR * S), so that each A micro-panel takes C_Ar ways and B the rest.
  const CacheGeometry l1 = cache_geometry(profile, 1);
  if (l1.size_bytes > 0) {
    const int64_t c_ar = std::max<int64_t>(1, int64_t(std::floor((l1.ways - 1) / (1.0 + double(nr) / mr))));
    const int64_t kc = c_ar * l1.sets() * l1.line_bytes / (mr * kFloatBytes);
    b.kc = round_down(kc, 8);
    b.reasons.push_back(fmt::format(
        "KC = {}: L1 {} KB, {} ways x {} sets of {} B; A micro-panels take C_Ar = floor(({} - 1) / (1 + {}/{})) = {} "
        "way(s), KC = C_Ar * sets * line / (MR * 4 B) = {}, rounded down to a multiple of 8; the {} x {} B "
        "micro-panel ({} KB) stays in the remaining ways",
        b.kc, l1.size_bytes / 1024, l1.ways, l1.sets(), l1.line_bytes, l1.ways, nr, mr, c_ar, kc, b.kc, nr,
        b.kc * nr * kFloatBytes / 1024));
  } else {
    b.kc = 256;
    b.reasons.push_back("KC = 256: the profile records no usable L1 data cache; BLIS's usual default");
  }

  // L2 (private per core): the MC x KC block of A takes the ways not needed by the KC x NR micro-panel of B
  // (C_Bc ways) and one way for C: MC = (W - 1 - C_Bc) * sets * line / (KC * S).
  const CacheGeometry l2 = cache_geometry(profile, 2);
  if (l2.size_bytes > 0) {
    const int64_t way_bytes = l2.sets() * l2.line_bytes;
    const int64_t c_bc = ceil_div(b.kc * nr * kFloatBytes, way_bytes);
    const int64_t ways_a = std::max<int64_t>(1, l2.ways - 1 - c_bc);
    const int64_t mc = ways_a * way_bytes / (b.kc * kFloatBytes);
    b.mc = round_down(mc, mr);
    b.reasons.push_back(fmt::format(
        "MC = {}: L2 {} KB per core, {} ways; B micro-panel takes {} way(s), C one, A block the other {}: "
        "MC = {} * {} B / (KC * 4 B) = {}, rounded down to a multiple of MR",
        b.mc, l2.size_bytes / 1024, l2.ways, c_bc, ways_a, ways_a, way_bytes, mc));
  } else {
    b.mc = round_down(96, mr);
    b.reasons.push_back(fmt::format("MC = {}: the profile records no usable L2; a conservative default", b.mc));
  }

  // L3 (shared): the KC x NC panel of B, shared by all threads, takes the ways not held by the threads'
  // MC x KC blocks of A. Without an L3, the panel is sized for L2 instead.
  const CacheGeometry l3 = cache_geometry(profile, 3);
  const hw::CacheLevel* l3rec = profile.cache(3);
  if (l3.size_bytes > 0) {
    const int64_t way_bytes = l3.sets() * l3.line_bytes;
    const int sharing = std::clamp<int>(l3rec && l3rec->shared_by > 0 ? l3rec->shared_by : threads, 1, threads);
    const int64_t c_ac = ceil_div(sharing * b.mc * b.kc * kFloatBytes, way_bytes);
    const int64_t ways_b = std::max<int64_t>(1, l3.ways - 1 - c_ac);
    const int64_t nc = ways_b * way_bytes / (b.kc * kFloatBytes);
    b.nc = round_down(std::min<int64_t>(nc, 16384), nr);
    b.reasons.push_back(fmt::format(
        "NC = {}: L3 {} MB, {} ways; {} thread(s)' A blocks take {} way(s), C one, the B panel {}: NC = {} * {} B / "
        "(KC * 4 B) = {}, capped at 16384 and rounded down to a multiple of NR",
        b.nc, l3.size_bytes >> 20, l3.ways, sharing, c_ac, ways_b, ways_b, way_bytes, nc));
  } else {
    b.nc = round_down(std::max<int64_t>(nr, l2.size_bytes / 2 / std::max<int64_t>(1, b.kc * kFloatBytes)), nr);
    b.reasons.push_back(fmt::format("NC = {}: the profile records no L3; the B panel takes half of L2", b.nc));
  }
  return b;
}

}  // namespace tileforge::cpu

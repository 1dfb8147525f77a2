// The steps of the cpu families' cost model: the blocks on the problem, the register level, where the blocks live,
// the bytes each level moves and the packing phase (CpuFamily::cost in cpu_family.cpp combines them).
#include "backends/cpu/cpu_cost.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backends/cpu/cpu_cost_constants.hpp"
#include "core/int_math.hpp"

namespace tileforge::cpu {
namespace {

using namespace constants;

constexpr double kPackedBytes = 4.0;  // packed panels (and the micro-kernel's C) hold f32

// The ways of cache `g` that `bytes` take.
double ways(double bytes, const CacheGeometry& g) {
  const double way = double(std::max<int64_t>(1, g.sets() * g.line_bytes));
  return std::ceil(bytes / way);
}

}  // namespace

CostBlocks cost_blocks(const Problem& q, int64_t mr, int64_t nr, int64_t kc, int64_t mc, int64_t nc, bool pack_b,
                       int threads) {
  CostBlocks b;
  b.mr = mr;
  b.nr = nr;
  b.pack_b = pack_b;
  b.t = threads;
  const int64_t m_panels = cdiv(q.m, mr);
  b.nc_eff = std::min(nc, q.n);
  b.n_panels = cdiv(b.nc_eff, nr);
  b.split = work_split(q, mr, nr, mc, nc, pack_b, threads);
  b.kc_eff = std::min(kc, q.k);
  b.mc_eff = std::min(mc, b.split.rows);
  b.mp = double(m_panels * mr);
  // Every full NC panel pads to whole NR-panels, and so does the last, partial one.
  b.np = double((q.n / nc) * cdiv(nc, nr) * nr + cdiv(q.n % nc, nr) * nr);
  b.k = double(q.k);
  b.batch = double(q.batch);
  b.in = double(size_of(q.precision.input));
  return b;
}

double micro_kernel_flops_per_cycle(const hw::HwProfile& profile, int64_t mr, int64_t nr, int lanes) {
  const double fma_k = double(mr * nr / lanes) / double(profile.fma_pipes);
  const double load_k = double(mr + nr / lanes) / double(profile.load_ports_per_cycle);
  const double cycles_k = std::max({fma_k, load_k, double(profile.fma_latency_cycles)});
  return 2.0 * double(mr * nr) / cycles_k;
}

CacheFit cache_fit(const CostBlocks& b, const CacheGeometry& g1, const CacheGeometry& g2, const CacheGeometry& g3,
                   int l3_shared_by) {
  const double f = kPackedBytes;
  const int64_t kc_eff = b.kc_eff, mc_eff = b.mc_eff, nr = b.nr, mr = b.mr;
  const int t = b.t;
  CacheFit fit;
  fit.b_in_l1 = g1.size_bytes > 0 && ways(double(kc_eff * nr) * f, g1) + ways(double(kc_eff * mr) * f, g1) + 1 <= g1.ways;
  fit.a_in_l2 = g2.size_bytes > 0 && ways(double(mc_eff * kc_eff) * f, g2) + ways(double(kc_eff * nr) * f, g2) + 1 <= g2.ways;
  const int shared_by = l3_shared_by > 0 ? l3_shared_by : t;
  fit.sharing = std::min(t, shared_by);
  fit.has_l3 = g3.size_bytes > 0;
  // A team on fewer cores than share an L3 can count only on its cores' share of it: the other cores (or, in a
  // virtual machine, other guests on the same socket) fill the rest. (Measured on a 16-core Emerald Rapids guest
  // with a 300 MB L3, two threads at 4096^3: 6x64 KC 160, with 2.6x the KC passes over C's 64 MB, ran behind
  // 12x32 KC 432 in both calls that compared them; the whole L3 would have held C and made them equal.)
  fit.l3_share = std::min(1.0, double(t) / double(std::max(1, shared_by)));
  fit.b_in_l3 = fit.has_l3 && ways(double(kc_eff * b.nc_eff) * f, g3) +
                                      ways(double(fit.sharing * mc_eff * kc_eff) * f, g3) + 1 <=
                                  g3.ways;
  return fit;
}

InPlaceRows in_place_rows(const Problem& q, const CostBlocks& b, const CacheGeometry& g1, const CacheGeometry& g2,
                          const CacheGeometry& g3) {
  InPlaceRows r;
  if (b.pack_b) return r;
  // In 128 bits: a legal ldb can be near INT64_MAX (B of one row, k = 1), and its bytes then exceed int64_t.
  const unsigned __int128 stride = static_cast<unsigned __int128>(q.ldb) * size_of(q.precision.input);
  // Set conflicts included: rows a multiple of a line apart map to as many sets as the stride's step reaches.
  auto rows_fit = [&](const CacheGeometry& g) {
    if (g.size_bytes <= 0) return false;
    const int64_t sets = g.sets(), line = g.line_bytes;
    int64_t distinct = sets;
    if (stride % line == 0) {
      const int64_t set_step = int64_t(stride / line % sets);
      distinct = sets / std::gcd(sets, set_step == 0 ? sets : set_step);
    }
    const double lines_per_row = std::ceil(double(b.nr) * b.in / double(line));
    return double(distinct) * double(g.ways - 1) / lines_per_row >= double(b.kc_eff);
  };
  r.level = rows_fit(g1) ? 1 : rows_fit(g2) ? 2 : rows_fit(g3) ? 3 : 4;
  r.stride_bytes = double(stride);
  return r;
}

Traffic memory_traffic(const Problem& q, const CostBlocks& b, const CacheFit& fit, int in_place_level,
                       const CacheGeometry& g1, const CacheGeometry& g2, const CacheGeometry& g3) {
  const double f = kPackedBytes;
  const double mp = b.mp, np = b.np, k = b.k, batch = b.batch;
  const int64_t mr = b.mr, nr = b.nr, kc_eff = b.kc_eff, mc_eff = b.mc_eff, nc_eff = b.nc_eff;
  const int64_t rows_per_thread = b.split.rows;
  const int tm = b.split.row_blocks;
  const bool pack_b = b.pack_b;
  Traffic tr;
  // B rows read in place from DRAM: charged at the per-core rate of rows far apart (kInPlaceDramBytesPerCycle).
  // A micro-panel row of NR floats that does not fill whole lines touches more lines than it uses: 24 floats
  // (96 B) span two lines, 8 floats (32 B) use half of one. The neighbouring panel finds the rest in cache, so the
  // extra lines are charged at half weight. (Measured at 16x4096x4096 in place: the fastest NR=16 config 5.70 ms,
  // NR=24 6.86 (1.20x; charged 1.17x), NR=8 7.26 (1.27x; charged 1.5x).)
  const double line = double(g1.line_bytes > 0 ? g1.line_bytes : 64);
  const double row_bytes = double(nr) * b.in;
  const double straddle = 1.0 + 0.5 * (std::ceil(row_bytes / line) * line / row_bytes - 1.0);
  // A micro-panels stream into the micro-kernel once per NR-panel of B: from L2, or L3 when the block spills.
  const double a_stream = f * mp * k * (np / double(nr)) * batch;
  (fit.a_in_l2 ? tr.l2_bytes : tr.l3_bytes) += a_stream;
  // A B micro-panel that does not stay in L1 is reloaded from L2 for every MR-panel of A.
  if (pack_b && !fit.b_in_l1) tr.l2_bytes += f * k * np * (mp / double(mr)) * batch;
  // The B panel is first touched once per MC block of every row block: from L3, or DRAM when it spills
  // (or when B is read in place, unpacked).
  const double b_touch = f * k * np * double(b.split.row_units * cdiv(rows_per_thread, mc_eff)) * batch;
  if (!pack_b && tm > 1 && fit.sharing >= tm) {
    // B read in place by row-split threads that share the L3: they walk the same rows of B at the same time, so
    // one of them brings each line from memory and the others find it in L3. (Measured on the project's AVX2
    // machine at 16x4096x4096: MR=4, two threads on 8 rows each over all of B, 6.1 ms; charged twice from DRAM the
    // model predicted 7.8 ms and ranked it 151st.)
    tr.in_place_dram_bytes += b_touch / double(tm) * straddle;
    tr.l3_bytes += b_touch - b_touch / double(tm);
  } else if (!pack_b) {
    tr.in_place_dram_bytes += b_touch * straddle;
  } else {
    (fit.b_in_l3 ? tr.l3_bytes : tr.dram_bytes) += b_touch;
  }
  // B read in place: the micro-kernel prefetches the next panel's rows a whole panel ahead, so the first touch
  // (counted above) exposes no latency, but every MR-panel of A re-reads the KC x NR micro-panel from the level
  // that holds its rows. Few rows of A (skinny problems) make that cheap; many make packing B win. (Measured on
  // the project's AVX2 machine: in place 75 against packed 54 GFLOP/s at 16x4096x4096, and 2-3x slower at 1024^3.)
  // The re-reads follow the first read within about a microsecond, so they are charged to L2 even when set
  // conflicts would evict the rows further (calibrated to the measurements above).
  if (!pack_b && in_place_level > 1) tr.l2_bytes += f * k * np * (mp / double(mr)) * batch;
  // C: every KC pass loads and stores each micro-tile (the first pass does not read it when beta == 0).
  const double passes_k = double(cdiv(q.k, kc_eff));
  const double c_bytes = f * double(q.m) * double(q.n) * (2.0 * passes_k - 1.0) * batch;
  const double c_thread = double(rows_per_thread) * double(cdiv(b.n_panels, b.split.col_parts) * nr) * f;
  if (g2.size_bytes > 0 && c_thread + double(mc_eff * kc_eff) * f <= double(g2.size_bytes)) {
    tr.l2_bytes += c_bytes;
  } else if (fit.has_l3 && fit.sharing * c_thread + double(kc_eff * nc_eff + fit.sharing * mc_eff * kc_eff) * f <=
                               double(g3.size_bytes) * fit.l3_share) {
    tr.l3_bytes += c_bytes;
  } else {
    tr.dram_bytes += c_bytes;
  }
  // 16-bit C: one pass converts the f32 workspace (and reads C when beta != 0).
  const double out = double(size_of(q.precision.output));
  if (q.precision.output != DType::f32) {
    tr.dram_bytes += double(q.m) * double(q.n) * (f + out + (q.beta != 0.0 ? out : 0.0)) * batch;
  }
  return tr;
}

Packing packing_cost(const Problem& q, const CostBlocks& b, bool has_l3, const CacheGeometry& g3, int l3_shared_by,
                     int cores, const PackRates& rates) {
  // Packing runs between micro-kernel calls: A once per work unit and K block (its rows, the split's a_packs times
  // in all), B once per (chunk, KC) block by whichever threads reach it first. The source is DRAM unless the
  // operand fits in the L3s.
  // The L3s the team's threads sit on (one per shared_by cores; a team smaller than the chip reaches fewer).
  const int t = b.t;
  const double k = b.k, in = b.in, batch = b.batch;
  const int per_l3 = std::max(1, l3_shared_by > 0 ? l3_shared_by : cores);
  const int team_l3s = std::clamp((t + per_l3 - 1) / per_l3, 1, std::max(1, cores / per_l3));
  const double l3_total = has_l3 ? double(g3.size_bytes) * team_l3s : 0.0;
  const double pack_rate = double(t) * kPackVectorsPerCycle * rates.vec_bytes * rates.clock;
  const double a_read = double(q.m) * k * in * double(b.split.a_packs) * batch;
  const double b_read = b.pack_b ? k * double(q.n) * in * batch : 0.0;
  const bool a_from_dram = double(q.m) * k * in > l3_total, b_from_dram = k * double(q.n) * in > l3_total;
  const double pack_dram_bw = std::min(rates.dram_bw, double(t) * kPackDramBytesPerCycle * rates.clock);
  const double a_src = a_from_dram ? rates.dram_bw : rates.l3_bw, b_src = b_from_dram ? pack_dram_bw : rates.l3_bw;
  Packing p;
  p.fill_s = a_read / std::min(pack_rate, a_src) + b_read / std::min(pack_rate, b_src);
  p.a_dram_bytes = a_from_dram ? a_read : 0.0;
  p.b_dram_bytes = b_from_dram ? b_read : 0.0;
  return p;
}

}  // namespace tileforge::cpu

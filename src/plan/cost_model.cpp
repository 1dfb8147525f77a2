// The analytic cost model for the sm80 GPU family and the cpu families (see cost_model.hpp and cost_constants.hpp).
#include "plan/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <list>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "backends/cpu/blocking.hpp"
#include "backends/cpu/microkernel.hpp"
#include "backends/cuda/sm80_family.hpp"
#include "plan/cost_constants.hpp"
#include "plan/format.hpp"

namespace tileforge::plan {
namespace {

using namespace constants;

int64_t cdiv(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }
int64_t param(const Config& c, const char* name) {
  auto v = c.get(name);
  return v ? *v : 0;
}

double vec_share(int64_t vec) {
  if (vec >= 16) return kVecLoadShare16;
  if (vec >= 8) return kVecLoadShare8;
  if (vec >= 4) return kVecLoadShare4;
  return kVecLoadShare2;
}

struct Term {
  const char* name;
  double seconds;
  bool stream;  // a flow of work or bytes (leaks when it does not bind); latency is a bound, not a flow
};

// body = the largest term + kOverlapLeak x the streams other than the largest stream.
void combine(Cost& cost, const std::vector<Term>& terms) {
  double top = -1, top_stream = 0, streams = 0;
  for (const Term& t : terms) {
    if (t.seconds > top) {
      top = t.seconds;
      cost.bound = t.name;
    }
    if (t.stream) {
      streams += t.seconds;
      top_stream = std::max(top_stream, t.seconds);
    }
  }
  cost.body_s = std::max(0.0, top) + kOverlapLeak * (streams - top_stream);
}

Cost invalid_cost(std::string why) {
  Cost c;
  c.valid = false;
  c.seconds = std::numeric_limits<double>::infinity();
  c.notes.push_back(std::move(why));
  return c;
}

}  // namespace

// ---- sm80 ---------------------------------------------------------------------------------------------------------

Sm80Occupancy sm80_occupancy(const Config& c, const hw::HwProfile& profile) {
  const int threads = std::max(32, cuda::sm80_threads(c));
  const int64_t smem_sm = profile.smem_per_core_bytes > 0 ? profile.smem_per_core_bytes : 100 * 1024;
  const int64_t regs_sm = profile.registers_per_core > 0 ? profile.registers_per_core : 65536;
  const int64_t threads_sm = profile.max_threads_per_core > 0 ? profile.max_threads_per_core : 2048;
  // Registers are allocated per thread in units of 8.
  const int64_t regs = (int64_t(cuda::sm80_register_estimate(c, profile.arch)) + 7) / 8 * 8 * threads;
  const int64_t smem = cuda::sm80_smem_bytes(c) + int64_t(kSmemReservedPerBlock);
  const std::pair<int64_t, const char*> limits[] = {
      {smem_sm / std::max<int64_t>(1, smem), "shared memory"},
      {regs_sm / std::max<int64_t>(1, regs), "registers"},
      {threads_sm / threads, "threads"},
      {max_blocks_per_sm(profile.arch), "blocks per SM"},
  };
  Sm80Occupancy o{int(limits[0].first), limits[0].second};
  for (const auto& [n, why] : limits) {
    if (n < o.blocks) o = {int(n), why};
  }
  return o;
}

double sm80_operand_dram_bytes(const Problem& problem, const hw::HwProfile& profile, int64_t bm, int64_t bn,
                               int64_t group_m, int occupancy, DramCache* cache) {
  const auto key = std::make_tuple(bm, bn, group_m, occupancy);
  if (cache) {
    if (auto it = cache->find(key); it != cache->end()) return it->second;
  }
  const Problem q = problem.normalized();
  const double in = double(size_of(q.precision.input));
  const int64_t grid_m = cdiv(q.m, bm), grid_n = cdiv(q.n, bn);
  const int64_t per_batch = grid_m * grid_n, total = per_batch * q.batch;
  double bytes = 0;
  if (total > 0 && q.k > 0) {
    const int64_t slots = int64_t(std::max(1, profile.cores)) * std::max(1, occupancy);
    const hw::CacheLevel* l2 = profile.cache(2);
    const double capacity = l2 ? double(l2->size_bytes) * kL2UsableShare : 0.0;
    // LRU of operand panels (a row panel of A or a column panel of B of one batch entry) over the usable L2.
    std::list<int64_t> lru;
    std::unordered_map<int64_t, std::pair<std::list<int64_t>::iterator, double>> resident;
    double used = 0;
    auto panel_bytes = [&](int64_t key) {
      const bool is_b = key & 1;
      const int64_t idx = (key >> 1) % (is_b ? grid_n : grid_m);
      const int64_t rows = is_b ? std::min(bn, q.n - idx * bn) : std::min(bm, q.m - idx * bm);
      return double(rows) * double(q.k) * in;
    };
    const int64_t waves = cdiv(total, slots);
    const int64_t simulated = std::min<int64_t>(waves, kSimulatedWaves);
    int64_t tiles_seen = 0;
    std::vector<int64_t> keys;
    for (int64_t w = 0; w < simulated; ++w) {
      keys.clear();
      const int64_t first = w * slots, last = std::min(total, first + slots);
      for (int64_t id = first; id < last; ++id) {
        // The kernel's group-M raster (gemm.cuh): GROUP_M row-blocks walked column by column; batch in grid y.
        const int64_t b = id / per_batch, pid = id % per_batch;
        const int64_t width = group_m * grid_n;
        const int64_t group = pid / width, first_m = group * group_m;
        const int64_t size = std::min(grid_m - first_m, group_m);
        const int64_t pid_m = first_m + (pid % width) % size, pid_n = (pid % width) / size;
        keys.push_back(((b * grid_m + pid_m) << 1) | 0);
        keys.push_back(((b * grid_n + pid_n) << 1) | 1);
      }
      tiles_seen += last - first;
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      // Blocks of one wave run side by side at similar k: a panel they share is read from DRAM once.
      for (int64_t k : keys) {
        if (auto it = resident.find(k); it != resident.end()) {
          lru.splice(lru.begin(), lru, it->second.first);
          continue;
        }
        const double pb = panel_bytes(k);
        bytes += pb;
        lru.push_front(k);
        resident[k] = {lru.begin(), pb};
        used += pb;
      }
      while (used > capacity && !lru.empty()) {
        const int64_t victim = lru.back();
        used -= resident[victim].second;
        resident.erase(victim);
        lru.pop_back();
      }
    }
    if (tiles_seen > 0 && tiles_seen < total) bytes *= double(total) / double(tiles_seen);
  }
  if (cache) (*cache)[key] = bytes;
  return bytes;
}

Cost sm80_cost(const Problem& problem, const hw::HwProfile& profile, const Config& cfg, DramCache* cache) {
  const Problem q = problem.normalized();
  const PeakChoice peak = peak_for(q, profile);
  if (!peak.tflops || *peak.tflops <= 0) return invalid_cost(peak.note);
  if (profile.mem_bandwidth_gbps <= 0) return invalid_cost("the profile records no memory bandwidth");
  Cost c;
  const double in = double(size_of(q.precision.input)), out = double(size_of(q.precision.output));
  const int64_t bm = param(cfg, "BLOCK_M"), bn = param(cfg, "BLOCK_N"), bk = param(cfg, "BLOCK_K");
  const int64_t wm = std::max<int64_t>(1, param(cfg, "WARPS_M")), wn = std::max<int64_t>(1, param(cfg, "WARPS_N"));
  const int64_t stages = std::max<int64_t>(1, param(cfg, "STAGES")), group_m = std::max<int64_t>(1, param(cfg, "GROUP_M"));
  const bool copy = param(cfg, "COPY_AB") != 0;
  const int64_t vec = copy ? 16 : param(cfg, "VEC_BYTES");
  const int64_t sms = std::max(1, profile.cores);
  const double clock = profile.boost_clock_ghz > 0 ? profile.boost_clock_ghz * 1e9 : 1.4e9;
  if (profile.boost_clock_ghz <= 0) c.notes.push_back("the profile records no clock: 1.4 GHz assumed");

  const Sm80Occupancy occ = sm80_occupancy(cfg, profile);
  c.occupancy = std::max(1, occ.blocks);
  c.occupancy_limit = occ.limit;
  c.waves = analyze_waves(q, sms, c.occupancy, bm, bn, bk);
  c.overhead_s = kGpuLaunchSeconds;
  const double dram_bw = profile.mem_bandwidth_gbps * 1e9 * kDramEfficiency;
  if (copy) {
    // Two extra kernels copy A and B into 16-byte-aligned buffers: a read and a write of each.
    const double bytes = 2.0 * (double(q.m) * q.k + double(q.k) * q.n) * in * double(q.batch);
    c.overhead_s += bytes / dram_bw + 2 * kGpuLaunchSeconds;
    c.dram_bytes += bytes;
  }
  if (c.waves.tiles == 0 || q.k == 0) {
    c.seconds = c.overhead_s;
    c.bound = "launch";
    return c;
  }

  const double share = profile.has("wgmma") ? kMmaSyncShareWithWgmma : kMmaSyncShareNative;
  const double rate_sm = *peak.tflops * 1e12 * share / double(sms);
  const int64_t per_sm = c.waves.max_tiles_per_core;
  const int64_t active = std::min<int64_t>(c.occupancy, per_sm);
  const double warp_factor = std::min(1.0, double(active * wm * wn) / kWarpsForFullRate) *
                             std::min(1.0, double(wm * wn) / kWarpsPerBlockForFullRate);
  const double kp = double(c.waves.k_steps * bk);
  const double flops_tile = 2.0 * double(bm) * double(bn) * kp;
  const double sync_s = double(c.waves.k_steps) * kKStepSyncCycles / clock / double(active);
  // Without fragment double-buffering the warp waits for every k-step's ldmatrix and every barrier.
  const double pipe_slowdown = param(cfg, "FRAG_PIPE") != 0 ? 1.0 : kFragPipeOffSlowdown;
  c.compute_s = double(per_sm) * (flops_tile / (rate_sm * warp_factor) + sync_s) * pipe_slowdown;
  // Tiles that stick out of M or N (and, with copies narrower than 8 bytes, every tile) fetch their k-tiles through
  // the bounds-checked path: latency-bound integer work per thread, which other resident blocks hide. The SM that
  // gets the most of them waits for it on top of its tensor work.
  {
    const int64_t tiles_m = q.m / bm, tiles_n = q.n / bn;
    const int64_t interior = vec >= 8 ? tiles_m * tiles_n * q.batch : 0;
    const int64_t edge = c.waves.tiles - interior;
    if (edge > 0) {
      const int64_t edge_per_sm = std::min<int64_t>(per_sm, cdiv(edge, sms));
      const double chunks_per_thread = double((bm + bn) * bk) * in / double(std::max<int64_t>(vec, 2)) /
                                       double(32 * wm * wn);
      const double checked_fetches = double(std::max<int64_t>(0, c.waves.k_steps - (stages - 1)));
      const double checked_s = double(edge_per_sm) * checked_fetches * chunks_per_thread *
                               kCheckedCopyCyclesPerChunk / clock / double(active);
      c.compute_s += checked_s;
      if (checked_s > 0.05 * c.compute_s) {
        c.notes.push_back(fmt::format("{} of {} tiles stick out of the matrix and copy through the bounds-checked path: "
                                      "{:.3g} us on the busiest SM ({:.0f} chunks per thread per k-tile)",
                                      edge, c.waves.tiles, checked_s * 1e6, chunks_per_thread));
      }
    }
  }
  c.compute_share = q.flops() / c.compute_s / (*peak.tflops * 1e12);

  // Shared memory: ldmatrix reads (each warp reads its rows of A and columns of B) plus the cp.async writes.
  const double smem_tile =
      double(c.waves.k_steps) * (double(wn * bm * bk + wm * bk * bn) * in + double((bm + bn) * bk) * in);
  const double smem_bw = kSmemBytesPerSmCycle * clock;
  const double smem_s = double(per_sm) * smem_tile / smem_bw * pipe_slowdown;

  // L2 -> SM: every block loads its A rows and B columns over the whole K.
  const double stage_bytes = double((bm + bn) * bk) * in;
  const double l2_tile = stage_bytes * double(c.waves.k_steps);
  const double l2_bw_sm =
      (profile.has("wgmma") ? kL2BytesPerSmCycleHopper : kL2BytesPerSmCycle) * clock * vec_share(vec);
  const double l2_total = double(c.waves.tiles) * l2_tile;
  const double l2_s = std::max(l2_total / (l2_bw_sm * double(sms)), double(per_sm) * l2_tile / l2_bw_sm);

  // Little's law: the stages in flight (one when 2-byte loads cannot be asynchronous) over the loaded latency.
  const double in_flight_stages = (vec <= 2) ? 1.0 : double(std::max<int64_t>(1, stages - 1));
  const double in_flight = double(active) * in_flight_stages * stage_bytes;
  c.latency_s = double(per_sm) * l2_tile / (in_flight / kLoadedLatencySeconds) * pipe_slowdown;

  // DRAM: A and B panels as the raster and L2 let them through, C written (and read when beta != 0).
  const double operand_bytes = sm80_operand_dram_bytes(q, profile, bm, bn, group_m, c.occupancy, cache);
  const double c_bytes = double(q.m) * double(q.n) * out * double(q.batch) * (q.beta != 0.0 ? 2.0 : 1.0);
  const double dram = operand_bytes + c_bytes;
  c.dram_bytes += dram;
  const double dram_s = dram / dram_bw;

  c.levels = {{"HBM", dram, dram_bw, dram_s},
              {"L2", l2_total, l2_bw_sm * double(sms), l2_s},
              {"shared memory", smem_tile * double(c.waves.tiles), smem_bw * double(sms), smem_s}};
  combine(c, {{"compute", c.compute_s, true},
              {"HBM", dram_s, true},
              {"L2", l2_s, true},
              {"shared memory", smem_s, true},
              {"latency", c.latency_s, false}});

  // Each round of resident blocks waits for its first stage, then issues the rest of the prologue.
  const int64_t rounds = cdiv(per_sm, c.occupancy);
  c.fill_s = double(rounds) * (kLoadedLatencySeconds + double(stages - 1) * stage_bytes / l2_bw_sm);
  c.seconds = c.body_s + c.fill_s + c.overhead_s;
  return c;
}

// ---- cpu ----------------------------------------------------------------------------------------------------------

std::pair<int, int> cpu_thread_grid(int64_t m, int mr, int threads) {
  // As the driver's rows_split: rows go to as many threads as divide the team and get two MR-panels each.
  threads = std::max(1, threads);
  const int64_t m_panels = cdiv(m, mr);
  for (int d = threads; d > 1; --d)
    if (threads % d == 0 && m_panels >= 2 * d) return {d, threads / d};
  return {1, threads};
}

Cost cpu_cost(const Problem& problem, const hw::HwProfile& profile, const Config& cfg, int threads) {
  const Problem q = problem.normalized();
  const PeakChoice peak = peak_for(q, profile);
  if (!peak.tflops || *peak.tflops <= 0) return invalid_cost(peak.note);
  Cost c;
  const std::string& family = cfg.family;
  const int64_t mr = std::max<int64_t>(1, param(cfg, "MR")), nr = std::max<int64_t>(1, param(cfg, "NR"));
  const int64_t kc = std::max<int64_t>(1, param(cfg, "KC")), mc = std::max<int64_t>(1, param(cfg, "MC"));
  const int64_t nc = std::max<int64_t>(1, param(cfg, "NC"));
  const bool pack_b = param(cfg, "PACK_B") != 0 || q.precision.input != DType::f32 || !b_row_major(q.layout);
  const int lanes = cpu::vector_floats(family);
  const int hw_lanes = profile.vector_bits >= 128 ? profile.vector_bits / 32 : lanes;
  const int cores = std::max(1, profile.cores);
  const int t = threads > 0 ? threads : cores;
  const double in = double(size_of(q.precision.input));
  // The recorded peak implies the clock the FMA pipes run at under all-core load.
  const double core_peak = *peak.tflops * 1e12 / cores;
  const double clock = core_peak / (2.0 * hw_lanes * kFmaPipes);
  const double batch = double(q.batch);
  c.overhead_s = t > 1 ? kCpuCallSeconds : 0.0;
  c.waves = analyze_waves(q, t, 1, mr, nr, std::min(kc, std::max<int64_t>(1, q.k)));
  if (q.m == 0 || q.n == 0 || q.k == 0) {
    c.seconds = c.overhead_s;
    c.bound = "call";
    return c;
  }

  // The driver's thread grid and its balance.
  const auto [tm, tn] = cpu_thread_grid(q.m, int(mr), t);
  const int64_t m_panels = cdiv(q.m, mr), panels_per_row_thread = cdiv(m_panels, tm);
  const double balance_m = double(m_panels) / double(tm * panels_per_row_thread);
  const int64_t nc_eff = std::min(nc, q.n);
  const int64_t n_panels = cdiv(nc_eff, nr);
  const double balance_n = double(n_panels) / double(tn * cdiv(n_panels, tn));
  const int64_t kc_eff = std::min(kc, q.k);
  const int64_t rows_per_thread = panels_per_row_thread * mr;
  const int64_t mc_eff = std::min(mc, rows_per_thread);
  const double mp = double(m_panels * mr);
  const double np = double((q.n / nc) * cdiv(nc, nr) * nr + cdiv(q.n % nc, nr) * nr);
  const double k = double(q.k);
  const double padded_flops = 2.0 * mp * np * k * batch;

  // Register level: FMA issue, load ports (broadcasts of A and vectors of B) and the FMA latency chain.
  const double fma_k = double(mr * nr / lanes) / kFmaPipes;
  const double load_k = double(mr + nr / lanes) / kLoadPortsPerCycle;
  const double cycles_k = std::max({fma_k, load_k, kFmaLatencyCycles});
  const double flops_per_cycle = 2.0 * double(mr * nr) / cycles_k;
  c.compute_s = padded_flops / (double(t) * flops_per_cycle * clock * balance_m * balance_n);
  c.compute_share = q.flops() / c.compute_s / (*peak.tflops * 1e12);

  // Where each block lives: a level holds it when its ways, the other operand's ways and one way for C fit.
  const cpu::CacheGeometry g1 = cpu::cache_geometry(profile, 1), g2 = cpu::cache_geometry(profile, 2),
                           g3 = cpu::cache_geometry(profile, 3);
  auto ways = [](double bytes, const cpu::CacheGeometry& g) {
    const double way = double(std::max<int64_t>(1, g.sets() * g.line_bytes));
    return std::ceil(bytes / way);
  };
  const double f = 4.0;  // packed panels hold f32
  const bool b_in_l1 = g1.size_bytes > 0 && ways(double(kc_eff * nr) * f, g1) + ways(double(kc_eff * mr) * f, g1) + 1 <= g1.ways;
  const bool a_in_l2 = g2.size_bytes > 0 && ways(double(mc_eff * kc_eff) * f, g2) + ways(double(kc_eff * nr) * f, g2) + 1 <= g2.ways;
  const hw::CacheLevel* l3rec = profile.cache(3);
  const int l3_shared_by = l3rec && l3rec->shared_by > 0 ? l3rec->shared_by : t;
  const int sharing = std::min(t, l3_shared_by);
  const bool has_l3 = g3.size_bytes > 0;
  // A team on fewer cores than share an L3 can count only on its cores' share of it: the other cores (or, in a
  // virtual machine, other guests on the same socket) fill the rest. (Measured on a 16-core Emerald Rapids guest
  // with a 300 MB L3, two threads at 4096^3: 6x64 KC 160, with 2.6x the KC passes over C's 64 MB, ran behind
  // 12x32 KC 432 in both calls that compared them; the whole L3 would have held C and made them equal.)
  const double l3_share = std::min(1.0, double(t) / double(std::max(1, l3_shared_by)));
  const bool b_in_l3 =
      has_l3 && ways(double(kc_eff * nc_eff) * f, g3) + ways(double(sharing * mc_eff * kc_eff) * f, g3) + 1 <= g3.ways;

  // B read in place: which level holds its KC rows at stride ldb (set conflicts included), and the latency of the
  // rows every micro-kernel call then waits on.
  int in_place_level = 1;
  if (!pack_b) {
    const double stride = double(q.ldb) * in;
    auto rows_fit = [&](const cpu::CacheGeometry& g) {
      if (g.size_bytes <= 0) return false;
      const int64_t sets = g.sets(), line = g.line_bytes;
      int64_t distinct = sets;
      if (int64_t(stride) % line == 0) distinct = sets / std::gcd(sets, (int64_t(stride) / line) % sets == 0 ? sets : (int64_t(stride) / line) % sets);
      const double lines_per_row = std::ceil(double(nr) * in / double(line));
      return double(distinct) * double(g.ways - 1) / lines_per_row >= double(kc_eff);
    };
    in_place_level = rows_fit(g1) ? 1 : rows_fit(g2) ? 2 : rows_fit(g3) ? 3 : 4;
    if (in_place_level > 1) {
      const char* where = in_place_level == 2 ? "L2" : in_place_level == 3 ? "L3" : "DRAM";
      c.notes.push_back(fmt::format("B read in place: its {} rows at a stride of {} B do not stay in L1 (set conflicts "
                                    "included); every MR-panel of A re-reads the micro-panel from {}",
                                    kc_eff, int64_t(stride), where));
    }
  }

  double l2_bytes = 0, l3_bytes = 0, dram_bytes = 0;
  // B rows read in place from DRAM: charged at the per-core rate of rows far apart (kInPlaceDramBytesPerCycle).
  // A micro-panel row of NR floats that does not fill whole lines touches more lines than it uses: 24 floats
  // (96 B) span two lines, 8 floats (32 B) use half of one. The neighbouring panel finds the rest in cache, so the
  // extra lines are charged at half weight. (Measured at 16x4096x4096 in place: the fastest NR=16 config 5.70 ms,
  // NR=24 6.86 (1.20x; charged 1.17x), NR=8 7.26 (1.27x; charged 1.5x).)
  double in_place_dram_bytes = 0;
  const double line = double(g1.line_bytes > 0 ? g1.line_bytes : 64);
  const double row_bytes = double(nr) * in;
  const double straddle = 1.0 + 0.5 * (std::ceil(row_bytes / line) * line / row_bytes - 1.0);
  // A micro-panels stream into the micro-kernel once per NR-panel of B: from L2, or L3 when the block spills.
  const double a_stream = f * mp * k * (np / double(nr)) * batch;
  (a_in_l2 ? l2_bytes : l3_bytes) += a_stream;
  // A B micro-panel that does not stay in L1 is reloaded from L2 for every MR-panel of A.
  if (pack_b && !b_in_l1) l2_bytes += f * k * np * (mp / double(mr)) * batch;
  // The B panel is first touched once per MC block of every row of threads: from L3, or DRAM when it spills
  // (or when B is read in place, unpacked).
  const double b_touch = f * k * np * double(tm * cdiv(rows_per_thread, mc_eff)) * batch;
  if (!pack_b && tm > 1 && sharing >= tm) {
    // B read in place by row-split threads that share the L3: they walk the same rows of B at the same time, so
    // one of them brings each line from memory and the others find it in L3. (Measured on the project's AVX2
    // machine at 16x4096x4096: MR=4, two threads on 8 rows each over all of B, 6.1 ms; charged twice from DRAM the
    // model predicted 7.8 ms and ranked it 151st.)
    in_place_dram_bytes += b_touch / double(tm) * straddle;
    l3_bytes += b_touch - b_touch / double(tm);
  } else if (!pack_b) {
    in_place_dram_bytes += b_touch * straddle;
  } else {
    (b_in_l3 ? l3_bytes : dram_bytes) += b_touch;
  }
  // B read in place: the micro-kernel prefetches the next panel's rows a whole panel ahead, so the first touch
  // (counted above) exposes no latency, but every MR-panel of A re-reads the KC x NR micro-panel from the level
  // that holds its rows. Few rows of A (skinny problems) make that cheap; many make packing B win. (Measured on
  // the project's AVX2 machine: in place 75 against packed 54 GFLOP/s at 16x4096x4096, and 2-3x slower at 1024^3.)
  // The re-reads follow the first read within about a microsecond, so they are charged to L2 even when set
  // conflicts would evict the rows further (calibrated to the measurements above).
  if (!pack_b && in_place_level > 1) l2_bytes += f * k * np * (mp / double(mr)) * batch;
  // C: every KC pass loads and stores each micro-tile (the first pass does not read it when beta == 0).
  const double passes_k = double(cdiv(q.k, kc_eff));
  const double c_bytes = f * double(q.m) * double(q.n) * (2.0 * passes_k - 1.0) * batch;
  const double c_thread = double(rows_per_thread) * double(cdiv(nc_eff, tn)) * f;
  if (g2.size_bytes > 0 && c_thread + double(mc_eff * kc_eff) * f <= double(g2.size_bytes)) {
    l2_bytes += c_bytes;
  } else if (has_l3 && sharing * c_thread + double(kc_eff * nc_eff + sharing * mc_eff * kc_eff) * f <=
                            double(g3.size_bytes) * l3_share) {
    l3_bytes += c_bytes;
  } else {
    dram_bytes += c_bytes;
  }
  // 16-bit C: one pass converts the f32 workspace (and reads C when beta != 0).
  const double out = double(size_of(q.precision.output));
  if (q.precision.output != DType::f32) {
    dram_bytes += double(q.m) * double(q.n) * (f + out + (q.beta != 0.0 ? out : 0.0)) * batch;
  }

  const double vec_bytes = double(hw_lanes) * 4.0;
  const double l2_bw = double(t) * kL2VectorsPerCycle * vec_bytes * clock;
  const double dram_bw = profile.mem_bandwidth_gbps > 0 ? profile.mem_bandwidth_gbps * 1e9 * kDramEfficiency
                                                        : double(t) * 4.0 * clock;  // ~4 B/cycle/core if unknown
  if (profile.mem_bandwidth_gbps <= 0) c.notes.push_back("the profile records no memory bandwidth: 4 B/cycle/core assumed");
  const double l3_bw = has_l3 ? double(t) * kL3VectorsPerCycle * vec_bytes * clock : dram_bw;
  const double in_place_bw = std::min(dram_bw, double(t) * kInPlaceDramBytesPerCycle * clock);
  const double l2_s = l2_bytes / l2_bw, l3_s = l3_bytes / l3_bw;
  const double dram_s = dram_bytes / dram_bw + in_place_dram_bytes / in_place_bw;
  if (in_place_dram_bytes > 0) {
    c.notes.push_back(fmt::format("B read in place from DRAM: {:.0f} MB at {:.1f} GB/s ({} thread(s), rows {} B apart: "
                                  "latency-bound per core)",
                                  in_place_dram_bytes / 1e6, in_place_bw / 1e9, t, int64_t(double(q.ldb) * in)));
  }
  dram_bytes += in_place_dram_bytes;
  c.levels = {{"DRAM", dram_bytes, dram_s > 0 ? dram_bytes / dram_s : dram_bw, dram_s}, {"L3", l3_bytes, l3_bw, l3_s}, {"L2", l2_bytes, l2_bw, l2_s}};
  combine(c, {{"compute", c.compute_s, true}, {"DRAM", dram_s, true}, {"L3", l3_s, true}, {"L2", l2_s, true}});

  // Packing runs between micro-kernel phases: A once per NC panel (each thread its rows), B once per (NC, KC)
  // panel by the whole team. The source is DRAM unless the operand fits in the L3s.
  // The L3s the team's threads sit on (one per shared_by cores; a team smaller than the chip reaches fewer).
  const int per_l3 = std::max(1, l3rec && l3rec->shared_by > 0 ? l3rec->shared_by : cores);
  const int team_l3s = std::clamp((t + per_l3 - 1) / per_l3, 1, std::max(1, cores / per_l3));
  const double l3_total = has_l3 ? double(g3.size_bytes) * team_l3s : 0.0;
  const double pack_rate = double(t) * kPackVectorsPerCycle * vec_bytes * clock;
  const double a_read = double(q.m) * k * in * double(cdiv(q.n, nc)) * batch;
  const double b_read = pack_b ? k * double(q.n) * in * batch : 0.0;
  const bool a_from_dram = double(q.m) * k * in > l3_total, b_from_dram = k * double(q.n) * in > l3_total;
  const double pack_dram_bw = std::min(dram_bw, double(t) * kPackDramBytesPerCycle * clock);
  const double a_src = a_from_dram ? dram_bw : l3_bw, b_src = b_from_dram ? pack_dram_bw : l3_bw;
  c.fill_s = a_read / std::min(pack_rate, a_src) + b_read / std::min(pack_rate, b_src);
  c.dram_bytes = dram_bytes + (a_from_dram ? a_read : 0.0) + (b_from_dram ? b_read : 0.0);

  const double panels = double(cdiv(q.n, nc_eff)) * passes_k * batch;
  if (t > 1 && pack_b) c.overhead_s += 2.0 * panels * kBarrierSeconds;
  c.seconds = c.body_s + c.fill_s + c.overhead_s + c.latency_s;
  if (!b_in_l1 && pack_b) c.notes.push_back(fmt::format("the {} x {} B micro-panel ({} KB) does not stay in L1", kc_eff, nr, kc_eff * nr * 4 / 1024));
  if (!a_in_l2) c.notes.push_back(fmt::format("the {} x {} block of A ({} KB) spills from L2", mc_eff, kc_eff, mc_eff * kc_eff * 4 / 1024));
  if (has_l3 && !b_in_l3) c.notes.push_back(fmt::format("the {} x {} panel of B ({} KB) spills from L3", kc_eff, nc_eff, kc_eff * nc_eff * 4 / 1024));
  return c;
}

Cost cost_of(const Problem& problem, const hw::HwProfile& profile, const Config& config, int threads,
             DramCache* cache) {
  if (config.family == "sm80") return sm80_cost(problem, profile, config, cache);
  if (config.family.starts_with("cpu-")) return cpu_cost(problem, profile, config, threads);
  return invalid_cost(fmt::format("no cost model for family '{}'", config.family));
}

}  // namespace tileforge::plan

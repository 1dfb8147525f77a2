// The sm80 family's cost model: occupancy, the DRAM bytes of its group-M raster over the L2, and the predicted time
// of one config (tensor work, shared memory, L2, HBM, load latency, pipeline fill, launch).
#include "backends/cuda/sm80/sm80_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/kernels/common/raster.cuh"
#include "backends/cuda/sm80/sm80_cost_constants.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "core/int_math.hpp"
#include "plan/format.hpp"

namespace tileforge::cuda {
namespace {

using namespace sm80_constants;
using plan::Cost;
using plan::CostTerm;
using plan::LevelTime;

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

}  // namespace

std::optional<std::string> sm80_missing_field(const hw::HwProfile& p) {
  // Every number the model divides by or scales with, in the order the model meets them.
  return plan::first_missing({
      {p.boost_clock_ghz > 0, "boost_clock_ghz (the SM clock)"},
      {p.smem_per_core_bytes > 0, "smem_per_core_bytes (shared memory per SM)"},
      {p.registers_per_core > 0, "registers_per_core (registers per SM)"},
      {p.max_threads_per_core > 0, "max_threads_per_core (resident threads per SM)"},
      {p.max_blocks_per_core > 0, "max_blocks_per_core (resident blocks per SM)"},
      {p.l2_bytes_per_core_cycle > 0, "l2_bytes_per_core_cycle (L2 bytes per SM per cycle)"},
      {p.smem_bytes_per_core_cycle > 0, "smem_bytes_per_core_cycle (shared-memory bytes per SM per cycle)"},
  });
}

Sm80Occupancy sm80_occupancy(const Config& c, const hw::HwProfile& profile) {
  const int threads = std::max(32, sm80_threads(c));
  // Registers are allocated per thread in units of 8.
  const int64_t regs = (int64_t(sm80_register_estimate(c, profile.arch)) + 7) / 8 * 8 * threads;
  const int64_t smem = sm80_smem_bytes(c) + int64_t(kSmemReservedPerBlock);
  // A limit the profile does not record allows no block: the cost model refuses such a profile first
  // (sm80_missing_field), and the limit's name says which number is missing.
  const std::pair<int64_t, const char*> limits[] = {
      {profile.smem_per_core_bytes / std::max<int64_t>(1, smem), "shared memory"},
      {profile.registers_per_core / std::max<int64_t>(1, regs), "registers"},
      {int64_t(profile.max_threads_per_core) / threads, "threads"},
      {int64_t(profile.max_blocks_per_core), "blocks per SM"},
  };
  Sm80Occupancy o{int(limits[0].first), limits[0].second};
  for (const auto& [n, why] : limits) {
    if (n < o.blocks) o = {int(n), why};
  }
  return o;
}

double sm80_operand_dram_bytes(const Problem& problem, const hw::HwProfile& profile, int64_t bm, int64_t bn,
                               int64_t group_m, int occupancy, DramCache* cache) {
  const int64_t slots = int64_t(std::max(1, profile.cores)) * std::max(1, occupancy);
  return operand_dram_bytes_in_flight(problem, profile, slots, bm, bn, group_m, occupancy, cache);
}

namespace {

// The operand panels each tile reads, in the kernel's raster: a row panel of A or a column panel of B of one batch
// entry, keyed ((batch entry x panels + panel) << 1 | is_b) so that A's keys are even and B's odd.
struct PanelRaster {
  int64_t grid_m, grid_n, per_batch, group_m;

  // The group-M raster of gemm.cuh: GROUP_M row-blocks walked column by column; batch in grid y. GROUP_M 0 (sm90
  // only): the generalized Hilbert walk of common/raster.cuh, the kernel's own function.
  void keys_of(int64_t id, int64_t& a, int64_t& b_key) const {
    const int64_t b = id / per_batch, pid = id % per_batch;
    int64_t pid_m = 0, pid_n = 0;
    if (group_m == 0) {
      int row = 0, col = 0;
      tf::hilbert_cell(int(pid), int(grid_m), int(grid_n), row, col);
      pid_m = row;
      pid_n = col;
    } else {
      const int64_t width = group_m * grid_n;
      const int64_t group = pid / width, first_m = group * group_m;
      const int64_t size = std::min(grid_m - first_m, group_m);
      pid_m = first_m + (pid % width) % size;
      pid_n = (pid % width) / size;
    }
    a = ((b * grid_m + pid_m) << 1) | 0;
    b_key = ((b * grid_n + pid_n) << 1) | 1;
  }
};

// A least-recently-used list of panels, with the bytes each holds. The simulated tiles touch keys below a bound found
// first, so the list lives in arrays indexed by key: no node or hash allocation per panel.
class PanelLru {
 public:
  explicit PanelLru(int64_t key_end)
      : prev_(std::size_t(key_end), kNone), next_(std::size_t(key_end), kNone), held_(std::size_t(key_end), 0.0),
        resident_(std::size_t(key_end), 0) {}

  bool resident(int64_t k) const { return resident_[k] != 0; }
  // A resident panel touched again: the most recently used.
  void refresh(int64_t k) {
    unlink(k);
    push_front(k);
  }
  void insert(int64_t k, double bytes) {
    push_front(k);
    resident_[k] = 1;
    held_[k] = bytes;
    used_ += bytes;
  }
  // Evicts the least recently used panels until the rest fit `capacity` bytes.
  void evict_beyond(double capacity) {
    while (used_ > capacity && tail_ != kNone) {
      const int64_t victim = tail_;
      used_ -= held_[victim];
      resident_[victim] = 0;
      unlink(victim);
    }
  }

 private:
  static constexpr int64_t kNone = -1;
  void unlink(int64_t k) {
    (prev_[k] == kNone ? head_ : next_[prev_[k]]) = next_[k];
    (next_[k] == kNone ? tail_ : prev_[next_[k]]) = prev_[k];
  }
  void push_front(int64_t k) {
    prev_[k] = kNone;
    next_[k] = head_;
    (head_ == kNone ? tail_ : prev_[head_]) = k;
    head_ = k;
  }

  std::vector<int64_t> prev_, next_;
  std::vector<double> held_;
  std::vector<char> resident_;
  int64_t head_ = kNone, tail_ = kNone;  // most and least recently used
  double used_ = 0;
};

// The operand bytes `total` tiles (of a problem with no empty dimension) read from DRAM, `slots` at a time: the first
// kSimulatedWaves waves walked through an LRU of panels over the usable L2, the rest extrapolated from them.
double simulate_panel_reads(const Problem& q, const hw::HwProfile& profile, int64_t slots, int64_t bm, int64_t bn,
                            const PanelRaster& raster, int64_t total) {
  const double in = double(size_of(q.precision.input));
  const int64_t grid_m = raster.grid_m, grid_n = raster.grid_n, per_batch = raster.per_batch;
  const hw::CacheLevel* l2 = profile.cache(2);
  const double capacity = l2 ? double(l2->size_bytes) * kL2UsableShare : 0.0;
  auto panel_bytes = [&](int64_t key) {
    const bool is_b = key & 1;
    const int64_t idx = (key >> 1) % (is_b ? grid_n : grid_m);
    const int64_t rows = is_b ? std::min(bn, q.n - idx * bn) : std::min(bm, q.m - idx * bm);
    return double(rows) * double(q.k) * in;
  };
  const int64_t waves = cdiv(total, slots);
  const int64_t simulated = std::min<int64_t>(waves, kSimulatedWaves);
  const int64_t seen_end = std::min(total, simulated * slots);
  // Keys stay below 2 x (batch entries touched) x the longer grid side (A's are even, B's odd).
  const int64_t key_end = 2 * ((seen_end - 1) / per_batch + 1) * std::max(grid_m, grid_n);
  PanelLru lru(key_end);
  std::vector<int64_t> wave_of(std::size_t(key_end), -1);  // the last wave that touched the panel
  double bytes = 0;
  int64_t tiles_seen = 0;
  std::vector<int64_t> keys;
  for (int64_t w = 0; w < simulated; ++w) {
    keys.clear();
    const int64_t first = w * slots, last = std::min(total, first + slots);
    for (int64_t id = first; id < last; ++id) {
      int64_t a = 0, b = 0;
      raster.keys_of(id, a, b);
      for (const int64_t k : {a, b}) {
        if (wave_of[k] == w) continue;  // a panel the wave already holds: listed once
        wave_of[k] = w;
        keys.push_back(k);
      }
    }
    tiles_seen += last - first;
    std::sort(keys.begin(), keys.end());
    // Blocks of one wave run side by side at similar k: a panel they share is read from DRAM once.
    for (int64_t k : keys) {
      if (lru.resident(k)) {
        lru.refresh(k);
        continue;
      }
      const double pb = panel_bytes(k);
      bytes += pb;
      lru.insert(k, pb);
    }
    lru.evict_beyond(capacity);
  }
  if (tiles_seen > 0 && tiles_seen < total) bytes *= double(total) / double(tiles_seen);
  return bytes;
}

}  // namespace

double operand_dram_bytes_in_flight(const Problem& problem, const hw::HwProfile& profile, int64_t slots, int64_t bm,
                                    int64_t bn, int64_t group_m, int cache_tag, DramCache* cache) {
  const Problem q = problem.normalized();
  // K and the batch in the key: SPLIT_K prices its slices as a problem of its own (sm80_slice_problem), through the
  // memo of the caller's problem.
  const auto key = std::make_tuple(bm, bn, group_m, cache_tag, q.k, q.batch);
  if (cache) {
    if (auto it = cache->find(key); it != cache->end()) return it->second;
  }
  const int64_t grid_m = cdiv(q.m, bm), grid_n = cdiv(q.n, bn);
  const int64_t per_batch = grid_m * grid_n, total = per_batch * q.batch;
  double bytes = 0;
  if (total > 0 && q.k > 0) {
    bytes = simulate_panel_reads(q, profile, std::max<int64_t>(1, slots), bm, bn,
                                 PanelRaster{grid_m, grid_n, per_batch, group_m}, total);
  }
  if (cache) (*cache)[key] = bytes;
  return bytes;
}

double sm80_operand_dram_floor(const Problem& problem, int64_t slots, int64_t bm, int64_t bn) {
  const Problem q = problem.normalized();
  const int64_t total = cdiv(q.m, bm) * cdiv(q.n, bn) * q.batch;
  if (total == 0 || q.k == 0) return 0;
  if (cdiv(total, std::max<int64_t>(1, slots)) > kSimulatedWaves) return 0;
  return (double(q.m) + double(q.n)) * double(q.k) * double(size_of(q.precision.input)) * double(q.batch);
}

namespace {

// The DRAM bytes of COPY_AB's two extra kernels, which copy A and B into 16-byte-aligned buffers: a read and a
// write of each.
double copy_ab_bytes(const Problem& q, double in) {
  return 2.0 * (double(q.m) * q.k + double(q.k) * q.n) * in * double(q.batch);
}

// Tiles that stick out of M or N (and, with copies narrower than 8 bytes, every tile) fetch their k-tiles through
// the bounds-checked path: latency-bound integer work per thread, which other resident blocks hide. The SM that
// gets the most of them waits for it on top of its tensor work.
struct CheckedCopy {
  int64_t edge_tiles = 0;        // tiles through the bounds-checked path (none: the rest is 0)
  double chunks_per_thread = 0;  // copy chunks per thread per k-tile
  double seconds = 0;            // the busiest SM's wait
};
CheckedCopy checked_copy(const Problem& q, const plan::WaveAnalysis& waves, int64_t bm, int64_t bn, int64_t bk,
                         int64_t warps, int64_t stages, int64_t vec, int64_t sms, int64_t active, double in,
                         double clock) {
  CheckedCopy r;
  const int64_t tiles_m = q.m / bm, tiles_n = q.n / bn;
  const int64_t interior = vec >= 8 ? tiles_m * tiles_n * q.batch : 0;
  r.edge_tiles = waves.tiles - interior;
  if (r.edge_tiles <= 0) return r;
  const int64_t edge_per_sm = std::min<int64_t>(waves.max_tiles_per_core, cdiv(r.edge_tiles, sms));
  r.chunks_per_thread = double((bm + bn) * bk) * in / double(std::max<int64_t>(vec, 2)) / double(32 * warps);
  const double checked_fetches = double(std::max<int64_t>(0, waves.k_steps - (stages - 1)));
  r.seconds = double(edge_per_sm) * checked_fetches * r.chunks_per_thread * kCheckedCopyCyclesPerChunk / clock /
              double(active);
  return r;
}

}  // namespace

namespace {

// What the busiest SM runs: `tiles` tile-times of the whole K (fractional under stream-K: whole tiles and a run of
// k-blocks), `active` blocks at once, `rounds` pipeline fills per block slot. Whole tiles (and split-K's slices, priced
// as batch entries): the waves' share of the busiest SM. Stream-K: one wave of `s.workers` blocks, each with its share
// of the whole tiles and a run of the shared tiles' k-blocks, which spans at most one tile more than its length.
struct SmWork {
  double tiles = 0;
  int64_t active = 1;
  int64_t rounds = 1;
};
SmWork sm_work(const plan::WaveAnalysis& waves, int occupancy, int64_t sms, const Sm80StreamK* s) {
  SmWork w;
  if (!s) {
    w.tiles = double(waves.max_tiles_per_core);
    w.active = std::min<int64_t>(occupancy, waves.max_tiles_per_core);
    w.rounds = cdiv(waves.max_tiles_per_core, int64_t(occupancy));
    return w;
  }
  const int64_t g = std::max<int64_t>(1, s->workers), kb = std::max<int64_t>(1, s->k_blocks);
  const int64_t whole = cdiv(s->tiles - s->sk_tiles, g), run = cdiv(s->sk_tiles * kb, g);
  w.active = std::min<int64_t>(occupancy, cdiv(g, sms));
  w.tiles = double(w.active) * (double(whole) + double(run) / double(kb));
  w.rounds = whole + (run > 0 ? cdiv(run, kb) + 1 : 0);
  return w;
}

}  // namespace

// Each term of sm80_cost() as it computes it, with the parameters `partial` lacks at the value that makes the term
// least. The occupancy needs every parameter but GROUP_M: until then the resident blocks are at most the chip's
// limit, which bounds the warps in flight (the warp factor), the stages in flight (latency) and the prologue rounds;
// the bounds-checked copies and the latency without STAGES are left out (the terms only add, and the body grows
// with each of them). The operands' DRAM traffic is its floor (sm80_operand_dram_floor).
double sm80_cost_bound(const Problem& problem, const hw::HwProfile& profile, const Config& partial) {
  // SPLIT_K (set first where declared): the slices are priced as batch entries of the slice's K.
  const int64_t split = sm80_split_k(partial);
  const Problem q = sm80_slice_problem(problem, split, std::max<int64_t>(1, partial.get("BLOCK_K").value_or(1)));
  const plan::PeakChoice peak = plan::peak_for(q, profile);
  if (!peak.tflops || *peak.tflops <= 0 || profile.mem_bandwidth_gbps <= 0 || sm80_missing_field(profile)) return 0;
  const double in = double(size_of(q.precision.input)), out = double(size_of(q.precision.output));
  const auto known = [&](const char* name) { return partial.get(name).has_value(); };
  const int64_t sms = std::max(1, profile.cores);
  const double clock = profile.boost_clock_ghz * 1e9;
  const double dram_bw = profile.mem_bandwidth_gbps * 1e9 * kDramEfficiency;
  double overhead_s = kGpuLaunchSeconds;
  const bool copy = known("COPY_AB") && param(partial, "COPY_AB") != 0;
  if (copy) overhead_s += copy_ab_bytes(q, in) / dram_bw + 2 * kGpuLaunchSeconds;
  if (!known("BLOCK_M") || !known("BLOCK_N") || !known("BLOCK_K")) return overhead_s;
  const int64_t bm = param(partial, "BLOCK_M"), bn = param(partial, "BLOCK_N"), bk = param(partial, "BLOCK_K");
  const bool warps = known("WARPS_M") && known("WARPS_N");
  const int64_t wm = warps ? std::max<int64_t>(1, param(partial, "WARPS_M")) : 1;
  const int64_t wn = warps ? std::max<int64_t>(1, param(partial, "WARPS_N")) : 1;
  const bool staged = known("STAGES");
  const int64_t stages = std::max<int64_t>(1, param(partial, "STAGES"));
  const bool vec_known = copy || (known("COPY_AB") && known("VEC_BYTES"));
  const int64_t vec = copy ? 16 : param(partial, "VEC_BYTES");
  const bool pipe_known = known("FRAG_PIPE");
  const bool resident = warps && staged && vec_known && pipe_known;  // every parameter the occupancy reads

  const int occupancy = resident ? std::max(1, sm80_occupancy(partial, profile).blocks)
                                 : std::max(1, profile.max_blocks_per_core);  // the most it can be
  const plan::WaveAnalysis waves = plan::analyze_waves(q, sms, occupancy, bm, bn, bk);
  if (waves.tiles == 0 || q.k == 0) return overhead_s;
  const double share = profile.has("wgmma") ? kMmaSyncShareWithWgmma : kMmaSyncShareNative;
  const double rate_sm = *peak.tflops * 1e12 * share / double(sms);
  // Where STREAM_K may be 1 (set so, or declared and not yet set), its balanced work: no SM runs less than the
  // tiles' mean, with every block resident at once and one fill (its fix-up left out).
  const bool may_stream = known("STREAM_K") ? param(partial, "STREAM_K") != 0
                                            : split == 1 && q.batch == 1 && sm80_stream_k_declared();
  SmWork work = sm_work(waves, occupancy, sms, nullptr);
  if (may_stream) work = {double(waves.tiles) / double(sms), occupancy, 1};
  const double per_sm = work.tiles;
  const int64_t active = work.active;
  const double warp_factor = warps ? std::min(1.0, double(active * wm * wn) / kWarpsForFullRate) *
                                         std::min(1.0, double(wm * wn) / kWarpsPerBlockForFullRate)
                                   : 1.0;
  const double kp = double(waves.k_steps * bk);
  const double flops_tile = 2.0 * double(bm) * double(bn) * kp;
  const double sync_s = double(waves.k_steps) * kKStepSyncCycles / clock / double(active);
  const double pipe_slowdown = pipe_known && param(partial, "FRAG_PIPE") == 0 ? kFragPipeOffSlowdown : 1.0;
  double compute_s = per_sm * (flops_tile / (rate_sm * warp_factor) + sync_s) * pipe_slowdown;
  if (resident) {
    const CheckedCopy checked = checked_copy(q, waves, bm, bn, bk, wm * wn, stages, vec, sms, active, in, clock);
    if (checked.edge_tiles > 0) compute_s += checked.seconds;
  }
  const double smem_tile =
      double(waves.k_steps) * (double(wn * bm * bk + wm * bk * bn) * in + double((bm + bn) * bk) * in);
  const double smem_bw = profile.smem_bytes_per_core_cycle * clock;
  const double smem_s = per_sm * smem_tile / smem_bw * pipe_slowdown;
  const double stage_bytes = double((bm + bn) * bk) * in;
  const double l2_tile = stage_bytes * double(waves.k_steps);
  const double top_share = std::max({kVecLoadShare16, kVecLoadShare8, kVecLoadShare4, kVecLoadShare2});
  const double l2_bw_sm = profile.l2_bytes_per_core_cycle * clock * (vec_known ? vec_share(vec) : top_share);
  const double l2_total = double(waves.tiles) * l2_tile;
  const double l2_s = std::max(l2_total / (l2_bw_sm * double(sms)), per_sm * l2_tile / l2_bw_sm);
  double latency_s = 0;
  if (staged) {
    // Without the vector width, as many stages in flight as STAGES allows (2-byte loads allow one).
    const double in_flight_stages = vec_known && vec <= 2 ? 1.0 : double(std::max<int64_t>(1, stages - 1));
    const double in_flight = double(active) * in_flight_stages * stage_bytes;
    latency_s = per_sm * l2_tile / (in_flight / kLoadedLatencySeconds) * pipe_slowdown;
  }
  const double c_bytes = double(q.m) * double(q.n) * out * double(q.batch / split) * (q.beta != 0.0 ? 2.0 : 1.0);
  const double floor = sm80_operand_dram_floor(q, sms * (resident ? occupancy : 1), bm, bn);
  const double dram_s = (floor + c_bytes) / dram_bw;
  // combine_terms() of the cost model, without its vector.
  const double top_stream = std::max({compute_s, dram_s, l2_s, smem_s});
  const double streams = compute_s + dram_s + l2_s + smem_s;
  const double body_s = std::max(0.0, std::max(top_stream, latency_s)) + kOverlapLeak * (streams - top_stream);
  const double fill_s =
      double(work.rounds) * (kLoadedLatencySeconds + (staged ? double(stages - 1) * stage_bytes / l2_bw_sm : 0.0));
  return body_s + fill_s + overhead_s;
}

namespace {

// SPLIT_K's fix-up: the partial tiles go through the L2 (every slice stores one in f32, the last reads them all
// back); after its main loop every block stores its partial and counts itself, not overlapped with other work
// (twice a partial tile's bytes on average: the store, and a 1/SPLIT_K share of the last slice's reads), and the
// last slice of the last tile reads SPLIT_K partials back while the others are done: a tail after the body.
struct SplitFixup {
  double l2_bytes = 0, tail_s = 0;
  std::string note;
};
SplitFixup split_fixup(int64_t split, const plan::WaveAnalysis& waves, int64_t bm, int64_t bn, double l2_bw_sm) {
  SplitFixup f;
  if (split <= 1) return f;
  const double partial_tile = double(bm * bn) * 4.0;
  f.l2_bytes = double(waves.tiles) * partial_tile * 2.0;
  f.tail_s = double(waves.max_tiles_per_core) * 2.0 * partial_tile / l2_bw_sm +
             double(split) * partial_tile / l2_bw_sm + kLoadedLatencySeconds;
  f.note = fmt::format("split-K {}: {} blocks of {} tiles, each storing an f32 partial of {}; the last slice of a "
                       "tile sums all {} in slice order ({:.3g} us beside the body)",
                       split, waves.tiles, waves.tiles / split, plan::fmtx::bytes(partial_tile), split, f.tail_s * 1e6);
  return f;
}

// STREAM_K's fix-up: every block stores at most two partial tiles (where its run starts and ends), each read back once
// by the block that finishes the tile; that block reads all of its tile's pieces (about workers / shared tiles + 1)
// after the body, a tail as split-K's.
SplitFixup stream_fixup(const Sm80StreamK& s, int64_t bm, int64_t bn, double l2_bw_sm) {
  SplitFixup f;
  if (s.sk_tiles <= 0) return f;
  const double partial_tile = double(bm * bn) * 4.0;
  const int64_t pieces = cdiv(s.workers, s.sk_tiles) + 1;
  f.l2_bytes = double(2 * s.workers) * partial_tile * 2.0;
  f.tail_s = (2.0 + double(pieces)) * partial_tile / l2_bw_sm + kLoadedLatencySeconds;
  f.note = fmt::format("stream-K: {} blocks share the k-blocks of the last {} of {} tiles; each stores up to two f32 "
                       "partials of {}, and the block that finishes a tile sums its ~{} pieces in block order ({:.3g} "
                       "us beside the body)",
                       s.workers, s.sk_tiles, s.tiles, plan::fmtx::bytes(partial_tile), pieces, f.tail_s * 1e6);
  return f;
}

// The bounds-checked copies of the tiles that stick out of the matrix, on the busiest SM's compute term, with a note
// where they weigh.
void add_checked_copies(Cost& c, const CheckedCopy& checked) {
  if (checked.edge_tiles <= 0) return;
  c.compute_s += checked.seconds;
  if (checked.seconds > 0.05 * c.compute_s) {
    c.notes.push_back(fmt::format("{} of {} tiles stick out of the matrix and copy through the bounds-checked path: "
                                  "{:.3g} us on the busiest SM ({:.0f} chunks per thread per k-tile)",
                                  checked.edge_tiles, c.waves.tiles, checked.seconds * 1e6, checked.chunks_per_thread));
  }
}

}  // namespace

Cost sm80_cost(const Problem& problem, const hw::HwProfile& profile, const Config& cfg, DramCache* cache) {
  const int64_t split = sm80_split_k(cfg);  // the slices priced as batch entries of the slice's K, and their fix-up
  const Problem q = sm80_slice_problem(problem, split, std::max<int64_t>(1, param(cfg, "BLOCK_K")));
  const plan::PeakChoice peak = plan::peak_for(q, profile);
  if (!peak.tflops || *peak.tflops <= 0) return plan::invalid_cost(peak.note);
  if (profile.mem_bandwidth_gbps <= 0) return plan::invalid_cost("the profile records no memory bandwidth");
  if (auto missing = sm80_missing_field(profile)) return plan::invalid_cost(*missing);
  Cost c;
  const double in = double(size_of(q.precision.input)), out = double(size_of(q.precision.output));
  const int64_t bm = param(cfg, "BLOCK_M"), bn = param(cfg, "BLOCK_N"), bk = param(cfg, "BLOCK_K");
  const int64_t wm = std::max<int64_t>(1, param(cfg, "WARPS_M")), wn = std::max<int64_t>(1, param(cfg, "WARPS_N"));
  const int64_t stages = std::max<int64_t>(1, param(cfg, "STAGES")), group_m = std::max<int64_t>(1, param(cfg, "GROUP_M"));
  const bool copy = param(cfg, "COPY_AB") != 0;
  const int64_t vec = copy ? 16 : param(cfg, "VEC_BYTES");
  const int64_t sms = std::max(1, profile.cores);
  const double clock = profile.boost_clock_ghz * 1e9;

  const Sm80Occupancy occ = sm80_occupancy(cfg, profile);
  c.occupancy = std::max(1, occ.blocks);
  c.occupancy_limit = occ.limit;
  c.waves = plan::analyze_waves(q, sms, c.occupancy, bm, bn, bk);
  const bool stream = sm80_stream_k(cfg) && split == 1;
  const Sm80StreamK sched =
      stream ? sm80_stream_k_schedule(q, cfg, sm80_stream_k_workers(cfg, profile)) : Sm80StreamK{};
  const SmWork work = sm_work(c.waves, c.occupancy, sms, stream ? &sched : nullptr);
  c.overhead_s = kGpuLaunchSeconds;
  const double dram_bw = profile.mem_bandwidth_gbps * 1e9 * kDramEfficiency;
  if (copy) {
    const double bytes = copy_ab_bytes(q, in);
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
  const double per_sm = work.tiles;
  const int64_t active = work.active;
  const double warp_factor = std::min(1.0, double(active * wm * wn) / kWarpsForFullRate) *
                             std::min(1.0, double(wm * wn) / kWarpsPerBlockForFullRate);
  const double kp = double(c.waves.k_steps * bk);
  const double flops_tile = 2.0 * double(bm) * double(bn) * kp;
  const double sync_s = double(c.waves.k_steps) * kKStepSyncCycles / clock / double(active);
  // Without fragment double-buffering the warp waits for every k-step's ldmatrix and every barrier.
  const double pipe_slowdown = param(cfg, "FRAG_PIPE") != 0 ? 1.0 : kFragPipeOffSlowdown;
  c.compute_s = per_sm * (flops_tile / (rate_sm * warp_factor) + sync_s) * pipe_slowdown;
  add_checked_copies(c, checked_copy(q, c.waves, bm, bn, bk, wm * wn, stages, vec, sms, active, in, clock));
  c.compute_share = q.flops() / c.compute_s / (*peak.tflops * 1e12);

  // Shared memory: ldmatrix reads (each warp reads its rows of A and columns of B) plus the cp.async writes.
  const double smem_tile =
      double(c.waves.k_steps) * (double(wn * bm * bk + wm * bk * bn) * in + double((bm + bn) * bk) * in);
  const double smem_bw = profile.smem_bytes_per_core_cycle * clock;
  const double smem_s = per_sm * smem_tile / smem_bw * pipe_slowdown;

  // L2 -> SM: every block loads its A rows and B columns over the whole K.
  const double stage_bytes = double((bm + bn) * bk) * in;
  const double l2_tile = stage_bytes * double(c.waves.k_steps);
  const double l2_bw_sm = profile.l2_bytes_per_core_cycle * clock * vec_share(vec);
  const SplitFixup fix =
      stream ? stream_fixup(sched, bm, bn, l2_bw_sm) : split_fixup(split, c.waves, bm, bn, l2_bw_sm);
  const double l2_total = double(c.waves.tiles) * l2_tile + fix.l2_bytes;
  const double l2_s = std::max(l2_total / (l2_bw_sm * double(sms)), per_sm * l2_tile / l2_bw_sm);

  // Little's law: the stages in flight (one when 2-byte loads cannot be asynchronous) over the loaded latency.
  const double in_flight_stages = (vec <= 2) ? 1.0 : double(std::max<int64_t>(1, stages - 1));
  const double in_flight = double(active) * in_flight_stages * stage_bytes;
  c.latency_s = per_sm * l2_tile / (in_flight / kLoadedLatencySeconds) * pipe_slowdown;

  // DRAM: A and B panels as the raster and L2 let them through, C written (and read when beta != 0).
  const double operand_bytes = sm80_operand_dram_bytes(q, profile, bm, bn, group_m, c.occupancy, cache);
  const double c_bytes = double(q.m) * double(q.n) * out * double(q.batch / split) * (q.beta != 0.0 ? 2.0 : 1.0);
  const double dram = operand_bytes + c_bytes;
  c.dram_bytes += dram;
  const double dram_s = dram / dram_bw;

  c.levels = {{"HBM", dram, dram_bw, dram_s},
              {"L2", l2_total, l2_bw_sm * double(sms), l2_s},
              {"shared memory", smem_tile * double(c.waves.tiles), smem_bw * double(sms), smem_s}};
  plan::combine_terms(c, {{"compute", c.compute_s, true},
              {"HBM", dram_s, true},
              {"L2", l2_s, true},
              {"shared memory", smem_s, true},
              {"latency", c.latency_s, false}});

  // Each round of resident blocks (each piece of a stream-K block) waits for its first stage, then issues the rest of
  // the prologue.
  c.fill_s = double(work.rounds) * (kLoadedLatencySeconds + double(stages - 1) * stage_bytes / l2_bw_sm) + fix.tail_s;
  if (!fix.note.empty()) c.notes.push_back(fix.note);
  c.seconds = c.body_s + c.fill_s + c.overhead_s;
  return c;
}

}  // namespace tileforge::cuda

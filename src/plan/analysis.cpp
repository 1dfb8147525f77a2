// Roofline, waves, tail waste and load-path legality of a problem on a chip (see analysis.hpp).
#include "plan/analysis.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/int_math.hpp"

namespace tileforge::plan {
namespace {

double waste(int64_t size, int64_t tile) {
  if (size <= 0 || tile <= 0) return 0;
  const int64_t padded = cdiv(size, tile) * tile;
  return double(padded - size) / double(padded);
}

}  // namespace

PeakChoice peak_for(const Problem& problem, const hw::HwProfile& profile) {
  const Precision& pr = problem.precision;
  PeakChoice c;
  if (auto t = profile.peak_tflops(pr.input, pr.accum)) {
    c.tflops = *t;
    c.note = fmt::format("{} inputs, {} accumulation", to_string(pr.input), to_string(pr.accum));
    return c;
  }
  if (profile.kind == "cpu" && pr.accum == DType::f32) {
    // The CPU backend converts 16-bit inputs to f32 while packing, so the f32 FMA rate applies.
    if (auto t = profile.peak_tflops(DType::f32, DType::f32)) {
      c.tflops = *t;
      c.note = fmt::format("f32 FMA rate: {} inputs are converted to f32 while packing", to_string(pr.input));
      return c;
    }
  }
  c.note = fmt::format("the profile records no peak for {} inputs with {} accumulation", to_string(pr.input),
                       to_string(pr.accum));
  return c;
}

Roofline analyze_roofline(const Problem& problem, const hw::HwProfile& profile) {
  const Problem q = problem.normalized();
  Roofline r;
  const double batch = double(q.batch);
  const double in = double(size_of(q.precision.input)), out = double(size_of(q.precision.output));
  r.flops = q.flops();
  r.bytes_a = double(q.m) * double(q.k) * in * batch;
  r.bytes_b = double(q.k) * double(q.n) * in * batch;
  r.bytes_c_write = double(q.m) * double(q.n) * out * batch;
  r.bytes_c_read = q.beta != 0.0 ? r.bytes_c_write : 0.0;
  r.min_bytes = r.bytes_a + r.bytes_b + r.bytes_c_read + r.bytes_c_write;
  r.intensity = r.min_bytes > 0 ? r.flops / r.min_bytes : 0;
  r.peak = peak_for(q, profile);
  r.bandwidth_gbps = profile.mem_bandwidth_gbps;
  if (r.bandwidth_gbps > 0) r.memory_floor_s = r.min_bytes / (r.bandwidth_gbps * 1e9);
  if (r.peak.tflops && *r.peak.tflops > 0) {
    r.compute_floor_s = r.flops / (*r.peak.tflops * 1e12);
    if (r.bandwidth_gbps > 0) {
      r.ridge = *r.peak.tflops * 1e12 / (r.bandwidth_gbps * 1e9);
      r.compute_bound = r.intensity >= *r.ridge;
    }
  }
  r.floor_s = std::max(r.compute_floor_s, r.memory_floor_s);
  return r;
}

WaveAnalysis analyze_waves(const Problem& problem, int64_t cores, int occupancy, int64_t tile_m, int64_t tile_n,
                           int64_t tile_k) {
  const Problem q = problem.normalized();
  WaveAnalysis w;
  w.tile_m = tile_m;
  w.tile_n = tile_n;
  w.tile_k = tile_k;
  w.tiles_m = cdiv(q.m, tile_m);
  w.tiles_n = cdiv(q.n, tile_n);
  w.k_steps = cdiv(q.k, tile_k);
  w.tiles = w.tiles_m * w.tiles_n * q.batch;
  w.cores = std::max<int64_t>(1, cores);
  w.occupancy = std::max(1, occupancy);
  w.slots = w.cores * w.occupancy;
  w.waste_m = waste(q.m, tile_m);
  w.waste_n = waste(q.n, tile_n);
  w.waste_k = waste(q.k, tile_k);
  const double useful = double(q.m) * double(q.n) * double(q.k);
  const double padded = double(w.tiles_m * tile_m) * double(w.tiles_n * tile_n) * double(w.k_steps * tile_k);
  w.padded_work_share = padded > 0 ? 1.0 - useful / padded : 0.0;
  if (w.tiles == 0) return w;
  w.waves = cdiv(w.tiles, w.slots);
  w.waves_exact = double(w.tiles) / double(w.slots);
  w.last_wave_fill = double(w.tiles - (w.waves - 1) * w.slots) / double(w.slots);
  w.wave_efficiency = double(w.tiles) / double(w.waves * w.slots);
  w.max_tiles_per_core = cdiv(w.tiles, w.cores);
  w.core_balance = double(w.tiles) / double(w.cores * w.max_tiles_per_core);
  return w;
}

int row_alignment_bytes(int64_t ld, int64_t stride, int64_t element_bytes) {
  for (int64_t w : {16, 8, 4, 2}) {
    if (w < element_bytes) break;
    // Unsigned: a legal ld can be near INT64_MAX (one row, k = 1), and its bytes then wrap; a power of two still
    // divides the wrapped product exactly when it divides the true one.
    if (uint64_t(ld) * uint64_t(element_bytes) % uint64_t(w) == 0 &&
        uint64_t(stride) * uint64_t(element_bytes) % uint64_t(w) == 0) {
      return int(w);
    }
  }
  return int(element_bytes);
}

PathAnalysis analyze_paths(const Problem& problem, const hw::HwProfile& profile) {
  const Problem q = problem.normalized();
  PathAnalysis p;
  const int64_t in = int64_t(size_of(q.precision.input)), out = int64_t(size_of(q.precision.output));
  const bool batched = q.batch > 1;
  const int va = row_alignment_bytes(q.lda, batched ? q.stride_a : 0, in);
  const int vb = row_alignment_bytes(q.ldb, batched ? q.stride_b : 0, in);
  const int vc = row_alignment_bytes(q.ldc, batched ? q.stride_c : 0, out);
  p.vector_bytes = std::min(va, vb);

  if (profile.kind == "cpu") {
    const int simd = profile.vector_bits / 8;
    p.vector_reason = fmt::format(
        "{}-byte SIMD loads always: the cpu backend packs A and B into aligned panels (rows of A and B are {}- "
        "and {}-byte aligned as stored)",
        simd, va, vb);
  } else {
    std::vector<std::string> narrow;
    // Bytes as doubles: exact below 2^53, and no overflow for a leading dimension near INT64_MAX.
    if (va < 16) narrow.push_back(fmt::format("A rows ({} B) are {}-byte aligned", double(q.lda) * in, va));
    if (vb < 16) narrow.push_back(fmt::format("B rows ({} B) are {}-byte aligned", double(q.ldb) * in, vb));
    p.vector_reason = narrow.empty()
                          ? fmt::format("16-byte loads: lda = {}, ldb = {} elements of {} B keep every row 16-byte "
                                        "aligned (base pointers from the device allocator are 256-byte aligned)",
                                        q.lda, q.ldb, in)
                          : fmt::format("loads of at most {} B: {}", p.vector_bytes, fmt::join(narrow, "; "));
  }

  p.tma_on_chip = profile.has("tma");
  // TMA needs 16-byte-aligned bases and 16-byte multiples for every global stride (leading dimensions and batch
  // strides): for 16-bit data, leading dimensions that are multiples of 8 elements.
  std::vector<std::string> bad;
  if (va < 16) bad.push_back(fmt::format("lda = {} ({} B)", q.lda, double(q.lda) * in));
  if (vb < 16) bad.push_back(fmt::format("ldb = {} ({} B)", q.ldb, double(q.ldb) * in));
  if (vc < 16) bad.push_back(fmt::format("ldc = {} ({} B)", q.ldc, double(q.ldc) * out));
  if (!p.tma_on_chip) {
    p.tma_reason = fmt::format("no TMA on {} (the profile lists no \"tma\" feature)", profile.name);
  } else if (!bad.empty()) {
    p.tma_reason = fmt::format("TMA is on the chip but not legal here: {} not a multiple of 16 bytes{}",
                               fmt::join(bad, ", "), batched ? " (or a batch stride is not)" : "");
  } else {
    p.tma_legal = true;
    p.tma_reason = "TMA legal: every leading dimension and batch stride is a multiple of 16 bytes";
  }
  return p;
}

}  // namespace tileforge::plan

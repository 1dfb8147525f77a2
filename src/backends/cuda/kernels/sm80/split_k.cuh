// sm80 family: split-K (Config::SPLIT_K > 1). blockIdx.z is the slice of K a block runs; every slice stores its f32
// partial tile in the workspace and counts itself on the tile's counter, and the last slice to arrive sums the
// partials in slice order from zero (bit-identical from run to run, whichever slice arrives last) and writes C.
#pragma once

#include "common/slice_counter.cuh"
#include "sm80/params.cuh"

namespace tf::sm80 {

// The slice's Params: A and B advanced to its first k-tile, K its own k-tiles (whole BLOCK_K tiles, the last slice
// with K's tail). The slices split the k-tiles as evenly as they divide; the space keeps SPLIT_K <= k-tiles, so
// that none is empty.
template <class Cfg>
__device__ __forceinline__ Params slice_params(const Params& p, int slice) {
  const int k_tiles = (p.k + Cfg::BK - 1) / Cfg::BK;
  const int t0 = slice * k_tiles / Cfg::SPLIT_K, t1 = (slice + 1) * k_tiles / Cfg::SPLIT_K;
  const int k0 = t0 * Cfg::BK, k1 = min(p.k, t1 * Cfg::BK);
  Params s = p;
  s.a = static_cast<const unsigned short*>(p.a) + (Cfg::A_ROW ? static_cast<long long>(k0) : k0 * p.lda);
  s.b = static_cast<const unsigned short*>(p.b) + (Cfg::B_ROW ? k0 * p.ldb : static_cast<long long>(k0));
  s.k = k1 - k0;
  return s;
}

// The fix-up of one block's tile: its partial (every element, rows and columns past C too: the slot holds the whole
// tile) stored in fragment order, MI x NI float4 per thread, consecutive threads at consecutive float4; then the
// count; the last slice sums every slot in slice order into acc. `flag` is a word of shared memory the main loop
// no longer reads. Returns whether this block holds the summed tile (and writes C).
template <class Cfg>
__device__ __forceinline__ bool split_k_fixup(const Params& p, float (&acc)[Cfg::MI][Cfg::NI][4], int tid,
                                              unsigned flag) {
  constexpr int MI = Cfg::MI, NI = Cfg::NI, T = Cfg::THREADS, SLOT = MI * NI * T;
  // Loads in flight at once in the sum: whole groups of the thread's MI x NI float4 (a power of two).
  constexpr int G = MI * NI < 8 ? MI * NI : 8;
  static_assert((MI * NI) % G == 0, "the sum's load groups cover the thread's float4 exactly");
  const long long tile = static_cast<long long>(blockIdx.y) * gridDim.x + blockIdx.x;
  float4* ws = reinterpret_cast<float4*>(p.partials) + tile * Cfg::SPLIT_K * SLOT + tid;
  float4* own = ws + static_cast<long long>(blockIdx.z) * SLOT;
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      __stcg(own + (i * NI + j) * T, make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]));
    }
  }
  // Release / acquire at GPU scope on the counter, as one thread's atomic: the barrier orders every thread's stores
  // before it, and the summing threads' loads after it (as the sm90 family's fix-up).
  __syncthreads();
  if (tid == 0) count_slice(p.counters + tile, Cfg::SPLIT_K, flag);
  __syncthreads();
  if (!last_slice(flag)) return false;
#pragma unroll
  for (int g = 0; g < MI * NI; g += G) {
#pragma unroll
    for (int u = 0; u < G; ++u) {
      float* d = acc[(g + u) / NI][(g + u) % NI];
      d[0] = d[1] = d[2] = d[3] = 0.0f;  // from zero: 0 + x is x, so the slice order alone fixes every bit
    }
#pragma unroll 1
    for (int s = 0; s < Cfg::SPLIT_K; ++s) {
      float4 x[G];
#pragma unroll
      for (int u = 0; u < G; ++u) x[u] = __ldcg(ws + static_cast<long long>(s) * SLOT + (g + u) * T);
#pragma unroll
      for (int u = 0; u < G; ++u) {
        float* d = acc[(g + u) / NI][(g + u) % NI];
        d[0] += x[u].x, d[1] += x[u].y, d[2] += x[u].z, d[3] += x[u].w;
      }
    }
  }
  return true;
}

}  // namespace tf::sm80

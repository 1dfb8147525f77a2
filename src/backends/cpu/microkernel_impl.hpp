// Micro-kernel and packing templates over a SIMD traits type; included only by the per-ISA translation units.
//
// NOTE: everything here sits in an anonymous namespace on purpose. Each including file is compiled with
// different ISA flags (-mavx512f, -mavx2, none); a template with external linkage instantiated in two of them
// would be merged by the linker, and the AVX-512 copy could end up called on a machine without AVX-512.
#pragma once

#include <cstdint>
#include <cstring>

#include "backends/cpu/microkernel.hpp"
#include "core/half.hpp"

namespace tileforge::cpu {
namespace {

#define TF_UNROLL _Pragma("GCC unroll 64")

// C micro-tile update: acc holds MR x NR sums in registers (NV vectors per row).
template <class T, int MR, int NV>
inline void store_tile(typename T::V (&acc)[MR][NV], float* c, int64_t ldc, float alpha, float beta) {
  const typename T::V va = T::set1(alpha);
  if (beta == 0.0f) {
    TF_UNROLL for (int i = 0; i < MR; ++i) {
      TF_UNROLL for (int j = 0; j < NV; ++j) T::store(c + i * ldc + j * T::L, T::mul(acc[i][j], va));
    }
  } else {
    const typename T::V vb = T::set1(beta);
    TF_UNROLL for (int i = 0; i < MR; ++i) {
      TF_UNROLL for (int j = 0; j < NV; ++j) {
        float* p = c + i * ldc + j * T::L;
        T::store(p, T::fma(acc[i][j], va, T::mul(T::load(p), vb)));
      }
    }
  }
}

// The register-blocked rank-1-update loop: per k, NV vector loads of B, MR broadcasts of A, MR*NV FMAs.
template <class T, int MR, int NR, bool kStream>
void compute(int64_t kc, const float* __restrict ap, const float* __restrict bp, int64_t b_stride,
             float* __restrict c, int64_t ldc, float alpha, float beta) {
  constexpr int NV = NR / T::L;
  static_assert(NR % T::L == 0, "NR must be a whole number of vectors");
  typename T::V acc[MR][NV];
  TF_UNROLL for (int i = 0; i < MR; ++i) {
    TF_UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = T::zero();
  }
  // Touch every line of the C tile now so that all of them are on their way while the k loop runs: a row of
  // NR floats spans NR * 4 / 64 lines (two for 32 floats, four for 64), and the tile's stores (and loads, when
  // beta != 0) at the end would otherwise wait on the lines not fetched, a memory latency per tile when C has
  // left the caches (large C, many KC passes).
  constexpr int kRowLines = (NR * 4 + 63) / 64;
  TF_UNROLL for (int i = 0; i < MR; ++i) {
    float* row = c + i * ldc;
    TF_UNROLL for (int l = 0; l < kRowLines; ++l) T::prefetch_write(row + l * 16);
    // A row that does not start on a line boundary reaches into one more line.
    if ((reinterpret_cast<uintptr_t>(row) & 63) != 0) T::prefetch_write(row + NR - 1);
  }

  int64_t k = 0;
  _Pragma("GCC unroll 4") for (; k < kc; ++k) {
    if constexpr (kStream) {
      // B is read in place, one row of a large matrix per k, rows far apart: no hardware prefetcher follows
      // that. Fetch the same row of the next NR-wide panel now; by the time the loop nest reaches that panel
      // (a whole panel of work later, ~1 us) its lines are in cache, so DRAM streaming overlaps the FMAs.
      constexpr int kVectorsPerLine = 64 / (T::L * 4) > 0 ? 64 / (T::L * 4) : 1;
      TF_UNROLL for (int j = 0; j < NV; j += kVectorsPerLine) T::prefetch_read(bp + NR + j * T::L);
    }
    typename T::V b[NV];
    TF_UNROLL for (int j = 0; j < NV; ++j) b[j] = T::load(bp + j * T::L);
    TF_UNROLL for (int i = 0; i < MR; ++i) {
      const typename T::V a = T::broadcast(ap + i);
      TF_UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = T::fma(a, b[j], acc[i][j]);
    }
    ap += MR;
    bp += b_stride;
  }
  store_tile<T, MR, NV>(acc, c, ldc, alpha, beta);
}

// ---- packing -------------------------------------------------------------------------------------------------

template <DType kType>
inline float load_as_f32(const void* base, int64_t i) {
  if constexpr (kType == DType::f32) {
    return static_cast<const float*>(base)[i];
  } else if constexpr (kType == DType::bf16) {
    return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
  } else {
    return f16_to_float(static_cast<const uint16_t*>(base)[i]);
  }
}

// Panels of W: dst[p][k][0:W] = src(p*W + r, k). The two common strides get their own loops: the element
// index is contiguous along k (s_k == 1) or along mn (s_mn == 1).
template <class T, int W, DType kType>
void pack_typed(int64_t mn, int64_t kc, const void* src, int64_t s_mn, int64_t s_k, float* __restrict dst) {
  const int64_t panels = (mn + W - 1) / W;
  const int64_t full = mn / W;  // panels with all W rows present
  if (s_mn == 1) {
    // Each k gives contiguous source elements across all panels: walk the source row by row (k outer) so that
    // memory is read sequentially, a whole row segment at a time, and scatter into the panels.
    for (int64_t k = 0; k < kc; ++k) {
      const int64_t base = k * s_k;
      for (int64_t p = 0; p < full; ++p) {
        float* __restrict out = dst + p * W * kc + k * W;
        if constexpr (kType == DType::f32) {
          std::memcpy(out, static_cast<const float*>(src) + base + p * W, W * sizeof(float));
        } else {
          TF_UNROLL for (int r = 0; r < W; ++r) out[r] = load_as_f32<kType>(src, base + p * W + r);
        }
      }
    }
  } else if (s_k == 1) {
    // Each source row is contiguous along k: gather W rows into k-major order.
    for (int64_t p = 0; p < full; ++p) {
      float* __restrict out = dst + p * W * kc;
      for (int64_t k = 0; k < kc; ++k) {
        TF_UNROLL for (int r = 0; r < W; ++r) out[k * W + r] = load_as_f32<kType>(src, (p * W + r) * s_mn + k);
      }
    }
  } else {
    for (int64_t p = 0; p < full; ++p) {
      float* __restrict out = dst + p * W * kc;
      for (int64_t k = 0; k < kc; ++k) {
        TF_UNROLL for (int r = 0; r < W; ++r) out[k * W + r] = load_as_f32<kType>(src, (p * W + r) * s_mn + k * s_k);
      }
    }
  }
  // The last, partial panel: the rows present, then zeros.
  if (full < panels) {
    const int64_t r0 = full * W, rows = mn - r0;
    float* __restrict out = dst + full * W * kc;
    for (int64_t k = 0; k < kc; ++k) {
      int r = 0;
      for (; r < rows; ++r) out[k * W + r] = load_as_f32<kType>(src, (r0 + r) * s_mn + k * s_k);
      for (; r < W; ++r) out[k * W + r] = 0.0f;
    }
  }
}

template <class T, int W>
void pack(int64_t mn, int64_t kc, const void* src, int64_t s_mn, int64_t s_k, DType type, float* dst) {
  switch (type) {
    case DType::f32: return pack_typed<T, W, DType::f32>(mn, kc, src, s_mn, s_k, dst);
    case DType::bf16: return pack_typed<T, W, DType::bf16>(mn, kc, src, s_mn, s_k, dst);
    case DType::f16: return pack_typed<T, W, DType::f16>(mn, kc, src, s_mn, s_k, dst);
  }
}

template <class T, int MR, int NR>
constexpr MicroKernel make_microkernel(std::string_view isa) {
  return MicroKernel{isa, MR, NR, &compute<T, MR, NR, false>, &compute<T, MR, NR, true>, &pack<T, MR>,
                     &pack<T, NR>};
}

#undef TF_UNROLL

}  // namespace
}  // namespace tileforge::cpu

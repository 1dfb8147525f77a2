// Small device kernels around the GEMM: copying an operand into an aligned, padded buffer (COPY_AB), checking
// a result against the float64 reference on the device, and overwriting the L2 between reps.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tf::util {

// dst (rows x cols, leading dimension ld_dst, 16-byte aligned rows) = src (leading dimension ld_src), for gridDim.z
// matrices. When every source row starts on 16 bytes (base, ld_src and stride_src), each thread moves 16 bytes (eight
// elements) per load and store: the 2-byte path below moved a 3000 x 3000 operand at under 1 TB/s, a quarter of the
// H200's bandwidth, which made COPY_AB cost more than the aligned rows it buys. Otherwise 16-bit elements move as raw
// bits, two per thread, so that the reads stay coalesced even when source rows start at odd addresses. Columns past
// `cols` up to the next multiple of 8 are written as zero padding; the rest of a padded row is never read.
__device__ __forceinline__ void copy_rows_u16(const unsigned short* src, long long ld_src, long long stride_src,
                                              unsigned short* dst, long long ld_dst, long long stride_dst, int rows,
                                              int cols) {
  const long long batch = blockIdx.z;
  src += batch * stride_src;
  dst += batch * stride_dst;
  const bool wide = ((reinterpret_cast<unsigned long long>(src) | static_cast<unsigned long long>(ld_src) * 2 |
                      static_cast<unsigned long long>(stride_src) * 2) & 15) == 0;
  if (wide) {
    for (int row = blockIdx.y; row < rows; row += gridDim.y) {
      const unsigned short* s_row = src + row * ld_src;
      unsigned short* d_row = dst + row * ld_dst;
      for (int col = (blockIdx.x * blockDim.x + threadIdx.x) * 8; col < cols; col += gridDim.x * blockDim.x * 8) {
        if (col + 8 <= cols) {
          *reinterpret_cast<uint4*>(d_row + col) = __ldg(reinterpret_cast<const uint4*>(s_row + col));
        } else {
          alignas(16) unsigned short v[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) v[i] = col + i < cols ? s_row[col + i] : static_cast<unsigned short>(0);
          *reinterpret_cast<uint4*>(d_row + col) = *reinterpret_cast<const uint4*>(v);
        }
      }
    }
    return;
  }
  for (int row = blockIdx.y; row < rows; row += gridDim.y) {
    for (int col = (blockIdx.x * blockDim.x + threadIdx.x) * 2; col < cols; col += gridDim.x * blockDim.x * 2) {
      const unsigned short* s = src + row * ld_src + col;
      unsigned short* d = dst + row * ld_dst + col;
      const unsigned short v0 = s[0];
      const unsigned short v1 = col + 1 < cols ? s[1] : static_cast<unsigned short>(0);
      *reinterpret_cast<unsigned*>(d) = unsigned(v0) | (unsigned(v1) << 16);
    }
  }
}

template <int kTag>
__device__ __forceinline__ double load_as_double(const void* p, long long i) {
  if constexpr (kTag == 0) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (kTag == 1) {
    return __half2float(static_cast<const __half*>(p)[i]);
  } else {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
}

// Error totals of one result against the float64 reference (see docs/NUMERICS.md): sum of squared errors,
// sum of squared reference values, the largest error scaled by its bound, and NaNs where the reference has none.
struct ErrorTotals {
  double sq_err;
  double sq_ref;
  unsigned long long max_scaled_bits;  // a non-negative double's bits order like the double itself
  unsigned long long nan_count;
  unsigned long long checked;
};

// Computes, per element, ref = alpha * A * B + beta * C_in and bound = |alpha| sum |a||b| + |beta||c| in float64
// and folds |C_out - ref| into the totals: a 16x16 tile of C per block, K staged through shared memory.
template <int kInTag, int kOutTag, bool kARow, bool kBRow>
__device__ __forceinline__ void reference_check(const void* a, const void* b, const void* c_in, const void* c_out,
                                                ErrorTotals* totals, int m, int n, int k, long long lda,
                                                long long ldb, long long ldc, long long sa, long long sb,
                                                long long sc, double alpha, double beta) {
  __shared__ double ta[16][17];
  __shared__ double tb[16][17];
  __shared__ double red_err[256], red_ref[256], red_max[256];
  __shared__ unsigned long long red_nan[256], red_cnt[256];
  const long long e = blockIdx.z;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int row = blockIdx.y * 16 + ty;
  const int col = blockIdx.x * 16 + tx;
  double sum = 0.0, abs_sum = 0.0;
  for (int k0 = 0; k0 < k; k0 += 16) {
    {
      const int r = blockIdx.y * 16 + ty, kk = k0 + tx;
      const long long idx = e * sa + (kARow ? r * lda + kk : kk * lda + r);
      ta[ty][tx] = (r < m && kk < k) ? load_as_double<kInTag>(a, idx) : 0.0;
    }
    {
      const int kk = k0 + ty, cc = blockIdx.x * 16 + tx;
      const long long idx = e * sb + (kBRow ? kk * ldb + cc : cc * ldb + kk);
      tb[ty][tx] = (kk < k && cc < n) ? load_as_double<kInTag>(b, idx) : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const double x = ta[ty][j] * tb[j][tx];
      sum += x;
      abs_sum += fabs(x);
    }
    __syncthreads();
  }
  double err2 = 0.0, ref2 = 0.0, scaled = 0.0;
  unsigned long long nan = 0, cnt = 0;
  if (row < m && col < n) {
    const long long at = e * sc + row * ldc + col;
    const double c = beta != 0.0 ? load_as_double<kOutTag>(c_in, at) : 0.0;
    const double ref = alpha * sum + beta * c;
    const double bound = fabs(alpha) * abs_sum + fabs(beta) * fabs(c);
    const double out = load_as_double<kOutTag>(c_out, at);
    cnt = 1;
    if (isnan(out) && !isnan(ref)) {
      nan = 1;
    } else if (!isnan(ref)) {
      const double d = out - ref;
      err2 = d * d;
      ref2 = ref * ref;
      scaled = bound > 0.0 ? fabs(d) / bound : (d == 0.0 ? 0.0 : fabs(d));
    }
  }
  red_err[tid] = err2;
  red_ref[tid] = ref2;
  red_max[tid] = scaled;
  red_nan[tid] = nan;
  red_cnt[tid] = cnt;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (tid < s) {
      red_err[tid] += red_err[tid + s];
      red_ref[tid] += red_ref[tid + s];
      red_max[tid] = fmax(red_max[tid], red_max[tid + s]);
      red_nan[tid] += red_nan[tid + s];
      red_cnt[tid] += red_cnt[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) {
    atomicAdd(&totals->sq_err, red_err[0]);
    atomicAdd(&totals->sq_ref, red_ref[0]);
    atomicMax(&totals->max_scaled_bits, static_cast<unsigned long long>(__double_as_longlong(red_max[0])));
    atomicAdd(&totals->nan_count, red_nan[0]);
    atomicAdd(&totals->checked, red_cnt[0]);
  }
}

// Overwrites `words` 32-bit words so that the next kernel finds none of its operands in L2.
__device__ __forceinline__ void scrub(unsigned* buf, long long words, unsigned value) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
    buf[i] = value + unsigned(i);
}

}  // namespace tf::util

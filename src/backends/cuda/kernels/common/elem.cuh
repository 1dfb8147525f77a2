// Element types of the CUDA kernels by tag: 0 = f32, 1 = f16, 2 = bf16 (the host's DType order), with their
// conversions to and from float.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tf {

template <int kTag>
struct Elem;
template <>
struct Elem<0> {
  using T = float;
  static __device__ __forceinline__ T from_float(float v) { return v; }
  static __device__ __forceinline__ float to_float(T v) { return v; }
};
template <>
struct Elem<1> {
  using T = __half;
  static __device__ __forceinline__ T from_float(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ float to_float(T v) { return __half2float(v); }
};
template <>
struct Elem<2> {
  using T = __nv_bfloat16;
  static __device__ __forceinline__ T from_float(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ float to_float(T v) { return __bfloat162float(v); }
};

}  // namespace tf

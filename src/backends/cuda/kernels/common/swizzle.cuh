// Shared-memory swizzle of 16-byte chunks for tiles read by ldmatrix: host- and device-side, so unit tests
// can prove the bank-conflict freedom of the exact function the kernels use.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TF_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TF_HOST_DEVICE inline
#endif

namespace tf {

// XORs the 16-byte chunk index inside each 128-byte line (byte-offset bits 4..6) with a 3-bit row index: the
// row itself for rows of 128 bytes or more, the 128-byte line for shorter rows (two or four rows share a line).
// Eight consecutive rows of one 16-byte column, as one ldmatrix phase reads them, then land in eight different
// chunk positions, i.e. eight disjoint groups of four banks, for every row length of 32 to 512 bytes. (XORing
// with the line index alone would fail for rows of 256 bytes: rows two lines apart would repeat patterns.)
// The offset is relative to a tile base aligned to 128 bytes; only bits 4..6 change, so every 2-, 4-, 8- and
// 16-byte access stays inside its chunk. kRowBytes must be a power of two.
template <unsigned kRowBytes>
TF_HOST_DEVICE constexpr unsigned swizzle_128b(unsigned byte_offset) {
  constexpr unsigned kUnit = kRowBytes >= 128 ? kRowBytes : 128;
  return byte_offset ^ (((byte_offset / kUnit) & 7u) << 4);
}

// The swizzle of a sum, from the swizzle of its per-thread part `base` and a compile-time `offset`:
//   swizzle_128b(base + offset) == (swizzle_128b(base) ^ swizzle_xor(offset)) + swizzle_add(offset)
// i.e. the offset's own swizzle split into its bits inside a 128-byte line (XORed: they only touch the 16-byte
// chunk index) and above (added). This holds for the offsets the kernels combine (a copy chunk's from the
// thread's first chunk, an ldmatrix step's from the lane's first address), for every tile shape the family
// allows (tests/backends/cuda/swizzle_test.cpp); it also holds with a 128-byte-aligned tile base added to both
// sides, so an address costs one XOR and an immediate offset instead of a swizzle per access.
template <unsigned kRowBytes>
TF_HOST_DEVICE constexpr unsigned swizzle_xor(unsigned offset) {
  return swizzle_128b<kRowBytes>(offset) & 127u;
}
template <unsigned kRowBytes>
TF_HOST_DEVICE constexpr unsigned swizzle_add(unsigned offset) {
  return swizzle_128b<kRowBytes>(offset) & ~127u;
}

}  // namespace tf

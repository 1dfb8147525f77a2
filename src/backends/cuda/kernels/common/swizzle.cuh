// Shared-memory swizzle of 16-byte chunks for tiles read by ldmatrix: host- and device-side, so unit tests
// can prove the bank-conflict freedom of the exact function the kernels use.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TF_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TF_HOST_DEVICE inline
#endif

namespace tf {

// XORs the 16-byte chunk index inside each 128-byte line (byte-offset bits 4..6) with the line index modulo 8
// (bits 7..9). Eight rows of one 16-byte column, as one ldmatrix phase reads them, then land in eight
// different chunk positions, i.e. eight disjoint groups of four banks, for any row length that is a multiple
// of 32 bytes (the identity on rows of exactly 16 bytes would not be: such tiles are never used).
// The offset is relative to a tile base aligned to 128 bytes; only bits 4..6 change, so every 2-, 4-, 8- and
// 16-byte access stays inside its chunk.
TF_HOST_DEVICE unsigned swizzle_128b(unsigned byte_offset) {
  return byte_offset ^ (((byte_offset >> 7) & 7u) << 4);
}

}  // namespace tf

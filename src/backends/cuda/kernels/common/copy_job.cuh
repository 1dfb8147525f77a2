// COPY_AB's copy kernel argument (tf_copy_u16): the matrices one launch copies, in a header the host compiler also
// reads so that the launch fills the same layout the kernel reads.
#pragma once

namespace tf::util {

// One 16-bit matrix (rows x cols of batch matrices stride_* apart) copied into rows ld_dst apart; dst's rows start on
// 16 bytes.
struct CopyMatrix {
  const unsigned short* src;
  unsigned short* dst;
  long long ld_src, stride_src, ld_dst, stride_dst;
  int rows, cols;
};

// A and B in one launch: blockIdx.z runs over count x batch matrices, so the two copies share one ramp and one
// tail instead of two of each.
struct CopyJob {
  CopyMatrix matrix[2];
  int count;  // 1 or 2
  int batch;
};

}  // namespace tf::util

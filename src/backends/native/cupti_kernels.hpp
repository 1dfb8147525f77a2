// What kernels a vendor library call launched: CUPTI's activity records, opened at run time, and what the names say.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::native_detail {

// What a vendor kernel's name says about its shape; each field is 0 (or empty) where the name does not say it, so
// that nothing is shown that the library did not name.
struct VendorKernelInfo {
  int tile_m = 0, tile_n = 0;  // the CTA tile, M x N as the library names it (its own column-major M and N)
  int block_k = 0;             // the K step of one main-loop iteration
  int stages = 0;              // the pipeline's depth
  std::vector<int> cluster;    // the thread-block cluster, as many dimensions as the name gives (2x1 or 2x1x1)
  bool split_k_reduction = false;  // a split-K reduction kernel that adds the partial sums (no tile of its own)
};

// Parses the names cuBLAS and cuBLASLt launch (a pure function; never fails, an unknown name gives an empty info):
//   nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_NNT              tile 256x128, BLOCK_K 64, 4 stages, cluster 2x1
//   sm80_xmma_gemm_..._tilesize160x128x32_stage4_...        tile 160x128, BLOCK_K 32, 4 stages
//   cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8   tile 256x128, BLOCK_K 32, 3 stages
//   cutlass3x_sm90_..._128x256x64_2x1x1_0_tnn_...           tile 128x256, BLOCK_K 64, cluster 2x1x1
//   ampere_h16816gemm_128x128_ldg8_stages_32x5_nn           tile 128x128, BLOCK_K 32, 5 stages
//   splitKreduce_kernel, reduce_1Block_kernel               split-K reduction
// Demangled names ("void cutlass::Kernel2<cutlass_80_...>(...)") are read the same way.
VendorKernelInfo parse_vendor_kernel(std::string_view name);

// "tile 256x128, BLOCK_K 64, 4 stages, cluster 2x1", "split-K reduction", or "" when the name says nothing.
std::string describe(const VendorKernelInfo& info);

// `name (what it says)`, or the name alone when it says nothing; several names joined with " + ".
std::string describe_kernels(const std::vector<std::string>& names);

// The CUPTI libraries tried, in order: $TILEFORGE_CUPTI alone when it is set (to a path; "0" turns capture off and
// gives none), else libcupti.so.13 on the loader's path, then the places beside the library holding `beside` (an
// address in it, e.g. a cuBLAS entry point; null: none) where the toolkit and NVIDIA's pip wheels keep CUPTI.
std::vector<std::string> cupti_candidates(const void* beside);

// Whether the user turned kernel-name capture off (TILEFORGE_CUPTI=0): then nothing is captured and nothing noted.
bool kernel_capture_disabled();

// Opens CUPTI at `path` and resolves every entry point capture needs, without caching (capture caches its own);
// not_available with the path and the loader's message when that fails.
Status probe_cupti(const std::string& path);

// What capture_kernel_names saw: the launch's own status, and the kernels it launched or why they are not known.
struct CapturedLaunch {
  Status launched;
  Expected<std::vector<std::string>> names = not_available("not captured");
};

// Runs `launch` exactly once, whatever becomes of the capture, with CUPTI's kernel records enabled around it: the
// stream is synchronized and the records flushed before the record kind is disabled again, so later calls run
// without CUPTI's tracing. The names (demangled where they are mangled) come in start order, only those launched on
// `stream` where CUPTI can tell streams apart. One capture at a time per process (CUPTI's activity is process-wide);
// the caller has the stream's context current. Every failure is a Status in `names`, never a crash.
CapturedLaunch capture_kernel_names(const std::function<Status()>& launch, void* stream, const void* beside);

}  // namespace tileforge::native_detail

// What cuBLAS's kernel names say (tile, BLOCK_K, stages, cluster) and nothing more, and CUPTI's loader failing
// cleanly: a missing library, the opt-out. Runs without a GPU; cupti_gpu_test.cpp captures real names.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/native/cupti_kernels.hpp"

namespace tileforge::native_detail {
namespace {

// Sets an environment variable for a scope and restores what was there.
class EnvFor {
 public:
  EnvFor(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~EnvFor() {
    if (old_) ::setenv(name_, old_->c_str(), 1); else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

struct NameCase {
  const char* name;
  int tile_m, tile_n, block_k, stages;
  std::vector<int> cluster;
  bool reduction;
  const char* says;
};

// Names as cuBLAS 12.x and 13.x launch them on Hopper, Ampere and Blackwell (nsys and ncu reports), and CUTLASS's.
const NameCase kNames[] = {
    {"nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_NNT", 256, 128, 64, 4, {2, 1}, false,
     "tile 256x128, BLOCK_K 64, 4 stages, cluster 2x1"},
    {"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", 256, 128, 64, 4, {1, 2}, false,
     "tile 256x128, BLOCK_K 64, 4 stages, cluster 1x2"},
    {"nvjet_tst_128x256_64x3_1x2_h_bz_coopA_TNN", 128, 256, 64, 3, {1, 2}, false,
     "tile 128x256, BLOCK_K 64, 3 stages, cluster 1x2"},
    {"nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNN", 128, 256, 64, 4, {2, 1}, false,
     "tile 128x256, BLOCK_K 64, 4 stages, cluster 2x1"},
    {"nvjet_sm90_hss_64x8_64x16_1x1_h_bz_splitK_NNT", 64, 8, 64, 16, {1, 1}, false,
     "tile 64x8, BLOCK_K 64, 16 stages, cluster 1x1"},
    {"nvjet_hsh_32x64_64x16_4x1_v_bz_splitK_TNN", 32, 64, 64, 16, {4, 1}, false,
     "tile 32x64, BLOCK_K 64, 16 stages, cluster 4x1"},
    {"nvjet_sm100_tst_64x16_64x16_2x4_2cta_h_bz_splitK_TNT", 64, 16, 64, 16, {2, 4}, false,
     "tile 64x16, BLOCK_K 64, 16 stages, cluster 2x4"},
    // Blackwell's mma form: the tile and its K step are named; what the "3" after it means is not said, so no stages.
    {"nvjet_sm120_tst_mma_64x64x128_3_32x32x128_tmaAB_alignCD4_bz_TNNN", 64, 64, 128, 0, {}, false,
     "tile 64x64, BLOCK_K 128"},
    {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_"
     "cublas",
     128, 256, 64, 0, {}, false, "tile 128x256, BLOCK_K 64"},
    {"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_execute_kernel__5x_"
     "cublas",
     160, 128, 32, 4, {}, false, "tile 160x128, BLOCK_K 32, 4 stages"},
    {"cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8", 256, 128, 32, 3, {}, false,
     "tile 256x128, BLOCK_K 32, 3 stages"},
    {"cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_64x1_tn_align8", 32, 32, 64, 1, {}, false,
     "tile 32x32, BLOCK_K 64, 1 stage"},
    {"void cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_f16_128x128_32x3_nn_align8>(cutlass_80_tensorop_f16_"
     "s16816gemm_f16_128x128_32x3_nn_align8::Params)",
     128, 128, 32, 3, {}, false, "tile 128x128, BLOCK_K 32, 3 stages"},
    {"cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_128x256x64_2x1x1_0_tnn_align8_warpspecialized_"
     "cooperative_epi_tma",
     128, 256, 64, 0, {2, 1, 1}, false, "tile 128x256, BLOCK_K 64, cluster 2x1x1"},
    {"ampere_h16816gemm_128x128_ldg8_stages_32x5_nn", 128, 128, 32, 5, {}, false, "tile 128x128, BLOCK_K 32, 5 stages"},
    {"ampere_fp16_s16816gemm_fp16_128x64_ldg8_f2f_stages_64x4_tn", 128, 64, 64, 4, {}, false,
     "tile 128x64, BLOCK_K 64, 4 stages"},
    // The older names give the tile alone: the next word (ldg8) is no K step.
    {"volta_h884gemm_256x128_ldg8_nn", 256, 128, 0, 0, {}, false, "tile 256x128"},
    {"ampere_sgemm_128x64_nn", 128, 64, 0, 0, {}, false, "tile 128x64"},
    {"void cublasLt::splitKreduce_kernel<32, 16, int, __half, __half, float, __half, true, false, false>"
     "(cublasLt::cublasSplitKParams<float>, __half const*, __half const*, __half*, float const*, float const*, "
     "__half const*, __half const*, __half*, void*, long, float*, int*)",
     0, 0, 0, 0, {}, true, "split-K reduction"},
    {"splitKreduce_kernel", 0, 0, 0, 0, {}, true, "split-K reduction"},
    {"void reduce_1Block_kernel<float, 128, 7>(float const*, float*, int)", 0, 0, 0, 0, {}, true, "split-K reduction"},
    // Names that say none of it: nothing is made up.
    {"void gemv2T_kernel_val<int, int, __half, __half, float, 128, 16, 4, 4, false, false>(cublasGemvParams<cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half>, float>)",
     0, 0, 0, 0, {}, false, ""},
    {"gemmSN_NN_kernel", 0, 0, 0, 0, {}, false, ""},
    {"", 0, 0, 0, 0, {}, false, ""},
    {"nvjet_hsh_0x128_64x4_2x1_v_bz_NNT", 0, 0, 0, 0, {}, false, ""},  // a zero is no tile
};

TEST(CuptiKernelNames, ParsesWhatEachNameSays) {
  for (const NameCase& c : kNames) {
    SCOPED_TRACE(c.name);
    const VendorKernelInfo info = parse_vendor_kernel(c.name);
    EXPECT_EQ(info.tile_m, c.tile_m);
    EXPECT_EQ(info.tile_n, c.tile_n);
    EXPECT_EQ(info.block_k, c.block_k);
    EXPECT_EQ(info.stages, c.stages);
    EXPECT_EQ(info.cluster, c.cluster);
    EXPECT_EQ(info.split_k_reduction, c.reduction);
    EXPECT_EQ(describe(info), c.says);
  }
}

TEST(CuptiKernelNames, DescribesSeveralKernelsJoined) {
  EXPECT_EQ(describe_kernels({"nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_NNT"}),
            "nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_NNT (tile 256x128, BLOCK_K 64, 4 stages, cluster 2x1)");
  EXPECT_EQ(describe_kernels({"nvjet_hss_64x8_64x16_1x1_v_bz_splitK_NNT", "gemmSN_NN_kernel"}),
            "nvjet_hss_64x8_64x16_1x1_v_bz_splitK_NNT (tile 64x8, BLOCK_K 64, 16 stages, cluster 1x1) + "
            "gemmSN_NN_kernel");
  EXPECT_EQ(describe_kernels({}), "");
}

TEST(CuptiLoader, SearchOrderStartsWithTheOverrideAlone) {
  {
    EnvFor env("TILEFORGE_CUPTI", "/no/such/dir/libcupti.so.13");
    EXPECT_EQ(cupti_candidates(nullptr), std::vector<std::string>{"/no/such/dir/libcupti.so.13"});
    EXPECT_FALSE(kernel_capture_disabled());
  }
  {
    EnvFor env("TILEFORGE_CUPTI", "0");
    EXPECT_TRUE(cupti_candidates(nullptr).empty());
    EXPECT_TRUE(kernel_capture_disabled());
  }
  ::unsetenv("TILEFORGE_CUPTI");
  const auto plain = cupti_candidates(nullptr);
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(plain.front(), "libcupti.so.13");
}

TEST(CuptiLoader, MissingLibraryIsAClearStatus) {
  const Status s = probe_cupti("/no/such/dir/libcupti.so.13");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::not_available);
  EXPECT_NE(s.message().find("/no/such/dir/libcupti.so.13"), std::string::npos) << s.message();
}

// A capture whose CUPTI is missing still runs the call exactly once, and says why it has no names.
TEST(CuptiLoader, CaptureWithAMissingLibraryRunsTheCallOnce) {
  EnvFor env("TILEFORGE_CUPTI", "/no/such/dir/libcupti.so.13");
  int calls = 0;
  CapturedLaunch c = capture_kernel_names([&] { ++calls; return Status{}; }, nullptr, nullptr);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(c.launched.ok());
  ASSERT_FALSE(c.names.ok());
  EXPECT_EQ(c.names.status().code(), Code::not_available);
  EXPECT_FALSE(c.names.status().message().empty());
}

TEST(CuptiLoader, OptOutRunsTheCallOnceAndCapturesNothing) {
  EnvFor env("TILEFORGE_CUPTI", "0");
  int calls = 0;
  CapturedLaunch c = capture_kernel_names([&] { ++calls; return invalid_argument("the call's own error"); }, nullptr,
                                          nullptr);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(c.launched.message(), "the call's own error");
  ASSERT_FALSE(c.names.ok());
  EXPECT_NE(c.names.status().message().find("TILEFORGE_CUPTI=0"), std::string::npos) << c.names.status().message();
}

// With the real library (where one is found): a call that launches nothing yields a clean Status, whether or not a
// GPU is there (no driver, no context, or no kernel recorded), and the call runs once.
TEST(CuptiLoader, ARealLibraryAroundACallThatLaunchesNothingGivesAStatus) {
  ::unsetenv("TILEFORGE_CUPTI");
  std::string found;
  for (const std::string& path : cupti_candidates(nullptr)) {
    if (probe_cupti(path).ok()) {
      found = path;
      break;
    }
  }
  if (found.empty()) GTEST_SKIP() << "SKIPPED: no CUPTI on the loader's path";
  for (int round = 0; round < 2; ++round) {
    int calls = 0;
    CapturedLaunch c = capture_kernel_names([&] { ++calls; return Status{}; }, nullptr, nullptr);
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(c.launched.ok());
    ASSERT_FALSE(c.names.ok());
    EXPECT_FALSE(c.names.status().message().empty());
    std::printf("%s: %s\n", found.c_str(), c.names.status().to_string().c_str());
  }
}

}  // namespace
}  // namespace tileforge::native_detail

// The ptxas -v report as NVRTC 13 prints it (logs captured from real compiles), plus the older layout.
#include <gtest/gtest.h>

#include "jit/ptxas_report.hpp"

namespace tileforge::jit {
namespace {

// NVRTC 13.0, --gpu-architecture=sm_90a --ptxas-options=-v (verbatim).
constexpr const char* kSm90aLog = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1dPf' for 'sm_90a'
ptxas info    : Function properties for _Z1dPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers
ptxas info    : Compile time = 2.537 ms
ptxas info    : Compiling entry function '_Z5spillPfPKfi' for 'sm_90a'
ptxas info    : Function properties for _Z5spillPfPKfi
ptxas         .     224 bytes stack frame, 444 bytes spill stores, 444 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 224 bytes cumulative stack size, 4096 bytes smem
ptxas info    : Compile time = 45.195 ms
)";

// NVRTC 13.0 for sm_80 adds the parameter bank.
constexpr const char* kSm80Log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers, 372 bytes cmem[0]
ptxas info    : Compile time = 2.173 ms
)";

TEST(PtxasReport, ParsesNvrtc13Sm90a) {
  PtxasReport r = parse_ptxas_report(kSm90aLog);
  ASSERT_EQ(r.functions.size(), 2u);
  const FunctionResources* d = r.find("_Z1dPf");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->arch, "sm_90a");
  EXPECT_EQ(d->registers, 10);
  EXPECT_EQ(d->barriers, 1);
  EXPECT_EQ(d->stack_frame_bytes, 0);
  EXPECT_EQ(d->smem_bytes, 0);
  EXPECT_FALSE(d->spills());
  const FunctionResources* s = r.find("_Z5spillPfPKfi");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->registers, 32);
  EXPECT_EQ(s->stack_frame_bytes, 224);
  EXPECT_EQ(s->spill_store_bytes, 444);
  EXPECT_EQ(s->spill_load_bytes, 444);
  EXPECT_EQ(s->smem_bytes, 4096);
  EXPECT_TRUE(r.any_spills());
}

TEST(PtxasReport, ParsesCmemAndOlderLayout) {
  PtxasReport r = parse_ptxas_report(kSm80Log);
  ASSERT_EQ(r.functions.size(), 1u);
  EXPECT_EQ(r.functions[0].cmem0_bytes, 372);
  EXPECT_EQ(r.functions[0].barriers, 0);

  // CUDA 11-era layout: no barrier count, smem and cmem on the same line.
  PtxasReport old = parse_ptxas_report(
      "ptxas info    : Compiling entry function '_Z4gemmv' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z4gemmv\n"
      "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 255 registers, 49152 bytes smem, 360 bytes cmem[0]\n");
  ASSERT_EQ(old.functions.size(), 1u);
  EXPECT_EQ(old.functions[0].registers, 255);
  EXPECT_EQ(old.functions[0].smem_bytes, 49152);
  EXPECT_EQ(old.functions[0].cmem0_bytes, 360);
}

TEST(PtxasReport, KeepsWarningsAndSkipsNonEntryFunctions) {
  PtxasReport r = parse_ptxas_report(
      "ptxas info    : Function properties for _Z6helperv\n"
      "ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas warning : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 8 bytes smem\n");
  ASSERT_EQ(r.functions.size(), 1u);
  EXPECT_EQ(r.functions[0].registers, 168);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("C7511"), std::string::npos);
}

TEST(PtxasReport, EmptyLogGivesNothing) {
  PtxasReport r = parse_ptxas_report("");
  EXPECT_TRUE(r.functions.empty());
  EXPECT_EQ(r.find("k"), nullptr);
}

}  // namespace
}  // namespace tileforge::jit

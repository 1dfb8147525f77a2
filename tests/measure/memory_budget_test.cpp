// The memory estimate of a case (exact bytes per term), its check against a limit, and the sizes it reads and prints.
#include <gtest/gtest.h>

#include <limits>

#include "measure/memory_budget.hpp"

namespace tileforge::measure {
namespace {

Problem problem(int64_t m, int64_t n, int64_t k, DType in = DType::f32, DType out = DType::f32) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.precision = {in, out, DType::f32};
  return p;
}

uint64_t term(const std::vector<MemoryTerm>& terms, const std::string& name) {
  for (const auto& t : terms)
    if (t.name == name) return t.bytes;
  ADD_FAILURE() << "no term " << name;
  return 0;
}

TEST(MemoryBudget, CpuCaseHoldsOperandsOnceOneCPerBackendAndTheFullReference) {
  CaseLayout layout;
  layout.participants = 3;
  const MemoryNeed need = case_memory(problem(64, 32, 16), layout);
  EXPECT_EQ(term(need.host, "A"), 64u * 16 * 4);
  EXPECT_EQ(term(need.host, "B"), 16u * 32 * 4);
  EXPECT_EQ(term(need.host, "C in"), 64u * 32 * 4);
  EXPECT_EQ(term(need.host, "C x3"), 3u * 8192);
  EXPECT_EQ(term(need.host, "reference"), 64u * 32 * 16 + 64 * 8);  // value and bound per element, row indices
  // Each operand once: generated in place in the memory the CPU backends read (before issue 18, a copy of each too).
  EXPECT_EQ(need.host.size(), 5u);
  EXPECT_EQ(need.host_bytes(), 4096u + 2048 + 8192 + 3 * 8192 + 33280);
  EXPECT_TRUE(need.device.empty());
}

TEST(MemoryBudget, ReferenceAboveTheFullLimitCoversSampledRowsOnly) {
  CaseLayout layout;
  layout.participants = 1;
  const MemoryNeed need = case_memory(problem(4096, 4096, 4096), layout);
  // 4096^3 multiply-adds is over 2e9: floor(2e9 / 4096^2) = 119 rows are covered.
  EXPECT_EQ(term(need.host, "reference"), 119u * 4096 * 16 + 119 * 8);
}

TEST(MemoryBudget, GpuCasePlacesOperandsAndCsOnTheDevice) {
  CaseLayout layout;
  layout.participants = 2;
  layout.device_operands = true;
  layout.host_reference = false;
  const MemoryNeed need = case_memory(problem(4096, 2048, 1024, DType::f16, DType::f16), layout);
  const uint64_t a = 4096ull * 1024 * 2, b = 1024ull * 2048 * 2, c = 4096ull * 2048 * 2;
  // The reference is computed on the device: each operand is generated on the host and freed after its upload.
  EXPECT_EQ(need.host_bytes(), c);
  EXPECT_EQ(term(need.host, "upload staging"), c);
  EXPECT_EQ(need.device_bytes(), a + b + c + 2 * c);  // A, B, C in, and two Cs
  EXPECT_EQ(term(need.device, "C x2"), 2 * c);
  // With a host reference the host keeps the generated A, B and C in, and the reference.
  layout.host_reference = true;
  const MemoryNeed kept = case_memory(problem(64, 32, 16, DType::f16, DType::f16), layout);
  EXPECT_EQ(kept.host_bytes(), 64u * 16 * 2 + 16 * 32 * 2 + 64 * 32 * 2 + 64 * 32 * 16 + 64 * 8);
}

TEST(MemoryBudget, OurWorkspaceGoesWhereTheOperandsAreAndTheTimersBufferOnTheDevice) {
  CaseLayout layout;
  layout.workspace = 5'000'000;
  const Problem p = problem(64, 32, 16, DType::f32, DType::f32);
  const MemoryNeed cpu = case_memory(p, layout);
  EXPECT_EQ(term(cpu.host, "our workspace"), 5'000'000u);
  EXPECT_EQ(cpu.host_bytes(), case_memory(p, CaseLayout{}).host_bytes() + 5'000'000u);
  EXPECT_EQ(cpu.device_bytes(), 0u);
  layout.device_operands = true;
  layout.host_reference = false;
  layout.timer_bytes = 62'914'560;  // an H200's scrub: twice the L2, whole MiB
  const MemoryNeed gpu = case_memory(p, layout);
  EXPECT_EQ(term(gpu.device, "our workspace"), 5'000'000u);
  EXPECT_EQ(term(gpu.device, "L2 scrub buffer"), 62'914'560u);
  for (const auto& t : gpu.host) EXPECT_NE(t.name, "our workspace");
  // The refusal names them among the terms.
  const Status s = check_memory(gpu, std::nullopt, MemoryLimit{50'000'000, "--max-memory"});
  EXPECT_NE(s.message().find("L2 scrub buffer 62.9 MB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("our workspace 5 MB"), std::string::npos) << s.message();
}

TEST(MemoryBudget, LeadingDimensionsAndBatchStridesCount) {
  CaseLayout layout;
  Problem wide = problem(64, 64, 64);
  wide.lda = 100000000;
  EXPECT_EQ(term(case_memory(wide, layout).host, "A"), (63ull * 100000000 + 64) * 4);
  Problem batched = problem(8, 8, 8);
  batched.batch = 1000000;
  EXPECT_EQ(term(case_memory(batched, layout).host, "B"), 64ull * 1000000 * 4);
  batched.stride_b = 1000;  // entries spaced wider than one matrix
  EXPECT_EQ(term(case_memory(batched, layout).host, "B"), (999999ull * 1000 + 64) * 4);
}

TEST(MemoryBudget, CheckNamesTheFigureTheTermsAndTheLimit) {
  MemoryNeed need;
  need.host = {{"A", 8000000000}, {"B", 1000000000}, {"reference", 0}};
  need.device = {{"A", 3000000000}};
  EXPECT_TRUE(check_memory(need, MemoryLimit{9000000000, "MemAvailable"}, std::nullopt));
  const Status host = check_memory(need, MemoryLimit{5000000000, "MemAvailable"}, std::nullopt);
  ASSERT_FALSE(host);
  EXPECT_EQ(host.code(), Code::not_available);
  EXPECT_EQ(host.message(),
            "needs 9 GB of host memory (A 8 GB, B 1 GB), more than the 5 GB available (MemAvailable) — reduce the "
            "problem or raise --max-memory");
  const Status device = check_memory(need, std::nullopt, MemoryLimit{2500000000, "--max-memory"});
  ASSERT_FALSE(device);
  EXPECT_NE(device.message().find("needs 3 GB of device memory (A 3 GB), more than the 2.5 GB available (--max-memory)"),
            std::string::npos)
      << device.message();
  EXPECT_TRUE(check_memory(need, std::nullopt, std::nullopt));  // no limit known: nothing to refuse against
}

TEST(MemoryBudget, HugeSpansSaturateInsteadOfWrapping) {
  CaseLayout layout;
  Problem p = problem(2, 2, 2);
  p.batch = int64_t(1) << 40;
  p.stride_a = int64_t(1) << 40;
  const MemoryNeed need = case_memory(p, layout);
  EXPECT_EQ(need.host_bytes(), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(check_memory(need, MemoryLimit{uint64_t(1) << 62, "MemAvailable"}, std::nullopt));
}

TEST(MemoryBudget, FormatsBytesWithThreeSignificantDigits) {
  EXPECT_EQ(format_bytes(96), "96 B");
  EXPECT_EQ(format_bytes(1500), "1.5 kB");
  EXPECT_EQ(format_bytes(512000000), "512 MB");
  EXPECT_EQ(format_bytes(23400000000), "23.4 GB");
  EXPECT_EQ(format_bytes(20149000000), "20.1 GB");
  EXPECT_EQ(format_bytes(8000000000), "8 GB");
}

TEST(MemoryBudget, ParsesMaxMemory) {
  EXPECT_EQ(*parse_memory_size("500000000"), 500000000u);
  EXPECT_EQ(*parse_memory_size("20G"), 20000000000u);
  EXPECT_EQ(*parse_memory_size("1.5GB"), 1500000000u);
  EXPECT_EQ(*parse_memory_size("64m"), 64000000u);
  EXPECT_EQ(*parse_memory_size("2T"), 2000000000000u);
  for (const char* bad : {"", "0", "-5", "abc", "5X", "G", "1e3", "99999999999T"}) {
    auto v = parse_memory_size(bad);
    ASSERT_FALSE(v) << bad;
    EXPECT_EQ(v.status().code(), Code::invalid_argument) << bad;
    EXPECT_NE(v.status().message().find("--max-memory"), std::string::npos) << v.status().message();
    EXPECT_NE(v.status().message().find("allowed"), std::string::npos) << v.status().message();
  }
}

TEST(MemoryBudget, ReadsMemAvailableFromMeminfo) {
  EXPECT_EQ(parse_mem_available("MemTotal:       16384 kB\nMemFree:    1024 kB\nMemAvailable:    2048 kB\n"),
            std::optional<uint64_t>(2048u * 1024));
  EXPECT_FALSE(parse_mem_available("MemTotal:       16384 kB\n"));
  EXPECT_FALSE(parse_mem_available("MemAvailable: lots\n"));
  // This host answers one way or the other.
  auto here = host_memory_available();
  ASSERT_TRUE(here);
  EXPECT_GT(here->bytes, 0u);
}

}  // namespace
}  // namespace tileforge::measure

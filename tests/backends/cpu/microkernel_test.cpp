// Micro-kernels and packing routines on their own, for every family the host can run, against plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/microkernel.hpp"
#include "core/half.hpp"

namespace tileforge::cpu {
namespace {

std::vector<float> random_floats(std::size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

class MicroKernelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (Support s = family_runs_here(GetParam()); !s) GTEST_SKIP() << "SKIPPED: " << s.reason;
  }
};

TEST_P(MicroKernelTest, ComputeMatchesLoopsForPackedAndStreamedB) {
  for (const MicroKernel& uk : microkernels_for(GetParam())) {
    for (int64_t kc : {1, 7, 64, 173}) {
      const int mr = uk.mr, nr = uk.nr;
      const int64_t ldc = nr + 5, b_ld = nr + 11;
      auto ap = random_floats(std::size_t(mr * kc), 1 + kc);
      auto bp = random_floats(std::size_t(nr * kc), 2 + kc);
      auto bs = random_floats(std::size_t(b_ld * kc + nr), 3 + kc);  // B in place, rows b_ld apart
      auto c0 = random_floats(std::size_t(mr * ldc), 4 + kc);
      const float alpha = 0.75f, beta = -1.25f;
      for (int variant = 0; variant < 4; ++variant) {
        const bool stream = variant & 1, use_beta = variant & 2;
        const float* b = stream ? bs.data() : bp.data();
        const int64_t b_stride = stream ? b_ld : nr;
        std::vector<float> c = c0;
        if (!use_beta)
          for (auto& x : c) x = std::nanf("");  // beta == 0 must not read C
        (stream ? uk.compute_stream : uk.compute)(kc, ap.data(), b, b_stride, c.data(), ldc, alpha,
                                                   use_beta ? beta : 0.0f);
        for (int i = 0; i < mr; ++i) {
          for (int j = 0; j < nr; ++j) {
            double sum = 0;
            for (int64_t k = 0; k < kc; ++k) sum += double(ap[k * mr + i]) * b[k * b_stride + j];
            double want = alpha * sum + (use_beta ? beta * double(c0[i * ldc + j]) : 0.0);
            ASSERT_NEAR(c[i * ldc + j], want, 1e-5 * (1 + std::sqrt(double(kc))))
                << uk.isa << " " << mr << "x" << nr << " kc=" << kc << " variant=" << variant << " at " << i << ","
                << j;
          }
          // Columns past NR in the padded row are untouched.
          for (int64_t j = nr; j < ldc; ++j) {
            if (use_beta) {
              ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]);
            } else {
              ASSERT_TRUE(std::isnan(c[i * ldc + j]));
            }
          }
        }
      }
    }
  }
}

TEST_P(MicroKernelTest, PackingConvertsPadsAndFollowsBothStrides) {
  for (const MicroKernel& uk : microkernels_for(GetParam())) {
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      for (int width_is_a = 0; width_is_a < 2; ++width_is_a) {
        const int w = width_is_a ? uk.mr : uk.nr;
        const PackFn pack = width_is_a ? uk.pack_a : uk.pack_b;
        for (int64_t mn : {int64_t(1), int64_t(w), int64_t(2 * w + 3)}) {
          const int64_t kc = 19;
          for (int contiguous_k = 0; contiguous_k < 2; ++contiguous_k) {
            const int64_t s_mn = contiguous_k ? kc + 2 : 1, s_k = contiguous_k ? 1 : mn + 3;
            const int64_t count = (mn - 1) * s_mn + (kc - 1) * s_k + 1;
            auto src32 = random_floats(std::size_t(count), uint32_t(mn * 31 + kc));
            std::vector<uint16_t> src16(static_cast<std::size_t>(count));
            for (int64_t i = 0; i < count; ++i)
              src16[i] = t == DType::bf16 ? float_to_bf16(src32[i]) : float_to_f16(src32[i]);
            const void* src = t == DType::f32 ? static_cast<const void*>(src32.data()) : src16.data();
            const int64_t panels = (mn + w - 1) / w;
            std::vector<float> dst(std::size_t(panels * w * kc), std::nanf(""));
            pack(mn, kc, src, s_mn, s_k, t, dst.data());
            for (int64_t r = 0; r < panels * w; ++r) {
              for (int64_t k = 0; k < kc; ++k) {
                const float got = dst[(r / w) * w * kc + k * w + r % w];
                float want = 0.0f;
                if (r < mn) {
                  const int64_t i = r * s_mn + k * s_k;
                  want = t == DType::f32 ? src32[i] : t == DType::bf16 ? bf16_to_float(src16[i]) : f16_to_float(src16[i]);
                }
                ASSERT_EQ(got, want) << uk.isa << " w=" << w << " mn=" << mn << " type=" << to_string(t) << " r=" << r
                                     << " k=" << k;
              }
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, MicroKernelTest, ::testing::Values("cpu-avx512", "cpu-avx2", "cpu-generic"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(MicroKernelTables, EveryKernelFitsItsRegisterFile) {
  for (std::string family : all_families()) {
    ASSERT_FALSE(microkernels_for(family).empty()) << family;
    for (const MicroKernel& uk : microkernels_for(family)) {
      const int lanes = vector_floats(family);
      EXPECT_EQ(uk.nr % lanes, 0) << family;
      EXPECT_LE(uk.mr * uk.nr / lanes + uk.nr / lanes + 1, vector_registers(family)) << family;
      EXPECT_EQ(find_microkernel(family, uk.mr, uk.nr), &uk);
    }
  }
  EXPECT_EQ(find_microkernel("cpu-avx2", 5, 5), nullptr);
}

}  // namespace
}  // namespace tileforge::cpu

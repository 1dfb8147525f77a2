// Tests of the numerics: random fills, the float64 reference against a naive loop, row sampling, error metrics
// and the thresholds of docs/NUMERICS.md.
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "core/half.hpp"
#include "support/test_support.hpp"
#include "measure/memory_budget.hpp"
#include "verify/verify.hpp"

namespace tileforge {
namespace {

using testing::make_operands;
using testing::make_problem;
using testing::Operands;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The definition, summed in k order, for every element of every batch entry.
void naive(const Operands& ops, std::vector<double>& value, std::vector<double>& bound) {
  const Problem& p = ops.problem;
  const DType in = p.precision.input, out = p.precision.output;
  value.assign(std::size_t(p.batch * p.m * p.n), 0);
  bound.assign(value.size(), 0);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        double v = 0, w = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          const int64_t ia = b * p.stride_a + (a_row_major(p.layout) ? i * p.lda + k : k * p.lda + i);
          const int64_t ib = b * p.stride_b + (b_row_major(p.layout) ? k * p.ldb + j : j * p.ldb + k);
          const double x = verify::load(ops.a.data(), in, ia), y = verify::load(ops.b.data(), in, ib);
          v += x * y;
          w += std::fabs(x * y);
        }
        v *= p.alpha;
        w *= std::fabs(p.alpha);
        if (p.beta != 0) {
          const double c = verify::load(ops.c.data(), out, b * p.stride_c + i * p.ldc + j);
          v += p.beta * c;
          w += std::fabs(p.beta * c);
        }
        value[std::size_t((b * p.m + i) * p.n + j)] = v;
        bound[std::size_t((b * p.m + i) * p.n + j)] = w;
      }
    }
  }
}

// C as a kernel of the output type would store the exact reference (one rounding).
void store_rounded(const Problem& p, const verify::Reference& ref, std::vector<unsigned char>& c) {
  const int64_t covered = int64_t(ref.rows.size());
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t r = 0; r < covered; ++r) {
      for (int64_t j = 0; j < p.n; ++j) {
        const double v = ref.value[std::size_t((b * covered + r) * p.n + j)];
        const int64_t at = b * p.stride_c + ref.rows[std::size_t(r)] * p.ldc + j;
        switch (p.precision.output) {
          case DType::f32: reinterpret_cast<float*>(c.data())[at] = float(v); break;
          case DType::f16: reinterpret_cast<uint16_t*>(c.data())[at] = float_to_f16(float(v)); break;
          case DType::bf16: reinterpret_cast<uint16_t*>(c.data())[at] = float_to_bf16(float(v)); break;
        }
      }
    }
  }
}

TEST(VerifyFill, DeterministicInRangeAndNotZero) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const int64_t n = 100000;
    std::vector<uint32_t> x(n), y(n), z(n);
    verify::fill_random(x.data(), t, n, 42);
    verify::fill_random(y.data(), t, n, 42);
    verify::fill_random(z.data(), t, n, 43);
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), std::size_t(n) * size_of(t))) << to_string(t);
    EXPECT_NE(0, std::memcmp(x.data(), z.data(), std::size_t(n) * size_of(t))) << to_string(t);
    double sum = 0, sum_abs = 0, lo = 1, hi = -1;
    for (int64_t i = 0; i < n; ++i) {
      const double v = verify::load(x.data(), t, i);
      ASSERT_GE(v, -1.0) << to_string(t);
      ASSERT_LT(v, 1.0) << to_string(t);
      sum += v;
      sum_abs += std::fabs(v);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_NEAR(sum / n, 0.0, 0.01) << to_string(t);        // uniform on [-1, 1): mean 0
    EXPECT_NEAR(sum_abs / n, 0.5, 0.01) << to_string(t);    // mean |x| 1/2
    EXPECT_LT(lo, -0.99);
    EXPECT_GT(hi, 0.99);
  }
}

TEST(VerifyFill, PrefixIsIndependentOfCount) {
  std::vector<float> a(1000), b(10);
  verify::fill_random(a.data(), DType::f32, 1000, 7);
  verify::fill_random(b.data(), DType::f32, 10, 7);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a[std::size_t(i)], b[std::size_t(i)]);
}

TEST(VerifyFill, PoisonIsNaNInEveryType) {
  std::vector<uint32_t> buf(16);
  verify::fill_poison(buf.data(), DType::f32, 16);
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (int64_t i = 0; i < 16; ++i) EXPECT_TRUE(std::isnan(verify::load(buf.data(), t, i))) << to_string(t);
  }
  std::vector<uint16_t> h(8);
  verify::fill_poison(h.data(), DType::bf16, 8);
  for (int64_t i = 0; i < 8; ++i) EXPECT_TRUE(std::isnan(verify::load(h.data(), DType::f16, i)));
}

struct RefCase {
  int64_t m, n, k, batch;
  Layout layout;
  DType in, out;
  int64_t pad;  // added to every leading dimension
  double alpha, beta;
};

TEST(VerifyReference, MatchesNaiveLoop) {
  const std::vector<RefCase> cases = {
      {1, 1, 1, 1, Layout::RR, DType::f32, DType::f32, 0, 1.0, 0.0},
      {37, 53, 61, 1, Layout::RR, DType::f32, DType::f32, 0, 1.0, 0.0},
      {37, 53, 61, 1, Layout::RC, DType::f32, DType::f32, 3, -0.5, 1.25},
      {37, 53, 61, 1, Layout::CR, DType::f32, DType::f32, 1, 2.0, -1.0},
      {37, 53, 61, 1, Layout::CC, DType::f32, DType::f32, 5, 1.0, 0.5},
      {70, 9, 300, 2, Layout::RC, DType::f16, DType::f16, 2, 1.0, 0.5},   // K over one 256 block
      {5, 270, 33, 3, Layout::CC, DType::bf16, DType::bf16, 0, 0.75, 0.0},  // N over one 256 panel
      {66, 7, 5, 1, Layout::CR, DType::bf16, DType::f32, 4, 1.0, 1.0},      // M over one 64 row block
      {8, 8, 0, 2, Layout::RR, DType::f32, DType::f32, 0, 1.0, 0.5},        // K = 0: C = beta * C
  };
  for (const RefCase& rc : cases) {
    Problem q = make_problem(rc.m, rc.n, rc.k, rc.layout, rc.in, rc.out);
    q.batch = rc.batch;
    q.alpha = rc.alpha;
    q.beta = rc.beta;
    q.lda = q.min_lda() + rc.pad;
    q.ldb = q.min_ldb() + rc.pad;
    q.ldc = q.min_ldc() + rc.pad;
    const Operands ops = make_operands(q, 11);
    const verify::Reference ref = verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
    std::vector<double> value, bound;
    naive(ops, value, bound);
    ASSERT_EQ(int64_t(ref.rows.size()), rc.m) << q.describe();
    ASSERT_EQ(ref.value.size(), value.size()) << q.describe();
    for (std::size_t i = 0; i < value.size(); ++i) {
      // Both sum in float64; block sums change the association only, so agreement is to ~1e-16 of the bound.
      ASSERT_NEAR(ref.value[i], value[i], 1e-13 * bound[i]) << q.describe() << " element " << i;
      ASSERT_NEAR(ref.bound[i], bound[i], 1e-13 * bound[i]) << q.describe() << " element " << i;
      ASSERT_GT(bound[i], 0) << q.describe();  // random inputs: no element is trivially zero
    }
  }
}

TEST(VerifyReference, BetaZeroDoesNotReadC) {
  Problem q = make_problem(20, 30, 40);
  Operands ops = make_operands(q, 3);
  verify::fill_poison(ops.c.data(), DType::f32, int64_t(ops.c.size() / 4));
  const verify::Reference ref = verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
  for (double v : ref.value) ASSERT_TRUE(std::isfinite(v));
}

TEST(VerifyReference, AlphaZeroDoesNotReadAB) {
  Problem q = make_problem(6, 5, 4);
  q.alpha = 0;
  q.beta = 2;
  Operands ops = make_operands(q, 3);
  verify::fill_poison(ops.a.data(), DType::f32, int64_t(ops.a.size() / 4));
  const verify::Reference ref = verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(ref.value[std::size_t(i)], 2 * verify::load(ops.c.data(), DType::f32, i));
}

TEST(VerifyReference, NaNAndInfPropagate) {
  Problem q = make_problem(4, 4, 4);
  Operands ops = make_operands(q, 5);
  float* a = reinterpret_cast<float*>(ops.a.data());
  a[0 * 4 + 1] = std::numeric_limits<float>::quiet_NaN();  // row 0 of C becomes NaN
  a[2 * 4 + 3] = std::numeric_limits<float>::infinity();    // row 2 becomes +-Inf (B has no zeros)
  const verify::Reference ref = verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
  for (int j = 0; j < 4; ++j) {
    EXPECT_TRUE(std::isnan(ref.value[std::size_t(j)]));
    EXPECT_TRUE(std::isinf(ref.value[std::size_t(2 * 4 + j)]));
    EXPECT_TRUE(std::isfinite(ref.value[std::size_t(1 * 4 + j)]));
  }
}

TEST(VerifySampling, CoversFirstLastAndEvenlySpacedRows) {
  Problem q = make_problem(1000, 64, 64);
  // Under the limit: every row.
  EXPECT_EQ(verify::covered_rows(q, 1e12, 8).size(), 1000u);
  // Over it: at least min_rows, strictly increasing, first and last included.
  for (int64_t min_rows : {2, 8, 64, 999}) {
    const auto rows = verify::covered_rows(q, 1000.0, min_rows);
    ASSERT_GE(int64_t(rows.size()), min_rows);
    EXPECT_EQ(rows.front(), 0);
    EXPECT_EQ(rows.back(), 999);
    for (std::size_t i = 1; i < rows.size(); ++i) ASSERT_LT(rows[i - 1], rows[i]);
    if (rows.size() > 2) {
      const int64_t step = rows[1] - rows[0];
      for (std::size_t i = 1; i < rows.size(); ++i) ASSERT_LE(std::abs((rows[i] - rows[i - 1]) - step), 1);
    }
  }
  // The sample grows with the budget: about full_limit / (N * K) rows.
  EXPECT_EQ(verify::covered_rows(q, 64.0 * 64 * 100, 8).size(), 100u);
  EXPECT_EQ(verify::covered_rows(make_problem(1, 64, 64), 1.0, 8).size(), 1u);
  EXPECT_TRUE(verify::covered_rows(make_problem(0, 64, 64), 1.0, 8).empty());
}

TEST(VerifySampling, ATallThinCWithAShortKIsSampledByItsElements) {
  // 100000 x 16 x 1: 1.6e6 multiply-adds, but its full reference would hold 16 bytes for each of 1.6e6 elements; each
  // element counts for 16 multiply-adds (kReferenceElementWork), so a limit of 1e6 keeps 1e6 / (16 x 16) rows.
  const Problem thin = make_problem(100000, 16, 1);
  EXPECT_EQ(verify::covered_rows(thin, 1e6, 64).size(), 3906u);
  EXPECT_EQ(verify::covered_rows(thin, 1e6, 64).back(), 99999);
  // K of 16 or more counts as before; under the limit every row is covered.
  EXPECT_EQ(verify::covered_rows(make_problem(100000, 16, 32), 1e6, 64).size(), 1953u);
  EXPECT_EQ(verify::covered_rows(make_problem(1000, 16, 1), 1e6, 64).size(), 1000u);
  // The memory budget counts the same rows: value and bound per element, and the row list.
  measure::CaseLayout layout;
  layout.reference_full_limit = 1e6;
  uint64_t reference = 0;
  for (const auto& t : measure::case_memory(thin, layout).host) reference += t.name == "reference" ? t.bytes : 0;
  EXPECT_EQ(reference, uint64_t(3906) * 16 * 16 + 3906 * 8);
}

TEST(VerifySampling, SampledRowsEqualFullReference) {
  Problem q = make_problem(301, 40, 50, Layout::CR);
  q.batch = 2;
  q.beta = 0.5;
  const Operands ops = make_operands(q, 9);
  const auto full = verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
  const auto part =
      verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data(), 40.0 * 50 * 2 * 10, 10);
  ASSERT_LT(part.rows.size(), 301u);
  ASSERT_GE(part.rows.size(), 10u);
  const int64_t n = 40, covered = int64_t(part.rows.size());
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t r = 0; r < covered; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        const std::size_t at_part = std::size_t((b * covered + r) * n + j);
        const std::size_t at_full = std::size_t((b * 301 + part.rows[std::size_t(r)]) * n + j);
        ASSERT_EQ(part.value[at_part], full.value[at_full]);
        ASSERT_EQ(part.bound[at_part], full.bound[at_full]);
      }
    }
  }
  // compare() on a sample says so, and counts only the covered elements.
  std::vector<unsigned char> c = ops.c;
  store_rounded(ops.problem, part, c);
  const auto report = verify::compare(ops.problem, c.data(), part);
  EXPECT_FALSE(report.full);
  EXPECT_EQ(report.checked, 2 * covered * n);
  EXPECT_TRUE(verify::check(ops.problem, report).ok());
}

TEST(VerifyCompare, RoundedReferencePassesEveryOutputType) {
  for (DType out : {DType::f32, DType::f16, DType::bf16}) {
    const DType in = out == DType::f32 ? DType::f32 : out;
    Problem q = make_problem(33, 47, 129, Layout::RC, in, out);
    q.beta = -0.5;
    const Operands ops = make_operands(q, 21);
    const auto ref = verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
    std::vector<unsigned char> c = ops.c;
    store_rounded(ops.problem, ref, c);
    const auto report = verify::compare(ops.problem, c.data(), ref);
    EXPECT_TRUE(report.full);
    EXPECT_EQ(report.checked, 33 * 47);
    EXPECT_EQ(report.nan_count, 0);
    EXPECT_EQ(report.over_bound, 0);
    // One rounding: relative error about u / sqrt(3), far below each ceiling.
    EXPECT_LT(report.rel_error, verify::unit_roundoff(out)) << to_string(out);
    EXPECT_GT(report.rel_error, 0) << to_string(out);
    EXPECT_LE(report.max_scaled_error, verify::unit_roundoff(out) * 129) << to_string(out);
    EXPECT_TRUE(verify::check(ops.problem, report).ok()) << verify::check(ops.problem, report).to_string();
  }
}

TEST(VerifyCompare, DetectsOneWrongElementAndOneNaN) {
  Problem q = make_problem(40, 30, 64);
  const Operands ops = make_operands(q, 1);
  const auto ref = verify::reference_gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
  std::vector<unsigned char> c = ops.c;
  store_rounded(ops.problem, ref, c);
  float* cf = reinterpret_cast<float*>(c.data());
  ASSERT_TRUE(verify::check(q, verify::compare(q, c.data(), ref)).ok());

  // The last element of the last row, off by 1%: visible in both metrics, and over the f32 ceiling.
  const std::size_t last = 40 * 30 - 1;
  const float saved = cf[last];
  cf[last] = saved * 1.01f;
  auto report = verify::compare(q, c.data(), ref);
  EXPECT_GT(report.rel_error, 1e-5);
  EXPECT_GT(report.max_scaled_error, 1e-4);  // 1% of |c| over a bound of sum |a||b| >= |c|
  EXPECT_EQ(report.over_bound, 1);
  Status s = verify::check(q, report);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("relative error"), std::string::npos) << s.message();

  cf[last] = saved;
  cf[0] = std::numeric_limits<float>::quiet_NaN();
  report = verify::compare(q, c.data(), ref);
  EXPECT_EQ(report.nan_count, 1);
  s = verify::check(q, report);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NaN"), std::string::npos) << s.message();
  // NaN fails even with no threshold at all (f16 accumulation without a native error).
  Problem h = make_problem(40, 30, 64, Layout::RR, DType::f16, DType::f16);
  h.precision.accum = DType::f16;
  EXPECT_FALSE(verify::check(h, report).ok());
}

// One bad element in a million moves the Frobenius norm by 1e-6 only; the worst-case element bound catches it.
TEST(VerifyCompare, OneBadElementTheNormAveragesAway) {
  const int64_t m = 1000, n = 1000;
  Problem q = make_problem(m, n, 1);
  verify::Reference ref;
  for (int64_t i = 0; i < m; ++i) ref.rows.push_back(i);
  ref.value.assign(std::size_t(m * n), 0.5);
  ref.bound.assign(std::size_t(m * n), 0.5);
  std::vector<float> c(std::size_t(m * n), 0.5f);
  c[123456] = 0.5005f;
  const auto r = verify::compare(q, c.data(), ref);
  EXPECT_LT(r.rel_error, 1e-5);
  EXPECT_EQ(r.over_bound, 1);
  const Status s = verify::check(q, r);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("worst-case"), std::string::npos) << s.message();
}

// Results in the f16 subnormal range round with an absolute error that the element bound must allow.
TEST(VerifyCompare, SubnormalOutputRoundingIsNotAnError) {
  Problem q = make_problem(1, 1, 1, Layout::RR, DType::f16, DType::f16);
  verify::Reference ref;
  ref.rows = {0};
  ref.value = {1e-6};
  ref.bound = {1e-6};
  std::vector<uint16_t> c = {float_to_f16(1e-6f)};  // 17 * 2^-24: 1.3% off, the nearest f16
  const auto r = verify::compare(q, c.data(), ref);
  EXPECT_EQ(r.over_bound, 0);
}

TEST(VerifyThreshold, WorstCaseFactor) {
  Problem q = make_problem(4, 4, 1020);
  EXPECT_NEAR(verify::worst_case_factor(q), (1024 * 0x1p-24 + 2 * 0x1p-24) * 1.01, 1e-8);  // first order
  q.precision = {DType::f16, DType::f16, DType::f16};
  q.k = 4096;  // K * u_f16 = 2: no meaningful bound
  EXPECT_TRUE(std::isinf(verify::worst_case_factor(q)));
}

TEST(VerifyCompare, NonFiniteReferencePolicy) {
  Problem q = make_problem(1, 4, 1);
  verify::Reference ref;
  ref.rows = {0};
  ref.value = {kNaN, kInf, -kInf, 1.0};
  ref.bound = {kNaN, kInf, kInf, 1.0};
  // IEEE propagation: NaN where the reference is NaN, the same Inf where it is Inf.
  std::vector<float> good = {std::nanf(""), INFINITY, -INFINITY, 1.0f};
  auto r = verify::compare(q, good.data(), ref);
  EXPECT_EQ(r.nonfinite_mismatch, 0);
  EXPECT_EQ(r.nan_count, 0);
  EXPECT_EQ(r.rel_error, 0);
  EXPECT_TRUE(verify::check(q, r).ok());
  std::vector<float> bad = {0.0f, -INFINITY, std::nanf(""), 1.0f};
  r = verify::compare(q, bad.data(), ref);
  EXPECT_EQ(r.nonfinite_mismatch, 3);
  EXPECT_FALSE(verify::check(q, r).ok());
}

TEST(VerifyCompare, OverflowToInfOfTheOutputTypeIsRight) {
  Problem q = make_problem(1, 2, 1, Layout::RR, DType::f16, DType::f16);
  verify::Reference ref;
  ref.rows = {0};
  ref.value = {70000.0, 1.0};  // beyond f16's largest finite 65504
  ref.bound = {70000.0, 1.0};
  std::vector<uint16_t> c = {0x7c00, 0x3c00};  // +Inf, 1.0
  auto r = verify::compare(q, c.data(), ref);
  EXPECT_EQ(r.rel_error, 0);
  EXPECT_TRUE(verify::check(q, r).ok());
  c[0] = 0xfc00;  // -Inf is wrong
  EXPECT_FALSE(verify::check(q, verify::compare(q, c.data(), ref)).ok());
}

TEST(VerifyCompare, ZeroBoundAndZeroReference) {
  Problem q = make_problem(1, 2, 1);
  verify::Reference ref;
  ref.rows = {0};
  ref.value = {0.0, 0.0};
  ref.bound = {0.0, 0.0};
  std::vector<float> c = {0.0f, -0.0f};
  auto r = verify::compare(q, c.data(), ref);
  EXPECT_EQ(r.rel_error, 0);
  EXPECT_EQ(r.max_scaled_error, 0);
  c[1] = 1e-30f;
  r = verify::compare(q, c.data(), ref);
  EXPECT_TRUE(std::isinf(r.max_scaled_error));
  EXPECT_GT(r.rel_error, 0);  // the norm of C itself when the reference is all zero
}

TEST(VerifyThreshold, CeilingsPerPolicy) {
  auto t = [](DType in, DType out, int64_t k, std::optional<double> native = std::nullopt,
              DType acc = DType::f32) {
    Problem p = make_problem(16, 16, k, Layout::RR, in, out);
    p.precision.accum = acc;
    return verify::threshold(p, native);
  };
  EXPECT_DOUBLE_EQ(*t(DType::f32, DType::f32, 1024), 1e-5);
  EXPECT_DOUBLE_EQ(*t(DType::f32, DType::f32, 16384), 1e-5);
  EXPECT_DOUBLE_EQ(*t(DType::f32, DType::f32, 65536), 2e-5);  // times sqrt(K / 16384)
  EXPECT_DOUBLE_EQ(*t(DType::bf16, DType::f32, 1024), 1e-5);   // half inputs are exact in f32
  EXPECT_DOUBLE_EQ(*t(DType::f16, DType::f16, 1024), 2e-3);
  EXPECT_DOUBLE_EQ(*t(DType::bf16, DType::bf16, 1024), 1.6e-2);
  // Twice the native error, never above the ceiling, never below one rounding of the output.
  EXPECT_DOUBLE_EQ(*t(DType::f32, DType::f32, 1024, 1e-7), 2e-7);
  EXPECT_DOUBLE_EQ(*t(DType::f32, DType::f32, 1024, 1e-4), 1e-5);
  EXPECT_DOUBLE_EQ(*t(DType::f32, DType::f32, 1024, 0.0), 0x1p-24);
  EXPECT_DOUBLE_EQ(*t(DType::bf16, DType::bf16, 1024, 0.0), 0x1p-8);
  EXPECT_DOUBLE_EQ(*t(DType::f16, DType::f16, 1024, 5e-4), 1e-3);
  // FP16 accumulation: only twice the native error, no ceiling.
  EXPECT_FALSE(t(DType::f16, DType::f16, 1024, std::nullopt, DType::f16).has_value());
  EXPECT_DOUBLE_EQ(*t(DType::f16, DType::f16, 1024, 4e-3, DType::f16), 8e-3);
}

TEST(VerifyThreshold, CheckUsesTheNativeError) {
  Problem q = make_problem(16, 16, 1024);
  verify::ErrorReport r;
  r.rel_error = 3e-7;
  r.checked = 256;
  EXPECT_TRUE(verify::check(q, r).ok());
  EXPECT_TRUE(verify::check(q, r, 2e-7).ok());
  const Status s = verify::check(q, r, 1e-7);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("native"), std::string::npos) << s.message();
  r.rel_error = kNaN;
  EXPECT_FALSE(verify::check(q, r).ok());
}

}  // namespace
}  // namespace tileforge

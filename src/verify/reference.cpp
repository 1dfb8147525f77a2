// The float64 reference GEMM: packed, cache-blocked and threaded over (batch, row block, column panel).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "core/half.hpp"
#include "verify/verify.hpp"

namespace tileforge::verify {
namespace {

// Blocking: a 4x4 micro-tile keeps 16 values and 16 bounds in registers (8 ymm with AVX2); KC = 256 keeps the
// micro-kernel's A and B slivers (8 KiB each) in L1, and the packed B panel (KC x NC = 512 KiB) in L2.
constexpr int64_t kMR = 4, kNR = 4;
constexpr int64_t kKC = 256, kMC = 64, kNC = 256;

template <DType T>
inline double elem(const void* p, int64_t i) {
  if constexpr (T == DType::f32) return static_cast<const float*>(p)[i];
  if constexpr (T == DType::f16) return f16_to_float(static_cast<const uint16_t*>(p)[i]);
  if constexpr (T == DType::bf16) return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
}

// Four doubles as one value: GCC lowers it to one ymm register with AVX2 and to two xmm registers on the baseline.
using v4d = double __attribute__((vector_size(32)));
using v4i = int64_t __attribute__((vector_size(32)));

// value += a * b and bound += |a| * |b| over one K block for a 4x4 tile: four rows of four columns, each row a
// vector, so 8 accumulators stay in registers. The sum over k runs in order for each element (no reassociation),
// so the result does not depend on the vector width it was compiled for.
[[gnu::always_inline]] inline void micro_4x4(const double* a, const double* b, int64_t kc, double* v, double* w,
                                             int64_t ld) {
  v4d v0 = {}, v1 = {}, v2 = {}, v3 = {}, w0 = {}, w1 = {}, w2 = {}, w3 = {};
  for (int64_t k = 0; k < kc; ++k) {
    v4d bk;
    __builtin_memcpy(&bk, b + k * kNR, sizeof(bk));
    const v4d bak = (v4d)((v4i)bk & INT64_MAX);  // |b|: clear the sign bits
    const double* ak = a + k * kMR;
    v0 += ak[0] * bk;
    w0 += __builtin_fabs(ak[0]) * bak;
    v1 += ak[1] * bk;
    w1 += __builtin_fabs(ak[1]) * bak;
    v2 += ak[2] * bk;
    w2 += __builtin_fabs(ak[2]) * bak;
    v3 += ak[3] * bk;
    w3 += __builtin_fabs(ak[3]) * bak;
  }
  const v4d vs[kMR] = {v0, v1, v2, v3}, ws[kMR] = {w0, w1, w2, w3};
  for (int r = 0; r < kMR; ++r) {
    for (int c = 0; c < kNR; ++c) {
      v[r * ld + c] += vs[r][c];
      w[r * ld + c] += ws[r][c];
    }
  }
}

// The same loop nest compiled twice: for AVX2 hosts (4 doubles a vector) and for the x86-64 baseline.
struct BlockArgs {
  const double* ap;  // packed A: row groups of 4, each kc x 4
  const double* bp;  // packed B: column groups of 4, each kc x 4
  int64_t kc, row_groups, col_groups;
  double* val;
  double* bnd;  // kMC x kNC accumulators
};

[[gnu::always_inline]] inline void block_body(const BlockArgs& x) {
  for (int64_t jg = 0; jg < x.col_groups; ++jg) {
    for (int64_t rg = 0; rg < x.row_groups; ++rg) {
      micro_4x4(x.ap + rg * x.kc * kMR, x.bp + jg * x.kc * kNR, x.kc, x.val + rg * kMR * kNC + jg * kNR,
                x.bnd + rg * kMR * kNC + jg * kNR, kNC);
    }
  }
}

[[gnu::target("avx2")]] void block_avx2(const BlockArgs& x) { block_body(x); }
void block_generic(const BlockArgs& x) { block_body(x); }

using BlockFn = void (*)(const BlockArgs&);
BlockFn pick_block() { return __builtin_cpu_supports("avx2") ? block_avx2 : block_generic; }

struct Job {
  Problem p;  // normalized
  const void* a;
  const void* b;
  const void* c;
  const std::vector<int64_t>* rows;
  Reference* out;
};

template <DType T>
void pack_a(const Job& job, int64_t batch, int64_t r0, int64_t r1, int64_t k0, int64_t kc, double* ap) {
  const Problem& p = job.p;
  const bool row_major = a_row_major(p.layout);
  const int64_t base = batch * p.stride_a;
  for (int64_t r = r0; r < r0 + ((r1 - r0 + kMR - 1) / kMR) * kMR; ++r) {
    const int64_t g = (r - r0) / kMR, lane = (r - r0) % kMR;
    double* dst = ap + g * kc * kMR + lane;
    if (r >= r1) {
      for (int64_t k = 0; k < kc; ++k) dst[k * kMR] = 0;  // padding rows contribute zero
      continue;
    }
    const int64_t i = (*job.rows)[r];
    for (int64_t k = 0; k < kc; ++k) {
      const int64_t idx = row_major ? i * p.lda + (k0 + k) : (k0 + k) * p.lda + i;
      dst[k * kMR] = elem<T>(job.a, base + idx);
    }
  }
}

template <DType T>
void pack_b(const Job& job, int64_t batch, int64_t j0, int64_t j1, int64_t k0, int64_t kc, double* bp) {
  const Problem& p = job.p;
  const bool row_major = b_row_major(p.layout);
  const int64_t base = batch * p.stride_b;
  const int64_t groups = (j1 - j0 + kNR - 1) / kNR;
  for (int64_t g = 0; g < groups; ++g) {
    double* dst = bp + g * kc * kNR;
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t c = 0; c < kNR; ++c) {
        const int64_t j = j0 + g * kNR + c;
        if (j >= j1) {
          dst[k * kNR + c] = 0;
          continue;
        }
        const int64_t idx = row_major ? (k0 + k) * p.ldb + j : j * p.ldb + (k0 + k);
        dst[k * kNR + c] = elem<T>(job.b, base + idx);
      }
    }
  }
}

// One work item: rows [r0, r1) of the covered list, columns [j0, j1), one batch entry.
template <DType T>
void run_item(const Job& job, BlockFn block, int64_t batch, int64_t r0, int64_t r1, int64_t j0, int64_t j1,
              std::vector<double>& ap, std::vector<double>& bp, std::vector<double>& val, std::vector<double>& bnd) {
  const Problem& p = job.p;
  std::fill(val.begin(), val.end(), 0.0);
  std::fill(bnd.begin(), bnd.end(), 0.0);
  // BLAS convention: with alpha == 0 (or K == 0) A and B are not read, so Inf or NaN there does not propagate.
  const bool products = p.alpha != 0 && p.k > 0;
  if (products) {
    for (int64_t k0 = 0; k0 < p.k; k0 += kKC) {
      const int64_t kc = std::min(kKC, p.k - k0);
      pack_a<T>(job, batch, r0, r1, k0, kc, ap.data());
      pack_b<T>(job, batch, j0, j1, k0, kc, bp.data());
      block({ap.data(), bp.data(), kc, (r1 - r0 + kMR - 1) / kMR, (j1 - j0 + kNR - 1) / kNR, val.data(),
             bnd.data()});
    }
  }
  const DType out_t = p.precision.output;
  const int64_t covered = int64_t(job.rows->size());
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t i = (*job.rows)[r];
    const int64_t out_row = (batch * covered + r) * p.n;
    for (int64_t j = j0; j < j1; ++j) {
      const double sum = val[(r - r0) * kNC + (j - j0)], abs_sum = bnd[(r - r0) * kNC + (j - j0)];
      double v = products ? p.alpha * sum : 0.0;
      double w = products ? std::fabs(p.alpha) * abs_sum : 0.0;
      if (p.beta != 0) {  // beta == 0: C is not read (it may hold NaN)
        const double c = load(job.c, out_t, batch * p.stride_c + c_index(p, i, j));
        v += p.beta * c;
        w += std::fabs(p.beta) * std::fabs(c);
      }
      job.out->value[out_row + j] = v;
      job.out->bound[out_row + j] = w;
    }
  }
}

}  // namespace

int64_t covered_row_count(const Problem& problem, double full_limit, int64_t min_rows) {
  const int64_t m = problem.m;
  if (m <= 0) return 0;
  const double per_row =
      double(problem.n) * std::max(double(problem.k), kReferenceElementWork) * double(problem.batch);
  if (per_row * double(m) <= full_limit) return m;
  const double fit = per_row > 0 ? std::floor(full_limit / per_row) : double(m);
  const int64_t count = std::max<int64_t>(min_rows, int64_t(std::min(fit, double(m))));
  return std::clamp<int64_t>(count, std::min<int64_t>(m, 2), m);
}

std::vector<int64_t> covered_rows(const Problem& problem, double full_limit, int64_t min_rows) {
  const int64_t m = problem.m;
  std::vector<int64_t> rows;
  if (m <= 0) return rows;
  const int64_t count = covered_row_count(problem, full_limit, min_rows);
  rows.reserve(std::size_t(count));
  if (count == m) {
    for (int64_t i = 0; i < m; ++i) rows.push_back(i);
    return rows;
  }
  // Evenly spaced from 0 to m-1 inclusive; spacing (m-1)/(count-1) >= 1, so the floors are strictly increasing.
  for (int64_t i = 0; i < count; ++i) {
    rows.push_back(int64_t((static_cast<__int128>(i) * (m - 1)) / (count - 1)));
  }
  return rows;
}

Reference reference_gemm(const Problem& problem, const void* a, const void* b, const void* c_in,
                         double full_limit, int64_t min_rows) {
  Reference ref;
  const Problem p = problem.normalized();
  ref.rows = covered_rows(p, full_limit, min_rows);
  const int64_t covered = int64_t(ref.rows.size());
  const std::size_t total = std::size_t(p.batch * covered * p.n);
  ref.value.assign(total, 0.0);
  ref.bound.assign(total, 0.0);
  if (total == 0) return ref;

  Job job{p, a, b, c_in, &ref.rows, &ref};
  const int64_t row_blocks = (covered + kMC - 1) / kMC, col_blocks = (p.n + kNC - 1) / kNC;
  const int64_t items = p.batch * row_blocks * col_blocks;
  const BlockFn block = pick_block();

  std::atomic<int64_t> next{0};
  auto worker = [&] {
    std::vector<double> ap(std::size_t(kMC * kKC)), bp(std::size_t(kKC * kNC));
    std::vector<double> val(std::size_t(kMC * kNC)), bnd(std::size_t(kMC * kNC));
    for (int64_t item = next++; item < items; item = next++) {
      const int64_t batch = item / (row_blocks * col_blocks);
      const int64_t rest = item % (row_blocks * col_blocks);
      const int64_t rb = rest / col_blocks, cb = rest % col_blocks;
      const int64_t r0 = rb * kMC, r1 = std::min(covered, r0 + kMC);
      const int64_t j0 = cb * kNC, j1 = std::min(p.n, j0 + kNC);
      switch (p.precision.input) {
        case DType::f32: run_item<DType::f32>(job, block, batch, r0, r1, j0, j1, ap, bp, val, bnd); break;
        case DType::f16: run_item<DType::f16>(job, block, batch, r0, r1, j0, j1, ap, bp, val, bnd); break;
        case DType::bf16: run_item<DType::bf16>(job, block, batch, r0, r1, j0, j1, ap, bp, val, bnd); break;
      }
    }
  };

  // Small problems run on the calling thread: starting threads would cost more than the work.
  const double work = double(p.batch) * double(covered) * double(p.n) * double(std::max<int64_t>(p.k, 1));
  const int64_t hw = std::max(1u, std::thread::hardware_concurrency());
  const int64_t threads = work < 4.0e6 ? 1 : std::min(hw, items);
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return ref;
}

}  // namespace tileforge::verify

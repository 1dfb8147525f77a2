// The one table of GEMM cases every backend, ours and vendor alike, must match the float64 reference on.
#pragma once

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/test_support.hpp"

namespace tileforge::conformance {

struct Case {
  std::string name;  // readable and unique: the GoogleTest name after the backend's
  Problem problem;
  int threads = 0;  // CPU threads (0: every core); GPUs ignore it
};

// "0.75" -> "0p75", "-0.5" -> "m0p5": GoogleTest names take letters, digits and '_' only.
inline std::string name_of(double v) {
  std::string s = fmt::format("{}", v);
  for (char& ch : s) {
    if (ch == '.') ch = 'p';
    if (ch == '-') ch = 'm';
  }
  return s;
}

// "37x53x61_RC_bf16_f32_a0p75_bm0p5_ld_batch3gaps_t1": shape, layout, input and output type (f16acc when the
// accumulator is f16), alpha and beta, then what differs from tight (padded leading dimensions, batch with or
// without gaps between entries, a thread count).
inline std::string name_of(const Problem& p, int threads) {
  std::string s = fmt::format("{}x{}x{}_{}_{}_{}", p.m, p.n, p.k, to_string(p.layout), to_string(p.precision.input),
                              to_string(p.precision.output));
  if (p.precision.accum != DType::f32) s += fmt::format("_{}acc", to_string(p.precision.accum));
  s += "_a" + name_of(p.alpha) + "_b" + name_of(p.beta);
  if (p.lda || p.ldb || p.ldc) s += "_ld";
  if (p.batch > 1) s += fmt::format("_batch{}{}", p.batch, p.stride_a || p.stride_b || p.stride_c ? "gaps" : "");
  if (threads) s += fmt::format("_t{}", threads);
  return s;
}

// Every precision the policy allows (docs/NUMERICS.md): f32 in and out; f16 and bf16 in with their own type or f32
// out; f16 in and out with f16 accumulation. A backend that refuses one skips it with its reason.
inline std::vector<Precision> all_precisions() {
  return {{DType::f32, DType::f32, DType::f32},   {DType::f16, DType::f16, DType::f32},
          {DType::f16, DType::f32, DType::f32},   {DType::bf16, DType::bf16, DType::f32},
          {DType::bf16, DType::f32, DType::f32},  {DType::f16, DType::f16, DType::f16}};
}

inline constexpr Layout kLayouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};

// The table. Sizes stay small (every element is checked against a host reference, on a 2-core CI machine, for
// every backend); what a backend does only at large sizes (many waves, steady-state pipelines) is its own test's.
inline std::vector<Case> all_cases() {
  std::vector<Case> cases;
  auto add = [&](Problem p, int threads = 0) { cases.push_back({name_of(p, threads), p, threads}); };
  auto shape = [](int64_t m, int64_t n, int64_t k, Layout l, const Precision& pr) {
    Problem p = testing::make_problem(m, n, k, l, pr.input, pr.output);
    p.precision.accum = pr.accum;
    return p;
  };
  struct Mnk {
    int64_t m, n, k;
  };

  for (const Precision& pr : all_precisions()) {
    for (Layout l : kLayouts) {
      // Primes and tails: unit sizes, sizes one off a power of two, a single row or column panel, tall and wide.
      for (Mnk s : {Mnk{1, 1, 1}, Mnk{7, 13, 5}, Mnk{37, 53, 61}, Mnk{127, 129, 131}, Mnk{257, 3, 65},
                    Mnk{3, 200, 17}, Mnk{150, 2, 90}}) {
        add(shape(s.m, s.n, s.k, l, pr));  // alpha 1, beta 0: C is poisoned, so every element must be written
      }
      // alpha and beta: both scaled, beta = 1 (accumulate into C), and alpha = 0 (C = beta C; A and B are
      // poisoned then, since the BLAS convention says they are not read).
      for (auto [alpha, beta] : {std::pair{0.75, -0.5}, std::pair{-1.5, 1.0}, std::pair{0.0, 0.0},
                                 std::pair{0.0, -2.0}}) {
        Problem p = shape(29, 41, 83, l, pr);
        p.alpha = alpha;
        p.beta = beta;
        add(p);
      }
      // Leading dimensions larger than tight; the padding of C must be left as it was.
      for (auto [alpha, beta] : {std::pair{-1.5, 0.0}, std::pair{0.75, -0.5}}) {
        Problem p = shape(45, 31, 23, l, pr);
        p.lda = p.min_lda() + 7;
        p.ldb = p.min_ldb() + 3;
        p.ldc = p.min_ldc() + 5;
        p.alpha = alpha;
        p.beta = beta;
        add(p);
      }
      // Strided batches: tight, then padded leading dimensions with gaps between the entries (odd sizes, so that
      // no entry after the first keeps the first one's alignment).
      Problem b = shape(19, 27, 33, l, pr);
      b.batch = 3;
      add(b);
      b.lda = b.min_lda() + 2;
      b.ldb = b.min_ldb() + 1;
      b.ldc = b.min_ldc() + 4;
      b.stride_a = b.span_a() + 11;
      b.stride_b = b.span_b() + 13;
      b.stride_c = b.span_c() + 17;
      b.alpha = 0.5;
      b.beta = -1.0;
      add(b);
    }
    // No products: K = 0 gives C = beta C (zeros over a poisoned C when beta = 0); M or N = 0 touches nothing.
    for (double beta : {0.0, 0.5, 1.0}) {
      Problem p = shape(7, 9, 0, Layout::RR, pr);
      p.beta = beta;
      add(p);
    }
    for (Mnk s : {Mnk{0, 5, 4}, Mnk{5, 0, 4}, Mnk{0, 0, 4}}) {
      Problem p = shape(s.m, s.n, s.k, Layout::RC, pr);
      p.beta = 0.5;
      add(p);
    }
  }
  // More edge shapes (one element wide, powers of two and one past them, long K over few outputs, short K over
  // many) in f32 and in f16, so that our cuda backend, which takes no f32, runs them too; then a larger problem on one
  // thread and on every core.
  const Precision f32 = all_precisions()[0];
  for (const Precision& pr : {f32, all_precisions()[1]}) {
    for (Layout l : kLayouts) {
      for (Mnk s : {Mnk{97, 1, 13}, Mnk{1, 89, 101}, Mnk{64, 64, 64}, Mnk{128, 128, 128}, Mnk{129, 65, 257},
                    Mnk{131, 67, 257}, Mnk{255, 129, 300}, Mnk{6, 16, 300}, Mnk{250, 190, 7}, Mnk{17, 300, 3}}) {
        add(shape(s.m, s.n, s.k, l, pr));
      }
    }
  }
  add(shape(300, 280, 513, Layout::CR, f32), 1);
  add(shape(300, 280, 513, Layout::RC, f32));

  std::set<std::string> names;
  for (const Case& c : cases) {
    if (!names.insert(c.name).second) throw std::logic_error("two conformance cases named " + c.name);
  }
  return cases;
}

}  // namespace tileforge::conformance

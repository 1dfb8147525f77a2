// Example: one FP32 GEMM through the C++ API, checked against a plain loop.
#include <cmath>
#include <cstdio>
#include <vector>

#include <tileforge/tileforge.hpp>

int main() {
  // C (M x N) = A (M x K, row-major) * B (K x N, column-major)
  tileforge::Problem p;
  p.m = 64;
  p.n = 48;
  p.k = 32;
  p.layout = tileforge::Layout::RC;
  p.precision = {tileforge::DType::f32, tileforge::DType::f32, tileforge::DType::f32};

  std::vector<float> a(p.m * p.k), b(p.k * p.n), c(p.m * p.n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) - 3.0f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(i % 5) * 0.5f - 1.0f;

  tileforge::Status s = tileforge::gemm(p, a.data(), b.data(), c.data());
  if (!s) {
    std::fprintf(stderr, "tileforge::gemm failed: %s\n", s.to_string().c_str());
    return 1;
  }
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double want = 0;
      for (int64_t k = 0; k < p.k; ++k) want += double(a[i * p.k + k]) * double(b[j * p.k + k]);  // B column-major
      if (std::fabs(c[i * p.n + j] - want) > 1e-4 * (1 + std::fabs(want))) {
        std::fprintf(stderr, "C[%lld][%lld] = %g, expected %g\n", (long long)i, (long long)j, c[i * p.n + j], want);
        return 1;
      }
    }
  }
  std::printf("tileforge %s: %lldx%lldx%lld GEMM ok\n", std::string(tileforge::version()).c_str(), (long long)p.m,
              (long long)p.n, (long long)p.k);
  return 0;
}

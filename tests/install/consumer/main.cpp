// Installed-package consumer: a small GEMM with a beta term through the C++ API, checked element by element.
#include <cmath>
#include <cstdio>
#include <vector>

#include <tileforge/tileforge.hpp>

int main() {
  tileforge::Problem p;
  p.m = 9;
  p.n = 7;
  p.k = 5;
  p.beta = 1.0;
  std::vector<float> a(p.m * p.k), b(p.k * p.n), c(p.m * p.n, 2.0f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(i % 3);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(i % 4) - 1.5f;
  if (auto s = tileforge::gemm(p, a.data(), b.data(), c.data()); !s) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 1;
  }
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double want = 2.0;
      for (int64_t k = 0; k < p.k; ++k) want += double(a[i * p.k + k]) * double(b[k * p.n + j]);
      if (std::fabs(c[i * p.n + j] - want) > 1e-5) return 1;
    }
  std::printf("consumer ok (tileforge %s)\n", std::string(tileforge::version()).c_str());
  return 0;
}

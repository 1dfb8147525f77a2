// The first library call of a process, with an empty HOME: it measures nothing, says the CPU was planned on its
// nominal peak, computes the right result, and leaves HOME empty (its own process: the host record is per process).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <tileforge/tileforge.hpp>

namespace fs = std::filesystem;

int fail(const std::string& why) {
  std::fprintf(stderr, "first call: %s\n", why.c_str());
  return 1;
}

int main() {
  // A HOME of its own, and none of the variables that point the caches elsewhere.
  char pattern[] = "/tmp/tileforge-first-call-XXXXXX";
  const char* home = mkdtemp(pattern);
  if (!home) return fail("mkdtemp failed");
  setenv("HOME", home, 1);
  for (const char* v : {"XDG_CACHE_HOME", "TILEFORGE_HOST_CACHE", "TILEFORGE_DB", "TILEFORGE_CACHE_DIR"}) unsetenv(v);

  tileforge::Problem p;
  p.m = 37;
  p.n = 29;
  p.k = 41;
  std::vector<float> a(std::size_t(p.m * p.k)), b(std::size_t(p.k * p.n)), c(std::size_t(p.m * p.n), -1.0f);
  unsigned state = 12345;
  auto next = [&] {
    state = state * 1103515245u + 12345u;
    return float((state >> 9) % 2001) / 1000.0f - 1.0f;
  };
  for (float& x : a) x = next();
  for (float& x : b) x = next();

  tileforge::Options o;
  o.device = "cpu";
  const auto start = std::chrono::steady_clock::now();
  tileforge::GemmPlan plan = tileforge::prepare(p, o);
  if (!plan) return fail("prepare: " + plan.status().to_string());
  if (tileforge::Status s = plan.run(a.data(), b.data(), c.data()); !s) return fail("run: " + s.to_string());
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (tileforge::Status s = tileforge::gemm(p, a.data(), b.data(), c.data(), o); !s) return fail("gemm: " + s.to_string());

  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double want = 0;
      for (int64_t k = 0; k < p.k; ++k) want += double(a[std::size_t(i * p.k + k)]) * double(b[std::size_t(k * p.n + j)]);
      const double got = c[std::size_t(i * p.n + j)];
      if (std::fabs(got - want) > 1e-4 * (1 + std::fabs(want))) {
        return fail("C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " + std::to_string(got) + ", expected " +
                    std::to_string(want));
      }
    }
  }
  bool nominal = false;
  for (const std::string& note : plan.notes()) nominal = nominal || note.find("nominal") != std::string::npos;
  if (!nominal) return fail("the plan does not say it used the nominal peak (no host measurement is stored)");

  std::error_code ec;
  std::vector<std::string> written;
  for (const auto& entry : fs::recursive_directory_iterator(home, ec)) written.push_back(entry.path().string());
  fs::remove_all(home, ec);
  if (!written.empty()) return fail("the first call wrote " + written.front() + " (and " +
                                    std::to_string(written.size() - 1) + " more) under HOME");
  std::printf("first call ok: %s; nothing written under HOME; prepare + first run %.1f ms\n", plan.notes().front().c_str(),
              first_ms);
  return 0;
}

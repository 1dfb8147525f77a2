// Helpers the CPU vendor backends share: environment defaults, thread counts, matching a prepared problem, and C
// scaled by beta where there are no products.
#include "backends/native/native_common.hpp"

#include <dlfcn.h>
#include <sched.h>

#include <climits>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "core/half.hpp"

namespace tileforge::native_detail {

std::string default_env(const char* name, const char* value) {
  if (const char* user = std::getenv(name)) return fmt::format("{}={} (set by the user)", name, user);
  setenv(name, value, 0);
  return fmt::format("{}={} (set by tileforge)", name, value);
}

bool already_loaded(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);  // drops only the reference RTLD_NOLOAD just took
  return h != nullptr;
}

OpenedLibrary open_first(std::initializer_list<const char*> names) {
  OpenedLibrary lib;
  for (const char* name : names) {
    lib.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib.handle) {
      lib.name = name;
      lib.error.clear();
      return lib;
    }
    const char* e = dlerror();
    lib.error += fmt::format("{}{}", lib.error.empty() ? "" : "; ", e ? e : name);
  }
  return lib;
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? int(hw) : 1;
}

int resolve_threads(int requested) { return requested > 0 ? requested : usable_cpus(); }

bool same_problem(const Problem& x, const Problem& y) {
  const Problem a = x.normalized(), b = y.normalized();
  return a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch && a.precision.input == b.precision.input &&
         a.precision.output == b.precision.output && a.precision.accum == b.precision.accum &&
         a.layout == b.layout && a.lda == b.lda && a.ldb == b.ldb && a.ldc == b.ldc && a.stride_a == b.stride_a &&
         a.stride_b == b.stride_b && a.stride_c == b.stride_c && a.alpha == b.alpha && a.beta == b.beta;
}

bool fits_int32(const Problem& x) {
  const Problem p = x.normalized();
  for (int64_t v : {p.m, p.n, p.k, p.lda, p.ldb, p.ldc})
    if (v > INT_MAX) return false;
  return true;
}

bool has_products(const Problem& p) { return p.m > 0 && p.n > 0 && p.k > 0 && p.alpha != 0; }

void scale_c_by_beta(const Problem& p, void* c) {
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.m; ++i) {
      const int64_t row = b * p.stride_c + i * p.ldc;
      if (p.precision.output == DType::f32) {
        float* r = static_cast<float*>(c) + row;
        for (int64_t j = 0; j < p.n; ++j) r[j] = p.beta == 0 ? 0.0f : float(p.beta * r[j]);
      } else {
        uint16_t* r = static_cast<uint16_t*>(c) + row;
        for (int64_t j = 0; j < p.n; ++j) {
          if (p.beta == 0) {
            r[j] = 0;
          } else if (p.precision.output == DType::bf16) {
            r[j] = float_to_bf16(float(p.beta * bf16_to_float(r[j])));
          } else {
            r[j] = float_to_f16(float(p.beta * f16_to_float(r[j])));
          }
        }
      }
    }
  }
}

}  // namespace tileforge::native_detail

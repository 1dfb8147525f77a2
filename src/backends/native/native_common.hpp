// Helpers the CPU vendor backends share: environment defaults, thread counts, matching a prepared problem, and C
// scaled by beta where there are no products.
#pragma once

#include <initializer_list>
#include <string>

#include "tileforge/tileforge.hpp"

namespace tileforge::native_detail {

// Sets `name` to `value` unless the user already set it; returns a note for the bench environment
// ("OPENBLAS_THREAD_TIMEOUT=4 (set by tileforge)" or "... (set by the user)").
std::string default_env(const char* name, const char* value);

// Whether a shared library is already in the process (so that environment set now comes too late for it).
bool already_loaded(const char* soname);

// The first of `names` that dlopen (RTLD_NOW | RTLD_LOCAL) opens; otherwise handle is null and error joins the
// loader's messages for every name tried.
struct OpenedLibrary {
  void* handle = nullptr;
  std::string name;
  std::string error;
};
OpenedLibrary open_first(std::initializer_list<const char*> names);

// CPUs this process may run on (the affinity mask), at least 1.
int usable_cpus();
// The thread count a Device asks for: its own, or every usable CPU when it says 0.
int resolve_threads(int requested);

// Whether two problems describe the same call (after normalization): a kernel prepared for one runs only the other.
bool same_problem(const Problem& a, const Problem& b);

// Whether every size and leading dimension fits a 32-bit int (the LP64 BLAS interface).
bool fits_int32(const Problem& p);

// Whether the problem has products to compute: M, N and K above 0 and alpha not 0. Without them C = beta * C.
bool has_products(const Problem& p);
// C = beta * C for a problem without products (K == 0 or alpha == 0), computed without reading A and B, as the BLAS
// convention says (beta == 0 writes zeros, even over NaN): vendor libraries differ there (OpenBLAS 0.3.21's AVX-512
// path multiplies A and B by a zero alpha, so NaN in them reaches C; oneDNN skips empty tensors).
void scale_c_by_beta(const Problem& p, void* c);

}  // namespace tileforge::native_detail

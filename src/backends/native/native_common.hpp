// Helpers the CPU vendor backends share: environment defaults, thread counts, and matching a prepared problem.
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

}  // namespace tileforge::native_detail

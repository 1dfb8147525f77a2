// How `tileforge tune` tells that an MPI launcher started it, in every build (the MPI run itself is mpi/).
#include <cstdio>
#include <cstdlib>

#include "core/parse.hpp"
#include "tune_distributed.hpp"

namespace tileforge::cli {

std::optional<int> mpi_world_size_from_env() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"}) {
    const char* value = std::getenv(name);
    if (!value || !*value) continue;
    auto n = parse_int(value, name);
    if (n && *n >= 1 && *n <= 1000000) return int(*n);
  }
  return std::nullopt;
}

#if defined(TILEFORGE_HAVE_MPI)
bool built_with_mpi() { return true; }
#else
bool built_with_mpi() { return false; }

int run_distributed_tune(const DistributedTuneArgs&) {
  std::fprintf(stderr, "tileforge tune: error: this tileforge was built without MPI (install libopenmpi-dev and "
                       "rebuild: CMake finds it, TILEFORGE_MPI)\n");
  return kExitUsage;
}
#endif

}  // namespace tileforge::cli

// The cpu families' memory beside A, B and C (KernelFamily::workspace_bytes), for the memory budget of a case.
#include "backends/cpu/cpu_family.hpp"
#include "backends/cpu/gemm_driver.hpp"

namespace tileforge::cpu {

uint64_t CpuFamily::workspace_bytes(const Problem& problem, const hw::HwProfile& profile, const Config& config,
                                    int threads) const {
  auto value = [&](const char* name) { return config.get(name).value_or(0); };
  const int t = threads > 0 ? threads : std::max(1, profile.cores);
  return run_workspace_bytes(problem.normalized(), value("MR"), value("NR"), value("MC"), value("KC"), value("NC"),
                             value("PACK_B") != 0, t);
}

}  // namespace tileforge::cpu

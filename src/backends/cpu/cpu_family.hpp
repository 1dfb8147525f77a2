// The cpu-avx512, cpu-avx2 and cpu-generic kernel families: the cpu backend's BLIS loop nest as the planner, the
// tuner and dispatch see it through the KernelFamily interface (registered in cpu_family.cpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "plan/kernel_family.hpp"

namespace tileforge::cpu {

// One ISA family of the cpu backend. All three share the loop nest, the parameters (MR, NR, KC, MC, NC, PACK_B), the
// cost model and the decision log; they differ in the micro-kernel table, the vector width and the ISA the chip
// record must list.
class CpuFamily final : public plan::KernelFamily {
 public:
  // `isa_family`: "cpu-avx512", "cpu-avx2" or "cpu-generic"; any other name is refused (std::invalid_argument).
  explicit CpuFamily(std::string_view isa_family);

  std::string_view name() const override { return name_; }
  int version() const override;
  std::string_view backend() const override { return "cpu"; }
  int preference() const override { return preference_; }
  bool plans_threads() const override { return true; }
  std::string_view fill_word() const override { return "packing"; }

  plan::FamilyFit fit(const hw::HwProfile& profile) const override;
  // Its micro-kernels run only on a CPU with its ISA (CPUID and the OS's register state).
  Support runs_on(const Device& device) const override;
  plan::SupportGap supports(const Problem& problem) const override;
  plan::FamilySpace candidates(const Problem& problem, const hw::HwProfile& profile, int threads) const override;
  // The same grid without the MR x NR pairs that are not micro-kernels (half of it, all rejected).
  plan::FamilySpace choice_candidates(const Problem& problem, const hw::HwProfile& profile,
                                      int threads) const override;
  // A plan's scratch keeps what cost() needs of the problem and the profile whatever the config.
  std::unique_ptr<plan::CostScratch> make_scratch() const override;
  // The driver's own buffers (gemm_driver.hpp's run_workspace_bytes) for the config's blocks.
  uint64_t workspace_bytes(const Problem& problem, const hw::HwProfile& profile, const Config& config,
                           int threads) const override;
  plan::Cost cost(const Problem& problem, const hw::HwProfile& profile, const Config& config, int threads,
                  plan::CostScratch* scratch) const override;
  void explain(plan::Plan& plan) const override;

 private:
  plan::FamilySpace grid(const Problem& problem, const hw::HwProfile& profile, int threads,
                         bool micro_kernels_only) const;

  std::string name_;
  int preference_ = 0;
};

}  // namespace tileforge::cpu

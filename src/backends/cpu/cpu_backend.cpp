// tileforge's own CPU backend: ISA family chosen at run time, block sizes from the analytic model, every
// parameter a Config entry that --set can pin.
#include "backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "backends/cpu/blocking.hpp"
#include "backends/cpu/gemm_driver.hpp"
#include "backends/cpu/microkernel.hpp"
#include "hw/hw.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::cpu {
namespace {

std::vector<int64_t> multiples(int64_t step, int64_t max) {
  std::vector<int64_t> v;
  for (int64_t x = step; x <= max; x += step) v.push_back(x);
  return v;
}

// Below this many rows B is used too few times to repay packing it (each packed element is reused M times);
// reading it in place halves the memory traffic of skinny problems. Checked by the tuner later.
constexpr int64_t kStreamBMaxRows = 64;

class CpuKernel final : public Kernel {
 public:
  CpuKernel(Config config, CpuPlan plan) : Kernel(std::move(config)), plan_(plan) {}
  const CpuPlan& plan() const { return plan_; }

 private:
  CpuPlan plan_;
};

bool is_isa_family(std::string_view family) {
  const auto& own = all_families();
  return std::find(own.begin(), own.end(), family) != own.end();
}

// A registered family of the cpu backend other than the ISA families, when it is the one that runs the problem on
// this device (the highest preference among those that fit, run here and take the problem).
const plan::KernelFamily* plugged_family(const Problem& p, const Device& device) {
  const plan::KernelFamily* f = plan::family_for("cpu", p.normalized(), device);
  return f && !is_isa_family(f->name()) ? f : nullptr;
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  bool native() const override { return false; }
  std::string_view device_kind() const override { return "cpu"; }
  Support available() const override { return Support::yes(); }

  Support supports(const Problem& p, const Device& device) const override {
    if (device.kind != "cpu") return Support::no(fmt::format("the cpu backend runs on the CPU, not on {}", device.kind));
    if (p.precision.accum != DType::f32) {
      return Support::no("the cpu backend accumulates in f32 only (f16 accumulation is a GPU policy)");
    }
    return Support::yes();
  }

  // The space of the family that runs the problem here: a registered family of this backend that fits the device's
  // chip record and ranks above the built-in ISA families, else the host's own ISA family.
  ParamSpace space(const Problem& p, const Device& device) const override {
    if (const plan::KernelFamily* f = plugged_family(p, device)) {
      return f->candidates(p.normalized(), device.profile, effective_threads(device)).space;
    }
    return family_space(host_family(), p);
  }

  Expected<Config> heuristic(const Problem& p, const Device& device) const override {
    if (Support s = supports(p, device); !s) return unsupported(s.reason);
    if (const plan::KernelFamily* f = plugged_family(p, device)) {
      const plan::FamilySpace fs = f->candidates(p.normalized(), device.profile, effective_threads(device));
      if (fs.reference) return *fs.reference;
      return unsupported(fmt::format("family {} has no pick of its own", f->name()));
    }
    const std::string family = host_family();
    return analytic_config(family, p, analytic_block_sizes(device.profile, family, effective_threads(device)));
  }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& p, const Config& config, const Device& device) override {
    if (Status s = p.validate(); !s) return s;
    if (Support s = supports(p, device); !s) return unsupported(s.reason);
    if (!is_isa_family(config.family)) {
      // A plugged-in family brings its own code.
      const plan::KernelFamily* f = plan::find_family(config.family);
      if (!f || f->backend() != name()) {
        return invalid_argument(fmt::format("family '{}' is not run by the cpu backend", config.family));
      }
      return f->prepare(p, config, device);
    }
    if (Support s = family_runs_here(config.family); !s) return unsupported(s.reason);
    const ParamSpace& sp = family_space(config.family, p);
    if (Status s = sp.check(config); !s) return s;
    CpuPlan plan;
    plan.kernel = find_microkernel(config.family, int(config.at("MR")), int(config.at("NR")));
    plan.mc = config.at("MC");
    plan.kc = config.at("KC");
    plan.nc = config.at("NC");
    plan.pack_b = config.at("PACK_B") != 0;
    plan.threads = effective_threads(device);
    return std::unique_ptr<Kernel>(std::make_unique<CpuKernel>(config, plan));
  }

  Status run(const Kernel& kernel, const Problem& problem, const GemmArgs& args) override {
    const auto* k = dynamic_cast<const CpuKernel*>(&kernel);
    if (!k) {
      const plan::KernelFamily* f = plan::find_family(kernel.config().family);
      if (f && f->backend() == name() && !is_isa_family(kernel.config().family)) return f->run(kernel, problem, args);
      return invalid_argument("kernel was not prepared by the cpu backend");
    }
    if (Status s = problem.validate(); !s) return s;
    const Problem p = problem.normalized();
    // C has no element: nothing to read or write whatever K and the batch count (as in the cuda backend), where the
    // driver would walk every empty entry (a fuzzer's batch of 1.8e17).
    if (p.m == 0 || p.n == 0) return {};
    const bool product = p.k > 0 && p.alpha != 0.0;
    if (product && !args.a) return invalid_argument("A is a null pointer while M and K are non-zero");
    if (product && !args.b) return invalid_argument("B is a null pointer while K and N are non-zero");
    if (!args.c) return invalid_argument("C is a null pointer while M and N are non-zero");
    run_gemm(p, args.a, args.b, args.c, k->plan());
    return {};
  }

};

}  // namespace

const std::vector<std::string>& all_families() {
  static const std::vector<std::string> f = {"cpu-avx512", "cpu-avx2", "cpu-generic"};
  return f;
}

Support family_runs_here(std::string_view family) {
  const hw::CpuIsa& isa = hw::cpu_isa();
  if (family == "cpu-generic") return Support::yes();
  if (family == "cpu-avx2") {
    if (isa.avx2 && isa.fma && isa.os_avx) return Support::yes();
    return Support::no("cpu-avx2 needs AVX2 and FMA with OS support for the YMM state; this host lacks them");
  }
  if (family == "cpu-avx512") {
    if (isa.avx512f && isa.avx512bw && isa.avx512dq && isa.avx512vl && isa.os_avx512) return Support::yes();
    return Support::no("cpu-avx512 needs AVX-512 F/BW/DQ/VL with OS support for the ZMM state; this host lacks them");
  }
  return Support::no(fmt::format("unknown cpu family '{}' (allowed: cpu-avx512, cpu-avx2, cpu-generic)", family));
}

bool can_stream_b(const Problem& p) { return p.precision.input == DType::f32 && b_row_major(p.layout); }

Config analytic_config(std::string_view family, const Problem& p, const BlockSizes& b) {
  Config c{std::string(family), {}};
  c.params["MR"] = b.mr;
  c.params["NR"] = b.nr;
  c.params["KC"] = b.kc;
  c.params["MC"] = b.mc;
  c.params["NC"] = b.nc;
  c.params["PACK_B"] = (can_stream_b(p) && p.m <= kStreamBMaxRows) ? 0 : 1;
  return c;
}

std::string host_family() {
  for (const auto& f : all_families())
    if (family_runs_here(f)) return f;
  return "cpu-generic";
}

namespace {

ParamSpace build_family_space(std::string_view family, const Problem& p) {
  ParamSpace s;
  s.family = std::string(family);
  s.version = kFamilyVersion;
  std::vector<int64_t> mrs, nrs;
  for (const MicroKernel& k : microkernels_for(family)) {
    if (std::find(mrs.begin(), mrs.end(), k.mr) == mrs.end()) mrs.push_back(k.mr);
    if (std::find(nrs.begin(), nrs.end(), k.nr) == nrs.end()) nrs.push_back(k.nr);
  }
  std::sort(mrs.begin(), mrs.end());
  std::sort(nrs.begin(), nrs.end());
  s.params = {
      {"MR", mrs, "hardware mapping", "rows of the register block (micro-kernel height)"},
      {"NR", nrs, "hardware mapping", "columns of the register block, a whole number of vectors"},
      {"KC", multiples(8, 4096), "data scheduling", "depth of a packed panel: the KC x NR micro-panel of B lives in L1"},
      {"MC", multiples(2, 8192), "data scheduling", "rows of the packed block of A that lives in L2"},
      {"NC", multiples(8, 65536), "data scheduling", "columns of the packed panel of B that lives in L3"},
      {"PACK_B", can_stream_b(p) ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1}, "data scheduling",
       "1: pack B into micro-panels; 0: read f32 B in place (only when B is contiguous along N)"},
  };
  const std::string fam(family);
  // The micro-kernel table is the ISA mapping; MC and NC are block sizes, whole numbers of micro-tiles.
  s.constraints = {
      {Layer::hardware_mapping, fmt::format("(MR, NR) is a micro-kernel of {}", family),
       [fam](const Config& c) {
         return find_microkernel(fam, int(c.params.at("MR")), int(c.params.at("NR"))) != nullptr;
       }},
      {Layer::data_scheduling, "MC % MR == 0",
       [](const Config& c) { return c.params.at("MC") % c.params.at("MR") == 0; }},
      {Layer::data_scheduling, "NC % NR == 0",
       [](const Config& c) { return c.params.at("NC") % c.params.at("NR") == 0; }},
  };
  return s;
}

}  // namespace

// The space depends on the problem only through whether B may be read in place: kept per family and that, since
// building it (some 13,000 legal block sizes, the constraints' texts) is a third of a new shape's dispatch time, and
// handed out by reference (entries of a std::map never move), since copying it cost a tenth of that time again.
const ParamSpace& family_space(std::string_view family, const Problem& p) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, bool>, ParamSpace> spaces;
  const auto key = std::make_pair(std::string(family), can_stream_b(p));
  std::lock_guard lock(mutex);
  auto it = spaces.find(key);
  if (it == spaces.end()) it = spaces.emplace(key, build_family_space(family, p)).first;
  return it->second;
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace tileforge::cpu

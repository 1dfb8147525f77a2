// A CPU matched to its microarchitecture record (profiles/uarch/) by CPUID vendor, family and model, for the per-core
// rates detection cannot read (FMA pipes and latency, load ports, cache rates); an ISA-class record stands in, said
// so, for a CPU no record names.
#include <fmt/format.h>

#include "hw/hw.hpp"

namespace tileforge::hw {

namespace {

// The ISA-class records, by the vector width they stand in for.
const char* isa_record_for(int vector_bits) {
  if (vector_bits >= 512) return "isa-avx512";
  if (vector_bits >= 256) return "isa-avx2";
  return "isa-128";
}

std::string describe(const CpuSignature& cpu) {
  if (cpu.vendor.empty()) return "this CPU (not x86: no CPUID signature)";
  return fmt::format("{} family {:#x} model {:#04x}", cpu.vendor, cpu.family, cpu.model);
}

bool names(const UarchModels& m, const CpuSignature& cpu) {
  if (m.vendor != cpu.vendor || m.family != cpu.family) return false;
  for (const auto& [lo, hi] : m.models)
    if (cpu.model >= lo && cpu.model <= hi) return true;
  return false;
}

}  // namespace

CpuSignature cpu_signature_from_leaf1(std::string vendor, uint32_t eax) {
  CpuSignature s;
  s.vendor = std::move(vendor);
  const int base_family = int((eax >> 8) & 0xf), base_model = int((eax >> 4) & 0xf);
  const int ext_family = int((eax >> 20) & 0xff), ext_model = int((eax >> 16) & 0xf);
  s.family = base_family == 0xf ? base_family + ext_family : base_family;
  s.model = (base_family == 0x6 || base_family == 0xf) ? (ext_model << 4) | base_model : base_model;
  return s;
}

CpuSignature cpu_signature() {
  const CpuIsa& isa = cpu_isa();
  return CpuSignature{isa.vendor, isa.family, isa.model};
}

Expected<UarchMatch> match_uarch(const CpuSignature& cpu, int vector_bits) {
  std::optional<UarchRecord> named;
  for (const std::string& name : builtin_uarch_names()) {
    auto r = load_uarch(name);
    if (!r) return r.status();
    if (r->match && names(*r->match, cpu)) {
      named = std::move(*r);
      break;
    }
  }
  if (named) {
    if (const UarchRates* rates = named->at(vector_bits)) {
      return UarchMatch{named->name, false,
                        fmt::format("{} ({}, {}-bit vectors: microarchitecture record {})", named->display_name,
                                    describe(cpu), vector_bits, named->name),
                        *rates};
    }
  }
  const char* isa = isa_record_for(vector_bits);
  auto generic = load_uarch(isa);
  if (!generic) return generic.status();
  const UarchRates* rates = generic->at(vector_bits);
  if (!rates) {
    return not_available(fmt::format("no microarchitecture record has {}-bit rates for {}", vector_bits,
                                     describe(cpu)));
  }
  const std::string why =
      named ? fmt::format("the record {} ({}) has no {}-bit rates", named->name, named->display_name, vector_bits)
            : fmt::format("no record for {}", describe(cpu));
  return UarchMatch{generic->name, true,
                    fmt::format("{}: the {} record ({}), the values the cost model used for every core before records",
                                why, generic->display_name, generic->name),
                    *rates};
}

void apply_uarch(HwProfile& p, const UarchMatch& m) {
  p.fma_pipes = m.rates.fma_pipes;
  p.fma_latency_cycles = m.rates.fma_latency_cycles;
  p.load_ports_per_cycle = m.rates.load_ports_per_cycle;
  p.l2_bytes_per_core_cycle = m.rates.l2_bytes_per_core_cycle;
  p.l3_bytes_per_core_cycle = m.rates.l3_bytes_per_core_cycle;
  for (const char* key : {"fma_pipes", "fma_latency_cycles", "load_ports_per_cycle", "l2_bytes_per_core_cycle",
                          "l3_bytes_per_core_cycle"}) {
    auto it = m.rates.sources.find(key);
    p.sources[key] = fmt::format("{}: {}", m.label, it == m.rates.sources.end() ? "no source" : it->second);
  }
  p.uarch = m.label;
}

}  // namespace tileforge::hw

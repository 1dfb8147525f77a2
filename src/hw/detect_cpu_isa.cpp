// Host CPU detection, the instruction set: vendor, brand, model and features from CPUID, as the OS enables them (XCR0).
// CPUID by hand: cpu_features 0.7 (Debian 12) lacks AVX512-FP16, LAHF/LZCNT (psABI levels) and XCR0's AMX bits.
#include <cstring>

#include "hw/detect_cpu_detail.hpp"
#include "hw/hw.hpp"

#if TILEFORGE_X86
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tileforge::hw {

namespace {

using namespace detail;

#if TILEFORGE_X86
uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

// XCR0 state components the OS must save for each register file (Intel SDM vol. 1, 13.1).
constexpr uint64_t kXcr0Sse = 1u << 1, kXcr0Ymm = 1u << 2;
constexpr uint64_t kXcr0Opmask = 1u << 5, kXcr0ZmmHi256 = 1u << 6, kXcr0Hi16Zmm = 1u << 7;
constexpr uint64_t kXcr0TileCfg = 1u << 17, kXcr0TileData = 1u << 18;

// Linux keeps AMX tile data off until a process asks for it (arch/x86/include/uapi/asm/prctl.h).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtileData = 18;

bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
#else
  return false;
#endif
}
#endif

CpuIsa detect_isa() {
  CpuIsa isa;
#if TILEFORGE_X86
  auto l0 = cpuid(0);
  if (!l0) return isa;
  char vendor[13] = {};
  std::memcpy(vendor + 0, &l0->ebx, 4);
  std::memcpy(vendor + 4, &l0->edx, 4);
  std::memcpy(vendor + 8, &l0->ecx, 4);
  isa.vendor = vendor;

  if (auto ext = cpuid(0x80000000); ext && ext->eax >= 0x80000004) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      auto r = cpuid(0x80000002 + i);
      if (!r) break;
      std::memcpy(brand + 16 * i + 0, &r->eax, 4);
      std::memcpy(brand + 16 * i + 4, &r->ebx, 4);
      std::memcpy(brand + 16 * i + 8, &r->ecx, 4);
      std::memcpy(brand + 16 * i + 12, &r->edx, 4);
    }
    isa.brand = trim(brand);
  }

  Regs l1 = cpuid(1).value_or(Regs{});
  const CpuSignature signature = cpu_signature_from_leaf1(isa.vendor, l1.eax);
  isa.family = signature.family;
  isa.model = signature.model;
  isa.sse42 = bit(l1.ecx, 20);
  isa.fma = bit(l1.ecx, 12);
  isa.avx = bit(l1.ecx, 28);
  isa.f16c = bit(l1.ecx, 29);
  const bool osxsave = bit(l1.ecx, 27);

  Regs l7 = cpuid(7, 0).value_or(Regs{});
  isa.avx2 = bit(l7.ebx, 5);
  isa.avx512f = bit(l7.ebx, 16);
  isa.avx512dq = bit(l7.ebx, 17);
  isa.avx512bw = bit(l7.ebx, 30);
  isa.avx512vl = bit(l7.ebx, 31);
  isa.amx_bf16 = bit(l7.edx, 22);
  isa.avx512_fp16 = bit(l7.edx, 23);
  isa.amx_tile = bit(l7.edx, 24);
  isa.amx_int8 = bit(l7.edx, 25);
  // Subleaf 1 exists only when subleaf 0 reports it (EAX = highest subleaf).
  if (l7.eax >= 1) isa.avx512_bf16 = bit(cpuid(7, 1).value_or(Regs{}).eax, 5);

  if (osxsave) {
    const uint64_t xcr0 = read_xcr0();
    isa.os_avx = (xcr0 & (kXcr0Sse | kXcr0Ymm)) == (kXcr0Sse | kXcr0Ymm);
    const uint64_t zmm = kXcr0Sse | kXcr0Ymm | kXcr0Opmask | kXcr0ZmmHi256 | kXcr0Hi16Zmm;
    isa.os_avx512 = (xcr0 & zmm) == zmm;
    isa.xcr0_amx = (xcr0 & (kXcr0TileCfg | kXcr0TileData)) == (kXcr0TileCfg | kXcr0TileData);
  }
  if (isa.amx_tile && isa.xcr0_amx) isa.amx_permission = request_amx_permission();
  isa.os_amx = isa.xcr0_amx && isa.amx_permission;

  // x86-64 psABI micro-architecture levels, from the features that define them.
  Regs e1 = cpuid(0x80000001).value_or(Regs{});
  const bool v2 = bit(l1.ecx, 0) && bit(l1.ecx, 9) && bit(l1.ecx, 13) && bit(l1.ecx, 19) && isa.sse42 &&
                  bit(l1.ecx, 23) && bit(e1.ecx, 0);
  const bool v3 = v2 && isa.has_avx2() && isa.f16c && bit(l7.ebx, 3) && bit(l7.ebx, 8) && bit(l1.ecx, 22) &&
                  bit(e1.ecx, 5) && osxsave;
  const bool v4 = v3 && isa.has_avx512() && bit(l7.ebx, 28);
  isa.x86_64_level = v4 ? 4 : v3 ? 3 : v2 ? 2 : 1;
#endif
  return isa;
}

}  // namespace

const CpuIsa& cpu_isa() {
  static const CpuIsa isa = detect_isa();
  return isa;
}

}  // namespace tileforge::hw

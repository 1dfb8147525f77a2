// `tileforge devices`: what was detected (device, ISA, caches, cores, measured peak), the planning profile, and
// which backends can run here.
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/envelope.hpp"
#include "bench/harness.hpp"
#include "bench/suite.hpp"
#include "hw/hw.hpp"
#include "options.hpp"

namespace tileforge::cli {
namespace {

struct DevicesArgs {
  DeviceArgs device;
  OutputArgs output;
};

const std::vector<std::string> kFormats = {"table", "json"};

std::string bytes_text(int64_t b) {
  if (b >= (int64_t(1) << 20) && b % (int64_t(1) << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::vector<std::string> isa_features(const hw::CpuIsa& isa) {
  std::vector<std::string> f;
  auto add = [&](bool on, const char* name) {
    if (on) f.push_back(name);
  };
  add(isa.sse42, "sse4.2");
  add(isa.avx && isa.os_avx, "avx");
  add(isa.avx2 && isa.os_avx, "avx2");
  add(isa.fma, "fma");
  add(isa.f16c, "f16c");
  add(isa.avx512f && isa.os_avx512, "avx512f");
  add(isa.avx512bw && isa.os_avx512, "avx512bw");
  add(isa.avx512dq && isa.os_avx512, "avx512dq");
  add(isa.avx512vl && isa.os_avx512, "avx512vl");
  add(isa.avx512_bf16 && isa.os_avx512, "avx512_bf16");
  add(isa.avx512_fp16 && isa.os_avx512, "avx512_fp16");
  add(isa.amx_tile && isa.os_amx, "amx-tile");
  add(isa.amx_bf16 && isa.os_amx, "amx-bf16");
  add(isa.amx_int8 && isa.os_amx, "amx-int8");
  // Present in the chip but not enabled by the OS: worth saying, since kernels cannot use it.
  if ((isa.avx512f && !isa.os_avx512) || (isa.amx_tile && !isa.os_amx)) f.push_back("(some state disabled by the OS)");
  return f;
}

int run_devices(const DevicesArgs& a) {
  constexpr std::string_view verb = "devices";
  auto device = open_device_from(a.device);
  if (!device) return fail(verb, device.status());
  std::optional<OutputFile> file;
  if (Status s = open_output(a.output.out, file); !s) return fail(verb, s);
  const hw::HwProfile& prof = device->profile;
  const hw::CpuIsa& isa = hw::cpu_isa();

  if (a.output.format == "json") {
    // The envelope every verb's JSON shares (schemas/envelope.schema.json): one row per backend, what can run
    // here; the device, host CPU, chip profile and builtin names beside them.
    auto doc = envelope<nlohmann::ordered_json>("devices");
    doc["environment"] = {{"tool_version", std::string(version())},
                          {"device", device->name},
                          {"profile", prof.name},
                          {"host", isa.brand}};
    doc["device"] = {{"kind", device->kind}, {"ordinal", device->ordinal}, {"name", device->name},
                     {"threads", tileforge::effective_threads(*device)}};
    doc["host_cpu"] = {{"vendor", isa.vendor}, {"brand", isa.brand}, {"family", isa.family}, {"model", isa.model},
                       {"isa", isa_features(isa)}};
    if (!prof.uarch.empty()) doc["host_cpu"]["microarchitecture"] = prof.uarch;
    nlohmann::ordered_json profile;
    try {
      profile = nlohmann::ordered_json::parse(hw::to_json(prof));
    } catch (const std::exception&) {
      profile = hw::to_json(prof);
    }
    doc["profile"] = profile;
    doc["rows"] = nlohmann::ordered_json::array();
    for (Backend* b : all_backends()) {
      Support ok = b->available();
      doc["rows"].push_back({{"name", b->name()},
                             {"role", b->native() ? "vendor" : "ours"},
                             {"device_kind", b->device_kind()},
                             {"available", ok.ok},
                             {"reason", ok.reason}});
    }
    doc["builtin_profiles"] = hw::builtin_profile_names();
    doc["builtin_suites"] = bench::builtin_suite_names();
    const std::string text = doc.dump(1) + "\n";
    return emit(verb, file, text);
  }

  std::string out;
  auto line = [&](std::string_view key, const std::string& value) { out += fmt::format("{:<19} {}\n", key, value); };
  const std::string spec = device->kind == "cpu" ? device->kind : fmt::format("{}:{}", device->kind, device->ordinal);
  line("device", device->name == spec ? spec : fmt::format("{} ({})", spec, device->name));
  line("host cpu", fmt::format("{} {} (family {:#x} model {:#04x})", isa.vendor, isa.brand, isa.family, isa.model));
  line("isa", fmt::format("{}", fmt::join(isa_features(isa), " ")));
  line("threads", fmt::format("{}", tileforge::effective_threads(*device)));
  line("profile", fmt::format("{}{} ({}, {})", prof.name, prof.display_name.empty() ? "" : " - " + prof.display_name,
                              prof.kind, prof.measured ? "measured on this host" : "from a chip record"));
  line("arch", prof.arch.empty() ? "-" : prof.arch);
  line("cores", fmt::format("{}", prof.cores));
  if (prof.boost_clock_ghz > 0) line("clock", fmt::format("{:.2f} GHz", prof.boost_clock_ghz));
  if (prof.vector_bits > 0) line("vector bits", fmt::format("{}", prof.vector_bits));
  if (!prof.features.empty()) line("features", fmt::format("{}", fmt::join(prof.features, " ")));
  for (const auto& c : prof.caches) {
    line(fmt::format("L{} {}", c.level, c.kind),
         fmt::format("{}{}{}", bytes_text(c.size_bytes), c.shared_by > 1 ? fmt::format(", shared by {}", c.shared_by) : "",
                     c.ways > 0 ? fmt::format(", {}-way", c.ways) : ""));
  }
  if (prof.smem_per_core_bytes > 0) line("smem per core", bytes_text(prof.smem_per_core_bytes));
  // Where the per-core rates detection cannot read come from: the CPU's microarchitecture record, or the record of
  // its ISA class when no record names it (the line says so).
  if (!prof.uarch.empty()) line("microarchitecture", prof.uarch);
  if (prof.fma_pipes > 0) {
    line("core rates", fmt::format("{} FMA pipes x {} cycles latency, {} loads/cycle, L2 {:g} B/cycle, L3 {:g} B/cycle",
                                   prof.fma_pipes, prof.fma_latency_cycles, prof.load_ports_per_cycle,
                                   prof.l2_bytes_per_core_cycle, prof.l3_bytes_per_core_cycle));
  }
  if (prof.max_blocks_per_core > 0) {
    line("sm rates", fmt::format("{} blocks per SM, L2 {:g} B/cycle, shared memory {:g} B/cycle per SM",
                                 prof.max_blocks_per_core, prof.l2_bytes_per_core_cycle, prof.smem_bytes_per_core_cycle));
  }
  for (const auto& pk : prof.peaks) {
    line(fmt::format("peak {}/acc {}", to_string(pk.input), to_string(pk.accum)),
         fmt::format("{:.1f} GFLOP/s ({})", pk.tflops * 1e3, pk.source.empty() ? "no source" : pk.source));
  }
  if (prof.mem_bandwidth_gbps > 0) line("memory bandwidth", fmt::format("{:.0f} GB/s", prof.mem_bandwidth_gbps));
  for (Backend* b : all_backends()) {
    Support ok = b->available();
    line(fmt::format("backend {}", b->name()),
         fmt::format("{}, {}{}", b->native() ? "vendor library" : "ours", b->device_kind(),
                     ok ? ", available" : ", unavailable: " + ok.reason));
  }
  line("profiles", fmt::format("{}", fmt::join(hw::builtin_profile_names(), ", ")));
  line("suites", fmt::format("{}", fmt::join(bench::builtin_suite_names(), ", ")));
  return emit(verb, file, out);
}

}  // namespace

Command add_devices_command(CLI::App& parent) {
  auto args = std::make_shared<DevicesArgs>();
  CLI::App* app = parent.add_subcommand("devices", "Show the detected device, its ISA, caches, cores and measured "
                                                   "peak, the planning profile and the backends present");
  add_device_options(*app, args->device);
  add_output_options(*app, args->output, kFormats, kOutInsteadOfStdout);
  return {app, [args] { return run_devices(*args); }};
}

}  // namespace tileforge::cli

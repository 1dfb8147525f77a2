// Host measurements kept across processes in a small JSON file, so that every process plans with the same chip.
#include "hw/host_measurements.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/output_path.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge::hw {
namespace fs = std::filesystem;

namespace {

// A number outside its bound (hw_profile.hpp) is dropped with a warning, never kept: with "the highest value wins",
// one bad number (a hand edit, a broken timer, 1e30) would otherwise be every later process's peak forever. 0 means
// "not measured" and passes silently.
double plausible(double v, const Bound& b, const std::string& what) {
  if (v == 0 || b.admits(v)) return v;
  std::fprintf(stderr, "tileforge: warning: %s %s; dropped, not kept\n", what.c_str(),
               b.refusal(fmt::format("{}", v)).c_str());
  return 0;
}

}  // namespace

std::string host_measurements_file() {
  if (const char* v = std::getenv("TILEFORGE_HOST_CACHE"); v && *v) {
    return std::string(v) == "off" ? std::string() : std::string(v);
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') {
    return (fs::path(x) / "tileforge" / "host-cpu.json").string();
  }
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "tileforge" / "host-cpu.json").string();
  return {};
}

HostMeasurements remember_host_measurements(const std::string& host_key, double fma_gflops, double bandwidth_gbps,
                                            const std::string& today) {
  HostMeasurements m;
  m.fma_gflops = plausible(fma_gflops, bounds::host_fma_gflops, "this process's FMA peak measurement: fma_gflops");
  m.bandwidth_gbps =
      plausible(bandwidth_gbps, bounds::host_bandwidth_gbps, "this process's bandwidth measurement: bandwidth_gbps");
  const std::string path = host_measurements_file();
  if (path.empty()) return m;
  // Only a regular file (or a symbolic link to one, or nothing yet) is a cache: a FIFO would block the read, and a
  // device or a link to one (TILEFORGE_HOST_CACHE=/dev/null) must never be replaced; then nothing is kept.
  auto where = output_path(path, "TILEFORGE_HOST_CACHE");
  if (!where || where->kind != OutputKind::replace) return m;

  nlohmann::json doc = nlohmann::json::object();
  {
    std::ifstream in(path);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      // A malformed file (a crash mid-write on another filesystem, a hand edit) is replaced, never trusted.
      doc = nlohmann::json::parse(text.str(), nullptr, false);
      if (doc.is_discarded() || !doc.is_object() || !doc.contains("hosts") || !doc["hosts"].is_object()) {
        doc = nlohmann::json::object();
      }
    }
  }
  if (!doc.contains("hosts")) doc = {{"version", 1}, {"hosts", nlohmann::json::object()}};
  nlohmann::json& entry = doc["hosts"][host_key];
  auto stored = [&](const Bound& b) {
    const std::string name(b.field);
    if (!entry.is_object() || !entry.contains(name) || !entry[name].is_number()) return 0.0;
    return plausible(entry[name].get<double>(), b,
                     fmt::format("host cache {}: hosts[\"{}\"].{}", path, host_key, name));
  };
  if (entry.is_object()) {
    m.fma_gflops = std::max(m.fma_gflops, stored(bounds::host_fma_gflops));
    m.bandwidth_gbps = std::max(m.bandwidth_gbps, stored(bounds::host_bandwidth_gbps));
    m.processes = int(stored(bounds::host_processes)) + 1;
    if (entry.contains("since") && entry["since"].is_string()) m.since = entry["since"].get<std::string>();
  }
  if (m.since.empty()) m.since = today;
  entry = {{"fma_gflops", m.fma_gflops},
           {"bandwidth_gbps", m.bandwidth_gbps},
           {"processes", m.processes},
           {"since", m.since}};

  // Written to a temporary file and renamed, so a reader never sees half a file; two writers at once may lose one
  // process's numbers, which only delays reaching the highest. A symbolic link stays: its target is replaced.
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (!replace_file(path, doc.dump(2) + "\n", "TILEFORGE_HOST_CACHE")) return m;
  m.file = path;
  return m;
}

}  // namespace tileforge::hw

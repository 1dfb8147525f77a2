// Host measurements kept across processes in a small JSON file, so that every process plans with the same chip.
#include "hw/host_measurements.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
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

// The cache file's document: {"version": 1, "hosts": {...}}, or an empty object when it is missing, unreadable or
// malformed (a crash mid-write on another filesystem, a hand edit), which is then replaced, never trusted.
nlohmann::json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("hosts") || !doc["hosts"].is_object()) {
    return nlohmann::json::object();
  }
  return doc;
}

// One host's stored numbers, each outside its bound dropped (processes: how many processes stored them).
HostMeasurements stored_entry(const nlohmann::json& entry, const std::string& path, const std::string& host_key) {
  auto stored = [&](const Bound& b) {
    const std::string name(b.field);
    if (!entry.contains(name) || !entry[name].is_number()) return 0.0;
    return plausible(entry[name].get<double>(), b, fmt::format("host cache {}: hosts[\"{}\"].{}", path, host_key, name));
  };
  HostMeasurements m;
  m.fma_gflops = stored(bounds::host_fma_gflops);
  m.bandwidth_gbps = stored(bounds::host_bandwidth_gbps);
  m.processes = int(stored(bounds::host_processes));
  if (entry.contains("since") && entry["since"].is_string()) m.since = entry["since"].get<std::string>();
  m.file = path;
  return m;
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

  nlohmann::json doc = read_cache(path);
  if (!doc.contains("hosts")) doc = {{"version", 1}, {"hosts", nlohmann::json::object()}};
  nlohmann::json& entry = doc["hosts"][host_key];
  if (entry.is_object()) {
    const HostMeasurements kept = stored_entry(entry, path, host_key);
    m.fma_gflops = std::max(m.fma_gflops, kept.fma_gflops);
    m.bandwidth_gbps = std::max(m.bandwidth_gbps, kept.bandwidth_gbps);
    m.processes = kept.processes + 1;
    m.since = kept.since;
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

std::optional<HostMeasurements> stored_host_measurements(const std::string& host_key) {
  const std::string path = host_measurements_file();
  std::error_code ec;
  // A FIFO or a device would block or mislead the read: only a regular file (or a link to one) is a cache.
  if (path.empty() || !fs::is_regular_file(path, ec)) return std::nullopt;
  const nlohmann::json doc = read_cache(path);
  if (!doc.contains("hosts") || !doc["hosts"].contains(host_key) || !doc["hosts"][host_key].is_object()) {
    return std::nullopt;
  }
  HostMeasurements m = stored_entry(doc["hosts"][host_key], path, host_key);
  if (m.fma_gflops <= 0) return std::nullopt;  // a peak is what planning needs; without one the record's nominal
  return m;
}

}  // namespace tileforge::hw

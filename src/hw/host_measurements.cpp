// Host measurements kept across processes in a small JSON file, so that every process plans with the same chip.
#include "hw/host_measurements.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tileforge::hw {
namespace fs = std::filesystem;

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
  m.fma_gflops = fma_gflops;
  m.bandwidth_gbps = bandwidth_gbps;
  const std::string path = host_measurements_file();
  if (path.empty()) return m;

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
  auto stored = [&](const char* name) {
    return entry.is_object() && entry.contains(name) && entry[name].is_number() ? entry[name].get<double>() : 0.0;
  };
  if (entry.is_object()) {
    m.fma_gflops = std::max(m.fma_gflops, stored("fma_gflops"));
    m.bandwidth_gbps = std::max(m.bandwidth_gbps, stored("bandwidth_gbps"));
    m.processes = int(stored("processes")) + 1;
    if (entry.contains("since") && entry["since"].is_string()) m.since = entry["since"].get<std::string>();
  }
  if (m.since.empty()) m.since = today;
  entry = {{"fma_gflops", m.fma_gflops},
           {"bandwidth_gbps", m.bandwidth_gbps},
           {"processes", m.processes},
           {"since", m.since}};

  // Written to a temporary file and renamed, so a reader never sees half a file; two writers at once may lose one
  // process's numbers, which only delays reaching the highest.
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return m;
    out << doc.dump(2) << "\n";
    if (!out) {
      fs::remove(tmp, ec);
      return m;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return m;
  }
  m.file = path;
  return m;
}

}  // namespace tileforge::hw

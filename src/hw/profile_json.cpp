// Chip records as JSON: parse_profile (structure against schemas/chip.schema.json, then the rules a schema cannot
// state, each refusal naming the field), to_json, and the compiled-in profiles behind load_profile; likewise the
// microarchitecture records of profiles/uarch/ (schemas/uarch.schema.json).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/embedded.hpp"
#include "core/json_schema.hpp"
#include "core/parse.hpp"
#include "hw/hw.hpp"

namespace tileforge::hw {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// Thrown inside the parser only; parse_profile turns it into a Status naming the field.
struct FieldError {
  std::string field;
  std::string what;
};

[[noreturn]] void fail(const std::string& field, std::string what) { throw FieldError{field, std::move(what)}; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The structure (types, required and known fields, kinds, signs) is the schema's (schemas/chip.schema.json,
// schemas/uarch.schema.json); what follows reads values the schema has already checked, and checks what a schema
// cannot say: dtype names, repeats, rules between fields and physical bounds.
void check_structure(const json& root, std::string_view schema) {
  if (auto bad = schema_violation(root, schema)) fail(bad->field, bad->rule);
}

// A JSON integer as int64_t: the schema's bound is compared as a double, so 2^63 itself passes it and is refused here.
int64_t int64_of(const json& v, const std::string& field) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) fail(field, "is too large");
  return v.get<int64_t>();
}

DType dtype_of(const json& v, const std::string& field) {
  const std::string text = v.get<std::string>();
  auto t = parse_dtype(text);
  if (!t) fail(field, fmt::format("'{}' is not a known dtype (allowed: {})", text, allowed_dtypes()));
  return *t;
}

// The record's caches, each level with its size, ways, line, sharing and source.
void read_caches(const json& root, HwProfile& p) {
  const json& caches = root.at("caches");
  for (std::size_t i = 0; i < caches.size(); ++i) {
    const std::string at = fmt::format("caches[{}]", i);
    const json& c = caches[i];
    CacheLevel cl;
    cl.level = c.at("level").get<int>();
    cl.kind = c.at("kind").get<std::string>();
    cl.size_bytes = int64_of(c.at("size_bytes"), at + ".size_bytes");
    cl.ways = c.at("ways").get<int>();
    cl.line_bytes = c.at("line_bytes").get<int>();
    cl.shared_by = c.at("shared_by").get<int>();
    p.sources[at] = c.at("source").get<std::string>();
    p.caches.push_back(cl);
  }
}

// The record's matrix units (tensor cores, AMX, ...): shape, input and accumulator types, source.
void read_matrix_units(const json& root, HwProfile& p) {
  const json& units = root.at("matrix_units");
  for (std::size_t i = 0; i < units.size(); ++i) {
    const std::string at = fmt::format("matrix_units[{}]", i);
    const json& u = units[i];
    MatrixUnit mu;
    mu.name = u.at("name").get<std::string>();
    mu.m = u.at("m").get<int>();
    mu.n = u.at("n").get<int>();
    mu.k = u.at("k").get<int>();
    mu.n_step = u.value("n_step", 0);
    if (mu.n_step > 0 && mu.n % mu.n_step != 0) fail(at + ".n", "must be a multiple of n_step");
    mu.input = dtype_of(u.at("input"), at + ".input");
    mu.accum = dtype_of(u.at("accum"), at + ".accum");
    p.sources[at] = u.at("source").get<std::string>();
    p.matrix_units.push_back(mu);
  }
}

// The record's peak rates, one per precision policy.
void read_peaks(const json& root, HwProfile& p) {
  const json& peaks = root.at("peaks");
  for (std::size_t i = 0; i < peaks.size(); ++i) {
    const std::string at = fmt::format("peaks[{}]", i);
    const json& r = peaks[i];
    PeakRate pr;
    pr.input = dtype_of(r.at("input"), at + ".input");
    pr.accum = dtype_of(r.at("accum"), at + ".accum");
    pr.tflops = r.at("tflops").get<double>();
    pr.source = r.at("source").get<std::string>();
    // Two rates for one precision would make "fraction of peak" ambiguous.
    for (const PeakRate& earlier : p.peaks)
      if (earlier.input == pr.input && earlier.accum == pr.accum)
        fail(at, fmt::format("repeats input {} with accum {}", to_string(pr.input), to_string(pr.accum)));
    p.peaks.push_back(pr);
  }
}

// The sourced numbers ({"value": ..., "source": "..."}), and what must be positive for the record's kind: a CPU has
// SIMD width but no shared memory; an accelerator has on-chip memory the kernel manages.
void read_numbers(const json& root, HwProfile& p) {
  auto value = [&](const char* key) -> const json& {
    p.sources[key] = root.at(key).at("source").get<std::string>();
    return root.at(key).at("value");
  };
  auto i64 = [&](const char* key) { return int64_of(value(key), std::string(key) + ".value"); };
  auto i32 = [&](const char* key) { return value(key).get<int>(); };
  auto real = [&](const char* key) { return value(key).get<double>(); };
  p.cores = i32("cores");
  p.boost_clock_ghz = real("boost_clock_ghz");
  p.vector_bits = i32("vector_bits");
  p.smem_per_core_bytes = i64("smem_per_core_bytes");
  p.smem_per_block_bytes = i64("smem_per_block_bytes");
  p.registers_per_core = i64("registers_per_core");
  p.max_threads_per_core = i32("max_threads_per_core");
  p.mem_bandwidth_gbps = real("mem_bandwidth_gbps");
  // The cost models' per-core rates: required in every record, like every other number, so that a record states
  // what it knows; 0 where the chip's number is unknown (the cost model then names the field) or does not apply
  // to this kind of chip, the source saying which.
  p.max_blocks_per_core = i32("max_blocks_per_core");
  // Optional: clusters resident at once by cluster size (the schema holds sizes to 2 .. 16, counts to >= 1).
  if (root.contains("resident_clusters"))
    for (const auto& [size, count] : value("resident_clusters").items()) p.resident_clusters[std::stoi(size)] = count;
  p.l2_bytes_per_core_cycle = real("l2_bytes_per_core_cycle");
  p.l3_bytes_per_core_cycle = real("l3_bytes_per_core_cycle");
  p.smem_bytes_per_core_cycle = real("smem_bytes_per_core_cycle");
  p.fma_pipes = i32("fma_pipes");
  p.fma_latency_cycles = i32("fma_latency_cycles");
  p.load_ports_per_cycle = i32("load_ports_per_cycle");
  p.features = value("features").get<std::vector<std::string>>();

  const bool cpu = p.kind == "cpu";
  if (cpu && p.vector_bits == 0) fail("vector_bits.value", "must be a positive integer (a CPU has a vector width)");
  if (!cpu && p.smem_per_core_bytes == 0)
    fail("smem_per_core_bytes.value", "must be a positive integer (an accelerator has on-chip memory)");
  if (!cpu && p.smem_per_block_bytes == 0)
    fail("smem_per_block_bytes.value", "must be a positive integer (an accelerator has on-chip memory)");
  if (p.kind == "gpu" && p.max_threads_per_core == 0)
    fail("max_threads_per_core.value", "must be a positive integer (a GPU holds resident threads)");
  if (p.smem_per_block_bytes > p.smem_per_core_bytes)
    fail("smem_per_block_bytes.value", "must not exceed smem_per_core_bytes");
  // Pipes without a latency (or the reverse) would let the CPU model price the FMA chain with half a record.
  if ((p.fma_pipes > 0) != (p.fma_latency_cycles > 0))
    fail(p.fma_pipes > 0 ? "fma_latency_cycles.value" : "fma_pipes.value",
         "must be given together with fma_pipes and fma_latency_cycles (both positive or both 0)");
}

HwProfile parse_record(const json& root) {
  check_structure(root, "chip.schema.json");
  HwProfile p;
  p.name = root.at("name").get<std::string>();
  p.display_name = root.at("display_name").get<std::string>();
  p.kind = root.at("kind").get<std::string>();
  p.vendor = root.at("vendor").get<std::string>();
  p.arch = root.at("arch").get<std::string>();
  p.representative = root.value("representative", p.representative);
  p.measured = root.value("measured", p.measured);
  p.notes = root.value("notes", p.notes);
  p.uarch = root.value("uarch", p.uarch);
  if (root.contains("match")) p.match_names = root.at("match").at("device_names").get<std::vector<std::string>>();
  read_numbers(root, p);
  read_caches(root, p);
  read_matrix_units(root, p);
  read_peaks(root, p);
  // Well-formed is not enough: a number no chip has (1e9 cores, a 2^62-byte cache, 1e30 TFLOP/s) would hang the
  // planner, overflow the blocking model or be printed as a prediction. The bounds live in hw_profile.hpp.
  if (auto bad = find_implausible(p)) fail(bad->field, bad->what);
  return p;
}

std::string source_of(const HwProfile& p, const std::string& key) {
  auto it = p.sources.find(key);
  // parse_profile requires a source for every number; a record built in code without one still round-trips.
  return it == p.sources.end() || it->second.empty() ? std::string("not recorded") : it->second;
}

struct BuiltinEntry {
  std::string name;  // file stem
  std::string file;  // "h200.json"
  std::string text;
};

const std::vector<BuiltinEntry>& builtin_entries() {
  static const std::vector<BuiltinEntry> entries = [] {
    std::vector<BuiltinEntry> out;
    for (const auto& [file, text] : embedded::embedded_profiles()) {
      std::string f(file);
      if (f.size() < 5 || f.substr(f.size() - 5) != ".json") continue;
      // Files in subfolders are other records (uarch/: microarchitectures, read by uarch.cpp), not chips.
      if (f.find('/') != std::string::npos) continue;
      out.push_back({f.substr(0, f.size() - 5), f, std::string(text)});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
  }();
  return entries;
}

bool looks_like_path(std::string_view s) {
  return s.find('/') != std::string_view::npos || (s.size() >= 5 && s.substr(s.size() - 5) == ".json");
}

Expected<HwProfile> load_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status(Code::io_error, fmt::format("profile file '{}' cannot be read: it is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Code::io_error, fmt::format("profile file '{}' cannot be read: {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status(Code::io_error, fmt::format("profile file '{}' cannot be read", path));
  return parse_profile(text.str(), path);
}

// ---- microarchitecture records (profiles/uarch/*.json) ------------------------------------------------------------

// "0x19" -> 25; the schema has checked the form (0x and up to 8 hexadecimal digits).
int hex_of(const std::string& text) { return int(std::stoll(text.substr(2), nullptr, 16)); }

// "0x30-0x4f" or "0x55".
std::pair<int, int> model_range(const json& v, const std::string& field) {
  const std::string text = v.get<std::string>();
  const std::size_t dash = text.find('-');
  if (dash == std::string::npos) return {hex_of(text), hex_of(text)};
  const int lo = hex_of(text.substr(0, dash)), hi = hex_of(text.substr(dash + 1));
  if (hi < lo) fail(field, fmt::format("'{}' ends before it starts", text));
  return {lo, hi};
}

UarchRecord parse_uarch_record(const json& root) {
  check_structure(root, "uarch.schema.json");
  UarchRecord r;
  r.name = root.at("name").get<std::string>();
  r.display_name = root.at("display_name").get<std::string>();
  r.notes = root.value("notes", r.notes);
  if (root.contains("match")) {
    const json& m = root.at("match");
    UarchModels models;
    models.vendor = m.at("vendor").get<std::string>();
    models.family = hex_of(m.at("family").get<std::string>());
    const json& list = m.at("models");
    for (std::size_t i = 0; i < list.size(); ++i)
      models.models.push_back(model_range(list[i], fmt::format("match.models[{}]", i)));
    models.source = m.at("source").get<std::string>();
    r.match = std::move(models);
  }
  const json& rates = root.at("rates");
  for (std::size_t i = 0; i < rates.size(); ++i) {
    const std::string at = fmt::format("rates[{}]", i);
    const json& w = rates[i];
    UarchRates u;
    u.vector_bits = w.at("vector_bits").get<int>();
    if (r.at(u.vector_bits)) fail(at + ".vector_bits", fmt::format("repeats {} bits", u.vector_bits));
    auto value = [&](const char* key) -> const json& {
      u.sources[key] = w.at(key).at("source").get<std::string>();
      return w.at(key).at("value");
    };
    // The same bounds as a chip record's fields of these names: a detected CPU takes these numbers as its own.
    auto bounded = [&](const char* key, const Bound& b, auto number) {
      if (!b.admits(double(number))) fail(at + "." + key + ".value", b.refusal(fmt::format("{}", number)));
      return number;
    };
    u.fma_pipes = bounded("fma_pipes", bounds::fma_pipes, value("fma_pipes").get<int>());
    u.fma_latency_cycles =
        bounded("fma_latency_cycles", bounds::fma_latency_cycles, value("fma_latency_cycles").get<int>());
    u.load_ports_per_cycle =
        bounded("load_ports_per_cycle", bounds::load_ports_per_cycle, value("load_ports_per_cycle").get<int>());
    u.l2_bytes_per_core_cycle = bounded("l2_bytes_per_core_cycle", bounds::bytes_per_core_cycle,
                                        value("l2_bytes_per_core_cycle").get<double>());
    u.l3_bytes_per_core_cycle = bounded("l3_bytes_per_core_cycle", bounds::bytes_per_core_cycle,
                                        value("l3_bytes_per_core_cycle").get<double>());
    r.rates.push_back(std::move(u));
  }
  return r;
}

// The compiled-in microarchitecture records: embedded as "uarch/<name>.json".
std::vector<BuiltinEntry> builtin_uarch_entries() {
  std::vector<BuiltinEntry> out;
  for (const auto& [file, text] : embedded::embedded_profiles()) {
    std::string f(file);
    if (f.rfind("uarch/", 0) != 0 || f.size() < 11 || f.substr(f.size() - 5) != ".json") continue;
    out.push_back({f.substr(6, f.size() - 11), f, std::string(text)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace

Expected<HwProfile> parse_profile(std::string_view json_text, std::string_view origin) {
  json root;
  try {
    // json::exception, not only parse_error: a number beyond a double's range ("1E400") is out_of_range.
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    return invalid_argument(fmt::format("profile {}: not valid JSON: {}", origin, e.what()));
  }
  try {
    return parse_record(root);
  } catch (const FieldError& e) {
    return invalid_argument(fmt::format("profile {}: field '{}' {}", origin, e.field, e.what));
  }
}

std::string to_json(const HwProfile& p) {
  ordered_json j;
  j["name"] = p.name;
  j["display_name"] = p.display_name;
  j["kind"] = p.kind;
  j["vendor"] = p.vendor;
  j["arch"] = p.arch;
  j["representative"] = p.representative;
  j["measured"] = p.measured;
  if (!p.notes.empty()) j["notes"] = p.notes;
  if (!p.uarch.empty()) j["uarch"] = p.uarch;
  if (!p.match_names.empty()) j["match"] = {{"device_names", p.match_names}};
  auto put = [&](const char* key, auto value) {
    j[key] = ordered_json{{"value", value}, {"source", source_of(p, key)}};
  };
  put("cores", p.cores);
  put("boost_clock_ghz", p.boost_clock_ghz);
  put("vector_bits", p.vector_bits);
  put("smem_per_core_bytes", p.smem_per_core_bytes);
  put("smem_per_block_bytes", p.smem_per_block_bytes);
  put("registers_per_core", p.registers_per_core);
  put("max_threads_per_core", p.max_threads_per_core);
  put("mem_bandwidth_gbps", p.mem_bandwidth_gbps);
  put("max_blocks_per_core", p.max_blocks_per_core);
  if (!p.resident_clusters.empty()) {
    ordered_json r = ordered_json::object();
    for (const auto& [size, count] : p.resident_clusters) r[std::to_string(size)] = count;
    put("resident_clusters", r);
  }
  put("l2_bytes_per_core_cycle", p.l2_bytes_per_core_cycle);
  put("l3_bytes_per_core_cycle", p.l3_bytes_per_core_cycle);
  put("smem_bytes_per_core_cycle", p.smem_bytes_per_core_cycle);
  put("fma_pipes", p.fma_pipes);
  put("fma_latency_cycles", p.fma_latency_cycles);
  put("load_ports_per_cycle", p.load_ports_per_cycle);
  put("features", p.features);
  j["caches"] = ordered_json::array();
  for (std::size_t i = 0; i < p.caches.size(); ++i) {
    const CacheLevel& c = p.caches[i];
    j["caches"].push_back(ordered_json{{"level", c.level},
                                       {"kind", c.kind},
                                       {"size_bytes", c.size_bytes},
                                       {"ways", c.ways},
                                       {"line_bytes", c.line_bytes},
                                       {"shared_by", c.shared_by},
                                       {"source", source_of(p, fmt::format("caches[{}]", i))}});
  }
  j["matrix_units"] = ordered_json::array();
  for (std::size_t i = 0; i < p.matrix_units.size(); ++i) {
    const MatrixUnit& u = p.matrix_units[i];
    ordered_json o{{"name", u.name}, {"m", u.m}, {"n", u.n}, {"k", u.k}};
    if (u.n_step > 0) o["n_step"] = u.n_step;
    o["input"] = std::string(to_string(u.input));
    o["accum"] = std::string(to_string(u.accum));
    o["source"] = source_of(p, fmt::format("matrix_units[{}]", i));
    j["matrix_units"].push_back(std::move(o));
  }
  j["peaks"] = ordered_json::array();
  for (const PeakRate& r : p.peaks) {
    j["peaks"].push_back(ordered_json{{"input", std::string(to_string(r.input))},
                                      {"accum", std::string(to_string(r.accum))},
                                      {"tflops", r.tflops},
                                      {"source", r.source.empty() ? std::string("not recorded") : r.source}});
  }
  return j.dump(2) + "\n";
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (const auto& e : builtin_entries()) names.push_back(e.name);
  return names;
}

Expected<HwProfile> load_profile(std::string_view name_or_path) {
  if (name_or_path == kHostProfileName || name_or_path == host_cpu_profile_name()) return host_cpu_profile();
  if (looks_like_path(name_or_path)) return load_file(std::string(name_or_path));
  for (const auto& e : builtin_entries()) {
    if (e.name != name_or_path) continue;
    auto p = parse_profile(e.text, e.file);
    if (!p) return p;
    // The file name is the record's handle (--profile h200); a record whose name disagrees would be found by
    // one name and report another.
    if (p->name != e.name) {
      return invalid_argument(
          fmt::format("profile {}: field 'name' is '{}' but the file is named {}", e.file, p->name, e.file));
    }
    return p;
  }
  std::vector<std::string> known = builtin_profile_names();
  known.emplace_back(kHostProfileName);
  return invalid_argument(fmt::format("profile '{}' is not a known chip (known: {}; or a path to a .json file)",
                                      name_or_path, join(known)));
}

const UarchRates* UarchRecord::at(int vector_bits) const {
  for (const UarchRates& r : rates)
    if (r.vector_bits == vector_bits) return &r;
  return nullptr;
}

Expected<UarchRecord> parse_uarch(std::string_view json_text, std::string_view origin) {
  json root;
  try {
    // json::exception, not only parse_error: a number beyond a double's range ("1E400") is out_of_range.
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    return invalid_argument(fmt::format("microarchitecture record {}: not valid JSON: {}", origin, e.what()));
  }
  try {
    return parse_uarch_record(root);
  } catch (const FieldError& e) {
    return invalid_argument(fmt::format("microarchitecture record {}: field '{}' {}", origin, e.field, e.what));
  }
}

std::vector<std::string> builtin_uarch_names() {
  std::vector<std::string> names;
  for (const auto& e : builtin_uarch_entries()) names.push_back(e.name);
  return names;
}

Expected<UarchRecord> load_uarch(std::string_view name) {
  for (const auto& e : builtin_uarch_entries()) {
    if (e.name != name) continue;
    auto r = parse_uarch(e.text, e.file);
    if (!r) return r;
    if (r->name != e.name) {
      return invalid_argument(fmt::format("microarchitecture record {}: field 'name' is '{}' but the file is named {}",
                                          e.file, r->name, e.file));
    }
    return r;
  }
  return invalid_argument(fmt::format("'{}' is not a known microarchitecture record (known: {})", name,
                                      join(builtin_uarch_names())));
}

}  // namespace tileforge::hw

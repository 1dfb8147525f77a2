// Chip records as JSON: parse_profile (refusing incomplete records with the field named), to_json, and the
// compiled-in profiles behind load_profile; likewise the microarchitecture records of profiles/uarch/.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/embedded.hpp"
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

std::string path_of(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// Every key of `obj` must be one the format knows: a misspelt field would otherwise be silently ignored and the
// record would fail later as "missing", or worse, not at all when the field is optional.
void refuse_unknown_keys(const json& obj, const std::string& parent, const std::vector<std::string>& known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      fail(path_of(parent, it.key()), fmt::format("is not a known field (known: {})", join(known)));
  }
}

const json& member(const json& obj, const std::string& parent, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(path_of(parent, key), "is missing");
  return *it;
}

const json* optional_member(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

void require_object(const json& v, const std::string& field) {
  if (!v.is_object()) fail(field, "must be an object");
}

std::string get_string(const json& v, const std::string& field) {
  if (!v.is_string()) fail(field, "must be a string");
  std::string s = v.get<std::string>();
  if (s.empty()) fail(field, "must not be empty");
  return s;
}

bool get_bool(const json& v, const std::string& field) {
  if (!v.is_boolean()) fail(field, "must be true or false");
  return v.get<bool>();
}

enum class Sign { positive, non_negative };

int64_t get_int(const json& v, const std::string& field, Sign sign) {
  const char* what = sign == Sign::positive ? "must be a positive integer" : "must be a non-negative integer";
  if (!v.is_number_integer()) fail(field, what);
  // Unsigned JSON integers above int64_t's range read back as negative; both cases are refused here.
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) fail(field, what);
  int64_t x = v.get<int64_t>();
  if (x < 0 || (sign == Sign::positive && x == 0)) fail(field, what);
  return x;
}

int get_int32(const json& v, const std::string& field, Sign sign) {
  int64_t x = get_int(v, field, sign);
  if (x > INT32_MAX) fail(field, "is too large");
  return int(x);
}

double get_number(const json& v, const std::string& field, Sign sign) {
  const char* what = sign == Sign::positive ? "must be a positive number" : "must be a non-negative number";
  if (!v.is_number()) fail(field, what);
  double x = v.get<double>();
  if (!std::isfinite(x) || x < 0 || (sign == Sign::positive && x == 0)) fail(field, what);
  return x;
}

DType get_dtype(const json& v, const std::string& field) {
  std::string text = get_string(v, field);
  auto t = parse_dtype(text);
  if (!t) fail(field, fmt::format("'{}' is not a known dtype (allowed: {})", text, allowed_dtypes()));
  return *t;
}

std::string get_one_of(const json& v, const std::string& field, std::initializer_list<const char*> allowed,
                       std::string_view what) {
  std::string text = get_string(v, field);
  std::vector<std::string> names;
  for (const char* a : allowed) {
    if (text == a) return text;
    names.emplace_back(a);
  }
  fail(field, fmt::format("'{}' is not a known {} (allowed: {})", text, what, join(names)));
}

// A number with its source: {"value": 132, "source": "NVIDIA H100 whitepaper, table 3"}.
struct Sourced {
  const json* value;
  std::string source;
};

Sourced sourced(const json& root, const std::string& key) {
  const json& v = member(root, "", key);
  if (!v.is_object()) fail(key, "must be an object {\"value\": ..., \"source\": \"...\"}");
  refuse_unknown_keys(v, key, {"value", "source"});
  Sourced s{&member(v, key, "value"), get_string(member(v, key, "source"), key + ".source")};
  return s;
}

const json& array_member(const json& obj, const std::string& parent, const std::string& key) {
  const json& v = member(obj, parent, key);
  if (!v.is_array()) fail(path_of(parent, key), "must be an array");
  return v;
}

// The record's caches, each level with its size, ways, line, sharing and source.
void parse_caches(const json& root, HwProfile& p) {
  const json& caches = array_member(root, "", "caches");
  if (caches.empty()) fail("caches", "must list at least one cache");
  for (std::size_t i = 0; i < caches.size(); ++i) {
    const std::string at = fmt::format("caches[{}]", i);
    const json& c = caches[i];
    require_object(c, at);
    refuse_unknown_keys(c, at, {"level", "kind", "size_bytes", "ways", "line_bytes", "shared_by", "source"});
    CacheLevel cl;
    cl.level = get_int32(member(c, at, "level"), at + ".level", Sign::positive);
    if (cl.level > 4) fail(at + ".level", "must be 1, 2, 3 or 4");
    cl.kind = get_one_of(member(c, at, "kind"), at + ".kind", {"data", "unified"}, "cache kind");
    cl.size_bytes = get_int(member(c, at, "size_bytes"), at + ".size_bytes", Sign::positive);
    cl.ways = get_int32(member(c, at, "ways"), at + ".ways", Sign::non_negative);
    cl.line_bytes = get_int32(member(c, at, "line_bytes"), at + ".line_bytes", Sign::positive);
    cl.shared_by = get_int32(member(c, at, "shared_by"), at + ".shared_by", Sign::positive);
    p.sources[at] = get_string(member(c, at, "source"), at + ".source");
    p.caches.push_back(cl);
  }
}

// The record's matrix units (tensor cores, AMX, ...): shape, input and accumulator types, source.
void parse_matrix_units(const json& root, HwProfile& p) {
  const json& units = array_member(root, "", "matrix_units");
  for (std::size_t i = 0; i < units.size(); ++i) {
    const std::string at = fmt::format("matrix_units[{}]", i);
    const json& u = units[i];
    require_object(u, at);
    refuse_unknown_keys(u, at, {"name", "m", "n", "k", "n_step", "input", "accum", "source"});
    MatrixUnit mu;
    mu.name = get_string(member(u, at, "name"), at + ".name");
    mu.m = get_int32(member(u, at, "m"), at + ".m", Sign::positive);
    mu.n = get_int32(member(u, at, "n"), at + ".n", Sign::positive);
    mu.k = get_int32(member(u, at, "k"), at + ".k", Sign::positive);
    if (auto* v = optional_member(u, "n_step")) {
      mu.n_step = get_int32(*v, at + ".n_step", Sign::non_negative);
      if (mu.n_step > 0 && mu.n % mu.n_step != 0) fail(at + ".n", "must be a multiple of n_step");
    }
    mu.input = get_dtype(member(u, at, "input"), at + ".input");
    mu.accum = get_dtype(member(u, at, "accum"), at + ".accum");
    p.sources[at] = get_string(member(u, at, "source"), at + ".source");
    p.matrix_units.push_back(mu);
  }
}

// The record's peak rates, one per precision policy.
void parse_peaks(const json& root, HwProfile& p) {
  const json& peaks = array_member(root, "", "peaks");
  if (peaks.empty()) fail("peaks", "must list at least one peak rate");
  for (std::size_t i = 0; i < peaks.size(); ++i) {
    const std::string at = fmt::format("peaks[{}]", i);
    const json& r = peaks[i];
    require_object(r, at);
    refuse_unknown_keys(r, at, {"input", "accum", "tflops", "source"});
    PeakRate pr;
    pr.input = get_dtype(member(r, at, "input"), at + ".input");
    pr.accum = get_dtype(member(r, at, "accum"), at + ".accum");
    pr.tflops = get_number(member(r, at, "tflops"), at + ".tflops", Sign::positive);
    pr.source = get_string(member(r, at, "source"), at + ".source");
    // Two rates for one precision would make "fraction of peak" ambiguous.
    for (const PeakRate& earlier : p.peaks)
      if (earlier.input == pr.input && earlier.accum == pr.accum)
        fail(at, fmt::format("repeats input {} with accum {}", to_string(pr.input), to_string(pr.accum)));
    p.peaks.push_back(pr);
  }
}

HwProfile parse_record(const json& root) {
  if (!root.is_object()) fail("(top level)", "must be a JSON object");
  refuse_unknown_keys(root, "",
                      {"name", "display_name", "kind", "vendor", "arch", "representative", "measured", "notes",
                       "uarch", "match", "cores", "boost_clock_ghz", "vector_bits", "smem_per_core_bytes",
                       "smem_per_block_bytes", "registers_per_core", "max_threads_per_core", "mem_bandwidth_gbps",
                       "max_blocks_per_core", "l2_bytes_per_core_cycle", "l3_bytes_per_core_cycle",
                       "smem_bytes_per_core_cycle", "fma_pipes", "fma_latency_cycles", "load_ports_per_cycle",
                       "resident_clusters", "features", "caches", "matrix_units", "peaks"});
  HwProfile p;
  p.name = get_string(member(root, "", "name"), "name");
  p.display_name = get_string(member(root, "", "display_name"), "display_name");
  p.kind = get_one_of(member(root, "", "kind"), "kind", {"cpu", "gpu", "npu"}, "kind");
  p.vendor = get_string(member(root, "", "vendor"), "vendor");
  p.arch = get_string(member(root, "", "arch"), "arch");
  if (auto* v = optional_member(root, "representative")) p.representative = get_bool(*v, "representative");
  if (auto* v = optional_member(root, "measured")) p.measured = get_bool(*v, "measured");
  if (auto* v = optional_member(root, "notes")) p.notes = get_string(*v, "notes");
  if (auto* v = optional_member(root, "uarch")) p.uarch = get_string(*v, "uarch");
  if (auto* m = optional_member(root, "match")) {
    require_object(*m, "match");
    refuse_unknown_keys(*m, "match", {"device_names"});
    const json& names = array_member(*m, "match", "device_names");
    for (std::size_t i = 0; i < names.size(); ++i)
      p.match_names.push_back(get_string(names[i], fmt::format("match.device_names[{}]", i)));
  }

  const bool cpu = p.kind == "cpu";
  const bool gpu = p.kind == "gpu";
  // What must be positive depends on the kind: a CPU has SIMD width but no shared memory; an accelerator has
  // on-chip memory the kernel manages.
  auto number = [&](const char* key, Sign sign, auto&& get) {
    Sourced s = sourced(root, key);
    p.sources[key] = s.source;
    return get(*s.value, std::string(key) + ".value", sign);
  };
  auto int64_field = [](const json& v, const std::string& f, Sign s) { return get_int(v, f, s); };
  auto int_field = [](const json& v, const std::string& f, Sign s) { return get_int32(v, f, s); };
  auto double_field = [](const json& v, const std::string& f, Sign s) { return get_number(v, f, s); };

  p.cores = number("cores", Sign::positive, int_field);
  p.boost_clock_ghz = number("boost_clock_ghz", Sign::non_negative, double_field);
  p.vector_bits = number("vector_bits", cpu ? Sign::positive : Sign::non_negative, int_field);
  p.smem_per_core_bytes = number("smem_per_core_bytes", cpu ? Sign::non_negative : Sign::positive, int64_field);
  p.smem_per_block_bytes = number("smem_per_block_bytes", cpu ? Sign::non_negative : Sign::positive, int64_field);
  if (p.smem_per_block_bytes > p.smem_per_core_bytes)
    fail("smem_per_block_bytes.value", "must not exceed smem_per_core_bytes");
  p.registers_per_core = number("registers_per_core", Sign::positive, int64_field);
  p.max_threads_per_core = number("max_threads_per_core", gpu ? Sign::positive : Sign::non_negative, int_field);
  p.mem_bandwidth_gbps = number("mem_bandwidth_gbps", Sign::positive, double_field);
  // The cost models' per-core rates: required in every record, like every other number, so that a record states
  // what it knows; 0 where the chip's number is unknown (the cost model then names the field) or does not apply
  // to this kind of chip, the source saying which.
  p.max_blocks_per_core = number("max_blocks_per_core", Sign::non_negative, int_field);
  // Optional: {"value": {"4": 30, "8": 15}, ...}, clusters resident by cluster size.
  if (optional_member(root, "resident_clusters")) {
    Sourced s = sourced(root, "resident_clusters");
    p.sources["resident_clusters"] = s.source;
    if (!s.value->is_object()) fail("resident_clusters.value", "must be an object of cluster size -> clusters");
    for (const auto& [size, count] : s.value->items()) {
      const std::string at = "resident_clusters.value." + size;
      const int n = std::atoi(size.c_str());
      if (n < 2 || n > 16 || std::to_string(n) != size) fail(at, "the cluster size must be 2 .. 16");
      if (!count.is_number_integer() || count.get<int64_t>() < 1) fail(at, "must be a whole number of clusters, >= 1");
      p.resident_clusters[n] = int(std::min<int64_t>(count.get<int64_t>(), 1 << 20));
    }
  }
  p.l2_bytes_per_core_cycle = number("l2_bytes_per_core_cycle", Sign::non_negative, double_field);
  p.l3_bytes_per_core_cycle = number("l3_bytes_per_core_cycle", Sign::non_negative, double_field);
  p.smem_bytes_per_core_cycle = number("smem_bytes_per_core_cycle", Sign::non_negative, double_field);
  p.fma_pipes = number("fma_pipes", Sign::non_negative, int_field);
  p.fma_latency_cycles = number("fma_latency_cycles", Sign::non_negative, int_field);
  p.load_ports_per_cycle = number("load_ports_per_cycle", Sign::non_negative, int_field);
  // Pipes without a latency (or the reverse) would let the CPU model price the FMA chain with half a record.
  if ((p.fma_pipes > 0) != (p.fma_latency_cycles > 0))
    fail(p.fma_pipes > 0 ? "fma_latency_cycles.value" : "fma_pipes.value",
         "must be given together with fma_pipes and fma_latency_cycles (both positive or both 0)");

  {
    Sourced s = sourced(root, "features");
    p.sources["features"] = s.source;
    if (!s.value->is_array()) fail("features.value", "must be an array of strings");
    for (std::size_t i = 0; i < s.value->size(); ++i)
      p.features.push_back(get_string((*s.value)[i], fmt::format("features.value[{}]", i)));
  }

  parse_caches(root, p);
  parse_matrix_units(root, p);
  parse_peaks(root, p);
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

// "0x19" -> 25. Hexadecimal with its prefix only, as CPUID values are written in the vendors' manuals and in Linux:
// a bare "19" could be read either way.
int get_hex(const json& v, const std::string& field) {
  const std::string text = get_string(v, field);
  if (text.size() < 3 || text.substr(0, 2) != "0x" ||
      text.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos || text.size() > 10)
    fail(field, fmt::format("'{}' must be a hexadecimal number written 0x..", text));
  return int(std::stol(text.substr(2), nullptr, 16));
}

// "0x30-0x4f" or "0x55".
std::pair<int, int> get_model_range(const json& v, const std::string& field) {
  if (!v.is_string()) fail(field, "must be a string: a model (\"0x55\") or a range (\"0x30-0x4f\")");
  const std::string text = v.get<std::string>();
  const std::size_t dash = text.find('-');
  if (dash == std::string::npos) {
    const int m = get_hex(v, field);
    return {m, m};
  }
  const int lo = get_hex(json(text.substr(0, dash)), field), hi = get_hex(json(text.substr(dash + 1)), field);
  if (hi < lo) fail(field, fmt::format("'{}' ends before it starts", text));
  return {lo, hi};
}

UarchRecord parse_uarch_record(const json& root) {
  if (!root.is_object()) fail("(top level)", "must be a JSON object");
  refuse_unknown_keys(root, "", {"name", "display_name", "notes", "match", "rates"});
  UarchRecord r;
  r.name = get_string(member(root, "", "name"), "name");
  r.display_name = get_string(member(root, "", "display_name"), "display_name");
  if (auto* v = optional_member(root, "notes")) r.notes = get_string(*v, "notes");
  if (auto* m = optional_member(root, "match")) {
    require_object(*m, "match");
    refuse_unknown_keys(*m, "match", {"vendor", "family", "models", "source"});
    UarchModels models;
    models.vendor = get_string(member(*m, "match", "vendor"), "match.vendor");
    models.family = get_hex(member(*m, "match", "family"), "match.family");
    const json& list = array_member(*m, "match", "models");
    if (list.empty()) fail("match.models", "must list at least one model");
    for (std::size_t i = 0; i < list.size(); ++i)
      models.models.push_back(get_model_range(list[i], fmt::format("match.models[{}]", i)));
    models.source = get_string(member(*m, "match", "source"), "match.source");
    r.match = std::move(models);
  }
  const json& rates = array_member(root, "", "rates");
  if (rates.empty()) fail("rates", "must list the rates of at least one vector width");
  for (std::size_t i = 0; i < rates.size(); ++i) {
    const std::string at = fmt::format("rates[{}]", i);
    const json& w = rates[i];
    require_object(w, at);
    refuse_unknown_keys(w, at, {"vector_bits", "fma_pipes", "fma_latency_cycles", "load_ports_per_cycle",
                                "l2_bytes_per_core_cycle", "l3_bytes_per_core_cycle"});
    UarchRates u;
    u.vector_bits = get_int32(member(w, at, "vector_bits"), at + ".vector_bits", Sign::positive);
    if (u.vector_bits != 128 && u.vector_bits != 256 && u.vector_bits != 512)
      fail(at + ".vector_bits", "must be 128, 256 or 512");
    if (r.at(u.vector_bits)) fail(at + ".vector_bits", fmt::format("repeats {} bits", u.vector_bits));
    // Every rate of a record is a number the model divides by: none may be 0.
    auto number = [&](const char* key, auto&& get) {
      const std::string path = at + "." + key;
      const json& v = member(w, at, key);
      if (!v.is_object()) fail(path, "must be an object {\"value\": ..., \"source\": \"...\"}");
      refuse_unknown_keys(v, path, {"value", "source"});
      u.sources[key] = get_string(member(v, path, "source"), path + ".source");
      return get(member(v, path, "value"), path + ".value", Sign::positive);
    };
    auto int_field = [](const json& v, const std::string& f, Sign s) { return get_int32(v, f, s); };
    auto double_field = [](const json& v, const std::string& f, Sign s) { return get_number(v, f, s); };
    // The same bounds as a chip record's fields of these names: a detected CPU takes these numbers as its own.
    auto bounded = [&](const char* key, const Bound& b, auto value) {
      if (!b.admits(double(value))) fail(at + "." + key + ".value", b.refusal(fmt::format("{}", value)));
      return value;
    };
    u.fma_pipes = bounded("fma_pipes", bounds::fma_pipes, number("fma_pipes", int_field));
    u.fma_latency_cycles =
        bounded("fma_latency_cycles", bounds::fma_latency_cycles, number("fma_latency_cycles", int_field));
    u.load_ports_per_cycle =
        bounded("load_ports_per_cycle", bounds::load_ports_per_cycle, number("load_ports_per_cycle", int_field));
    u.l2_bytes_per_core_cycle = bounded("l2_bytes_per_core_cycle", bounds::bytes_per_core_cycle,
                                        number("l2_bytes_per_core_cycle", double_field));
    u.l3_bytes_per_core_cycle = bounded("l3_bytes_per_core_cycle", bounds::bytes_per_core_cycle,
                                        number("l3_bytes_per_core_cycle", double_field));
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

// JSON export/import of tuning records (structure checked against schemas/tuning-db-export.schema.json, then each
// record's names and rules) and the Triton config export.
#include "db/exchange.hpp"

#include <optional>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_schema.hpp"
#include "core/parse.hpp"

namespace tileforge::db {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json record_to_json(const Record& r) {
  ordered_json j;
  j["device"] = {{"kind", r.device.kind},       {"name", r.device.name},   {"arch", r.device.arch},
                 {"cores", r.device.cores},     {"clock_mhz", r.device.clock_mhz},
                 {"driver", r.device.driver},   {"toolkit", r.device.toolkit}};
  j["backend"] = r.backend;
  j["family_version"] = r.family_version;
  const Signature& p = r.problem;
  j["problem"] = {{"m", p.m},
                  {"n", p.n},
                  {"k", p.k},
                  {"batch", p.batch},
                  {"input", to_string(p.input)},
                  {"output", to_string(p.output)},
                  {"accum", to_string(p.accum)},
                  {"layout", to_string(p.layout)},
                  {"align", p.align}};
  j["config"] = ordered_json::parse(config_to_json(r.config));
  j["time_ms"] = {{"median", r.time.median_ms}, {"min", r.time.min_ms}, {"max", r.time.max_ms}, {"reps", r.time.reps}};
  // Unknown values are left out, so that a record stored by schema v1 exports as it always did.
  auto put = [&](const char* name, const std::optional<double>& v) {
    if (v) j["time_ms"][name] = *v;
  };
  put("q1", r.time.q1_ms);
  put("q3", r.time.q3_ms);
  put("others_cores", r.time.others_cores);
  put("spare_cores", r.time.spare_cores);
  j["tflops"] = r.tflops;
  j["rel_error"] = r.rel_error;
  j["max_scaled_error"] = r.max_scaled_error;
  j["tool_version"] = r.tool_version;
  j["created_at"] = r.created_at;
  j["source"] = to_string(r.source);
  // Left out when true (the records of every older format are): only a config that sums by float atomics says so.
  if (!r.deterministic) j["deterministic"] = false;
  // Left out when unknown, as the quartiles are.
  if (!r.host.empty() || r.device_index) {
    ordered_json on = ordered_json::object();
    if (!r.host.empty()) on["host"] = r.host;
    if (r.device_index) on["device_index"] = *r.device_index;
    j["measured_on"] = on;
  }
  return j;
}

// A malformed field: where (relative to the record) and why. Thrown while reading one record.
struct Bad {
  std::string field;
  std::string why;
};

// A name the schema has checked to be a string, parsed as the options' names are (dtypes, layouts).
template <class T>
T parsed(const json& obj, const std::string& parent, const char* name,
         Expected<T> (*parse)(std::string_view, std::string_view)) {
  const std::string path = parent + "." + name;
  auto v = parse(obj.at(name).get<std::string>(), path);
  if (!v) throw Bad{path, v.status().message()};
  return *v;
}

std::optional<double> optional_number(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  return it->get<double>();
}

// One record whose structure schemas/tuning-db-export.schema.json has checked: the names, the config and the rules
// within the record are checked here.
Record record_from_json(const json& j) {
  Record r;
  const json& d = j.at("device");
  r.device.kind = d.at("kind").get<std::string>();
  r.device.name = d.at("name").get<std::string>();
  r.device.arch = d.at("arch").get<std::string>();
  r.device.cores = d.at("cores").get<int>();
  r.device.clock_mhz = d.at("clock_mhz").get<int>();
  r.device.driver = d.at("driver").get<std::string>();
  r.device.toolkit = d.at("toolkit").get<std::string>();
  r.backend = j.at("backend").get<std::string>();
  r.family_version = j.at("family_version").get<int64_t>();
  const json& p = j.at("problem");
  r.problem.m = p.at("m").get<int64_t>();
  r.problem.n = p.at("n").get<int64_t>();
  r.problem.k = p.at("k").get<int64_t>();
  r.problem.batch = p.at("batch").get<int64_t>();
  r.problem.input = parsed<DType>(p, "problem", "input", parse_dtype);
  r.problem.output = parsed<DType>(p, "problem", "output", parse_dtype);
  r.problem.accum = parsed<DType>(p, "problem", "accum", parse_dtype);
  r.problem.layout = parsed<Layout>(p, "problem", "layout", parse_layout);
  r.problem.align = p.at("align").get<int>();
  auto config = config_from_json(j.at("config").dump(), "config");
  if (!config) throw Bad{"config", config.status().message()};
  r.config = std::move(config).value();
  const json& t = j.at("time_ms");
  r.time.median_ms = t.at("median").get<double>();
  r.time.min_ms = t.at("min").get<double>();
  r.time.max_ms = t.at("max").get<double>();
  r.time.reps = t.at("reps").get<int64_t>();
  r.time.q1_ms = optional_number(t, "q1");
  r.time.q3_ms = optional_number(t, "q3");
  r.time.others_cores = optional_number(t, "others_cores");
  r.time.spare_cores = optional_number(t, "spare_cores");
  r.tflops = j.at("tflops").get<double>();
  r.rel_error = j.at("rel_error").get<double>();
  r.max_scaled_error = j.at("max_scaled_error").get<double>();
  r.tool_version = j.at("tool_version").get<std::string>();
  r.created_at = j.at("created_at").get<std::string>();
  auto source = parse_source(j.at("source").get<std::string>());
  if (!source) throw Bad{"source", source.status().message()};
  r.source = *source;
  if (auto d = j.find("deterministic"); d != j.end()) r.deterministic = d->get<bool>();
  if (auto on = j.find("measured_on"); on != j.end()) {
    if (auto host = on->find("host"); host != on->end()) r.host = host->get<std::string>();
    if (auto index = on->find("device_index"); index != on->end()) r.device_index = index->get<int64_t>();
  }
  if (auto e = validate_record(r)) throw Bad{e->field, e->why};
  return r;
}

// One line of a Python comment: no line breaks from device names or shapes.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

std::string export_json(const std::vector<Record>& records) {
  ordered_json j;
  j["format"] = kExportFormat;
  j["format_version"] = kExportFormatVersion;
  j["tool_version"] = std::string(version());
  j["exported_at"] = iso_date_now();
  j["records"] = ordered_json::array();
  for (const Record& r : records) j["records"].push_back(record_to_json(r));
  return j.dump(2) + "\n";
}

Expected<std::vector<Record>> parse_export(std::string_view text, std::string_view origin) {
  json j;
  try {
    // json::exception, not only parse_error: a number beyond a double's range ("1E400") is out_of_range.
    j = json::parse(text);
  } catch (const json::exception& e) {
    return invalid_argument(fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
  if (!j.is_object()) return invalid_argument(fmt::format("{}: must be a JSON object with \"records\"", origin));
  auto format = j.find("format");
  if (format == j.end() || !format->is_string() || *format != kExportFormat) {
    return invalid_argument(fmt::format("{}: field format must be \"{}\" (is this a tileforge tuning DB export?)",
                                        origin, kExportFormat));
  }
  auto fv = j.find("format_version");
  if (fv == j.end() || !fv->is_number_integer()) {
    return invalid_argument(fmt::format("{}: field format_version must be an integer", origin));
  }
  if (fv->get<int64_t>() < kOldestExportFormatVersion || fv->get<int64_t>() > kExportFormatVersion) {
    return invalid_argument(fmt::format("{}: format_version {} is not supported (this tileforge reads {} to {}); "
                                        "export it again with this version or import it with a newer one",
                                        origin, fv->get<int64_t>(), kOldestExportFormatVersion,
                                        kExportFormatVersion));
  }
  // The rest of the structure (known top-level fields, each record's fields and types) is the schema's; its paths
  // ("records[3].time_ms.q1") read as the record errors below do.
  if (auto bad = schema_violation(j, "tuning-db-export.schema.json")) {
    if (bad->field.rfind("records[", 0) == 0)
      return invalid_argument(fmt::format("{}: {}: {}", origin, bad->field, bad->rule));
    return invalid_argument(fmt::format("{}: field {} {}", origin, bad->field, bad->rule));
  }
  const json* recs = &j.at("records");
  std::vector<Record> out;
  out.reserve(recs->size());
  for (std::size_t i = 0; i < recs->size(); ++i) {
    try {
      out.push_back(record_from_json((*recs)[i]));
    } catch (const Bad& b) {
      return invalid_argument(
          fmt::format("{}: records[{}]{}{}: {}", origin, i, b.field.empty() ? "" : ".", b.field, b.why));
    }
  }
  return out;
}

Expected<ImportSummary> import_json(Store& store, std::string_view text, std::string_view origin, bool force) {
  auto records = parse_export(text, origin);
  if (!records) return records.status();
  for (Record& r : *records) {
    r.id = 0;
    r.source = Source::imported;
  }
  auto outcomes = store.upsert_all(*records, force);
  if (!outcomes) return outcomes.status();
  ImportSummary s;
  for (Upsert u : *outcomes) {
    if (u == Upsert::inserted) ++s.inserted;
    if (u == Upsert::replaced) ++s.replaced;
    if (u == Upsert::kept) ++s.kept;
  }
  return s;
}

std::string export_triton(const std::vector<Record>& records) {
  std::string out = fmt::format(
      "# Triton configs from a tileforge tuning DB (tileforge {}, {} records).\n"
      "# One entry per record whose kernel family maps to Triton's GEMM parameters; the comment above each names\n"
      "# the shape it was tuned for and the speed measured there. `tuned` maps each shape (M, N, K) to its entry,\n"
      "# and `autotune()` is Triton's autotuner over these configs that takes tileforge's entry for a tuned shape\n"
      "# without timing the others:\n"
      "#\n"
      "#     @module.autotune()\n"
      "#     @triton.jit\n"
      "#     def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, ..., BLOCK_SIZE_M: tl.constexpr, ...): ...\n"
      "import triton\n\nconfigs = [\n",
      version(), records.size());
  std::map<std::string, std::size_t> emitted;  // entry -> its index in configs
  // (M, N, K) -> (index, what it was tuned as): the first record of a shape wins; later ones are noted.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<std::size_t, std::string>> tuned;
  std::string shadowed;
  for (const Record& r : records) {
    const std::string where = one_line(fmt::format("{} on {}", r.problem.key(), r.device.describe()));
    const std::string& fam = r.family();
    const bool triton_family = fam == "triton";
    if (!triton_family && fam.rfind("sm80", 0) != 0 && fam.rfind("sm90", 0) != 0) {
      out += fmt::format("    # skipped: {}: family {} has no Triton equivalent\n", where, one_line(fam));
      continue;
    }
    std::string missing;
    const std::vector<const char*> needed =
        triton_family ? std::vector<const char*>{"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "STAGES", "WARPS"}
                      : std::vector<const char*>{"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "STAGES", "WARPS_M",
                                                 "WARPS_N"};
    for (const char* name : needed)
      if (!r.config.get(name)) missing += missing.empty() ? name : fmt::format(", {}", name);
    if (!missing.empty()) {
      out += fmt::format("    # skipped: {}: {} config lacks {}\n", where, one_line(fam), missing);
      continue;
    }
    // Triton's GEMM kernel has no split-K: a record that needs it would not be reproduced.
    if (auto split = r.config.get("SPLIT_K"); split && *split != 1) {
      out += fmt::format("    # skipped: {}: uses SPLIT_K={}, which the Triton GEMM has no parameter for\n", where,
                         *split);
      continue;
    }
    const Config& c = r.config;
    const int64_t warps = triton_family ? c.at("WARPS") : c.at("WARPS_M") * c.at("WARPS_N");
    const std::string entry = fmt::format(
        "triton.Config({{'BLOCK_SIZE_M': {}, 'BLOCK_SIZE_N': {}, 'BLOCK_SIZE_K': {}, 'GROUP_SIZE_M': {}}}, "
        "num_warps={}, num_stages={})",
        c.at("BLOCK_M"), c.at("BLOCK_N"), c.at("BLOCK_K"), c.at("GROUP_M"), warps, c.at("STAGES"));
    const std::string speed = fmt::format("{} v{}, {:.1f} TFLOP/s measured", one_line(fam), r.family_version, r.tflops);
    // A config tuned best for several shapes is listed once: Triton's autotuner would time duplicates again.
    auto [it, fresh] = emitted.emplace(entry, emitted.size());
    if (!fresh) {
      out += fmt::format("    # {}: {}; same config as entry {} above\n", where, speed, it->second);
    } else {
      out += fmt::format("    # {}: {}\n    {},\n", where, speed, entry);
    }
    const auto key = std::make_tuple(r.problem.m, r.problem.n, r.problem.k);
    if (!tuned.emplace(key, std::make_pair(it->second, r.problem.key())).second) {
      shadowed += fmt::format("#   {} (entry {}) is not in `tuned`: {} took its (M, N, K)\n", r.problem.key(),
                              it->second, tuned.at(key).second);
    }
  }
  out += "]\n\n# (M, N, K) -> index in configs: the entry tileforge measured best for that shape.\ntuned = {\n";
  for (const auto& [key, entry] : tuned) {
    out += fmt::format("    ({}, {}, {}): {},  # {}\n", std::get<0>(key), std::get<1>(key), std::get<2>(key),
                       entry.first, one_line(entry.second));
  }
  out += "}\n";
  if (!shadowed.empty()) out += "# Records of a shape already keyed (another dtype or layout):\n" + shadowed;
  out +=
      "\n\ndef key_config(configs, named_args, **kwargs):\n"
      "    \"\"\"Triton's early_config_prune: the tuned entry for the call's (M, N, K), else every config.\"\"\"\n"
      "    i = tuned.get((named_args[\"M\"], named_args[\"N\"], named_args[\"K\"]))\n"
      "    return [configs[i]] if i is not None and i < len(configs) else configs\n"
      "\n\n"
      "def autotune(**kwargs):\n"
      "    \"\"\"triton.autotune over `configs`, keyed by M, N and K, that runs a tuned shape's entry untimed.\"\"\"\n"
      "    return triton.autotune(configs=configs, key=[\"M\", \"N\", \"K\"],\n"
      "                           prune_configs_by={\"early_config_prune\": key_config}, **kwargs)\n";
  return out;
}

}  // namespace tileforge::db

// Writes bench results as schema JSON, a human table and CSV, and records the environment of the run.
#include "bench/report.hpp"

#include "core/clock.hpp"
#include "core/columns.hpp"
#include "core/envelope.hpp"

#include "dispatch/dispatch.hpp"

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "backends/native/native_backends.hpp"
#include "hw/hw.hpp"

namespace tileforge::bench {
namespace {

using ojson = nlohmann::ordered_json;

// JSON has no NaN or Inf: a non-finite error (a kernel writing NaN) is written as a huge finite number so the
// document stays valid and the row still fails every threshold; the row's warning says what happened.
double finite(double v) {
  if (std::isnan(v) || std::isinf(v)) return 1.0e300;
  return v;
}

ojson config_json(const Config& c) {
  ojson j;
  j["family"] = c.family;
  for (const auto& [name, value] : c.params) j[name] = value;
  return j;
}

// A rate in GB/s as a fraction of the device bandwidth measured in the same run; empty without either (CPU runs
// do not measure one).
std::optional<double> bandwidth_share(std::optional<double> gbps, const Environment& e) {
  if (!gbps || !e.bandwidth || e.bandwidth->gbps <= 0) return std::nullopt;
  return *gbps / e.bandwidth->gbps;
}

ojson optional_number(std::optional<double> v) { return v ? ojson(finite(*v)) : ojson(nullptr); }

// The native call or a peer of case `r`.
// Other processes' use of the machine while the reps ran, in cores; null where it could not be read.
ojson others_cores_json(const measure::Timing& t) {
  return t.others_cores >= 0 ? ojson(finite(t.others_cores)) : ojson(nullptr);
}

ojson measured_json(const Measured& m, const CaseResult& r, const Environment& e) {
  ojson j;
  j["backend"] = m.backend;
  j["median_ms"] = finite(m.timing.median_ms);
  j["min_ms"] = finite(m.timing.min_ms);
  j["max_ms"] = finite(m.timing.max_ms);
  j["q1_ms"] = finite(m.timing.q1_ms);
  j["q3_ms"] = finite(m.timing.q3_ms);
  j["reps"] = m.timing.reps;
  j["spread_flag"] = m.timing.spread();
  j["others_cores"] = others_cores_json(m.timing);
  j["busy_flag"] = m.timing.busy();
  j["tflops"] = finite(m.tflops);
  j["gbps"] = optional_number(r.gbps(m));
  j["bandwidth_fraction"] = optional_number(bandwidth_share(r.gbps(m), e));
  j["rel_error"] = finite(m.error.rel_error);
  j["max_scaled_error"] = finite(m.error.max_scaled_error);
  j["kernel"] = m.implementation.empty() ? m.config.describe() : m.implementation;
  return j;
}

ojson row_json(const CaseResult& r, const Environment& e) {
  const Problem& p = r.plan.problem;
  const Measured* m = r.row();
  static const Measured nothing{};
  const Measured& own = m ? *m : nothing;
  ojson j;
  j["shape"] = {p.m, p.n, p.k};
  j["batch"] = p.batch;
  j["dtype"] = to_string(p.precision.input);
  j["out_dtype"] = to_string(p.precision.output);
  j["accum"] = to_string(p.precision.accum);
  j["layout"] = to_string(p.layout);
  j["ld"] = {p.lda, p.ldb, p.ldc};
  j["backend"] = m ? own.backend : std::string("none");
  j["config"] = config_json(m ? own.config : r.plan.config);
  j["config_source"] = r.plan.config_source;
  j["config_reason"] = r.plan.config_reason;  // beyond the schema's fields: why dispatch chose this config
  j["fallback"] = r.fallback;
  j["median_ms"] = finite(own.timing.median_ms);
  j["min_ms"] = finite(own.timing.min_ms);
  j["max_ms"] = finite(own.timing.max_ms);
  j["q1_ms"] = finite(own.timing.q1_ms);
  j["q3_ms"] = finite(own.timing.q3_ms);
  j["reps"] = own.timing.reps;
  j["spread_flag"] = own.timing.spread();
  j["others_cores"] = others_cores_json(own.timing);
  j["busy_flag"] = own.timing.busy();
  j["tflops"] = finite(own.tflops);
  j["peak_fraction"] = finite(r.peak_fraction());
  j["gbps"] = optional_number(r.gbps());
  // Beyond the schema's fields: gbps over the device bandwidth measured in this run (environment.device_bandwidth).
  j["bandwidth_fraction"] = optional_number(bandwidth_share(r.gbps(), e));
  if (r.native) {
    j["native"] = measured_json(*r.native, r, e);
  } else {
    j["native"] = {{"backend", nullptr}, {"missing", r.native_missing}};
  }
  j["peers"] = ojson::array();
  for (const Measured& peer : r.peers) j["peers"].push_back(measured_json(peer, r, e));
  if (auto ratio = r.ratio()) j["ratio"] = finite(*ratio);
  else j["ratio"] = nullptr;
  j["rel_error"] = finite(own.error.rel_error);
  j["max_scaled_error"] = finite(own.error.max_scaled_error);
  // Beyond the schema's required fields: how the error was judged, and why a row is not plain "ours".
  j["nan_count"] = own.error.nan_count;
  j["error_sampled"] = !own.error.full;
  if (r.threshold) j["threshold"] = *r.threshold;
  else j["threshold"] = nullptr;
  j["verified"] = r.ours.has_value() && r.check.ok();
  // Beyond the schema's required fields: the cost model's binding limit for our config and how much of it was reached.
  if (r.verdict) {
    j["verdict"] = {{"bound", r.verdict->bound},
                    {"limit_ms", finite(r.verdict->limit_ms)},
                    {"limit_fraction", finite(r.verdict->fraction)},
                    {"below_70", r.verdict->below}};
  } else {
    j["verdict"] = nullptr;
  }
  if (!r.ours_failure.empty()) j["ours_failure"] = r.ours_failure;
  j["warnings"] = r.warnings;
  return j;
}

std::string shape_text(const Problem& p) {
  std::string s = fmt::format("{}x{}x{}", p.m, p.n, p.k);
  if (p.batch > 1) s += fmt::format("*{}", p.batch);
  return s;
}

std::string dtype_text(const Problem& p) {
  std::string s(to_string(p.precision.input));
  if (p.precision.output != p.precision.input) s += fmt::format("->{}", to_string(p.precision.output));
  if (p.precision.accum != DType::f32) s += fmt::format(" acc {}", to_string(p.precision.accum));
  return s;
}

bool tight(const Problem& p) { return p.lda == p.min_lda() && p.ldb == p.min_ldb() && p.ldc == p.min_ldc(); }

std::string csv_field(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string verdict_text(const std::optional<Verdict>& v) {
  if (!v) return "-";
  return fmt::format("{} {:.0f}%{}", v->bound, 100 * v->fraction, v->below ? " !" : "");
}

Environment collect_environment(const Device& device, std::string_view cache_state, uint64_t seed) {
  Environment env;
  env.tool_version = std::string(version());
  env.date = iso_date_now();
  env.device = device.name;
  env.device_kind = device.kind;
  env.profile = device.profile.name;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  const std::string& brand = hw::cpu_isa().brand;
  env.host = brand.empty() ? std::string(host) : fmt::format("{} ({})", host, brand);
  env.compiler = dispatch::compiler_id();
  env.cache_state = std::string(cache_state);
  env.threads = effective_threads(device);
  env.seed = seed;
  for (Backend* b : all_backends()) {
    if (b->device_kind() != device.kind) continue;
    Support ok = b->available();
    env.backends.push_back(fmt::format("{} ({}{})", b->name(), b->native() ? "vendor" : "ours",
                                       ok ? "" : ", unavailable: " + ok.reason));
  }
  if (device.kind == "cpu") {
    auto add = [&](const VendorLibraryInfo& info) {
      env.libraries.push_back({info.name, info.version, info.threads, info.library, info.why_not, info.loaded});
    };
    add(openblas_info());
#ifdef TILEFORGE_HAVE_ONEDNN
    add(onednn_info());
#endif
  }
  return env;
}

namespace {


}  // namespace

ojson environment_json(const Environment& e) {
  ojson env;
  env["tool_version"] = e.tool_version;
  env["date"] = e.date;
  env["device"] = e.device;
  env["profile"] = e.profile;
  env["host"] = e.host;
  env["compiler"] = e.compiler;
  env["driver"] = e.driver ? ojson(*e.driver) : ojson(nullptr);
  env["toolkit"] = e.toolkit ? ojson(*e.toolkit) : ojson(nullptr);
  env["clocks"] = nullptr;  // no readable clocks on the CPU (virtual machines expose none)
  env["cache_state"] = e.cache_state;
  env["threads"] = e.threads;
  env["seed"] = e.seed;
  env["backends"] = e.backends;
  env["libraries"] = ojson::object();
  for (const auto& lib : e.libraries) {
    ojson l;
    l["loaded"] = lib.loaded;
    if (lib.loaded) {
      l["version"] = lib.version;
      l["file"] = lib.file;
      l["threads"] = lib.threads;
    } else {
      l["why_not"] = lib.why_not;
    }
    env["libraries"][lib.name] = l;
  }
  // Beyond the schema's fields: the device's copy bandwidth the rows' bandwidth_fraction divides by (GPU runs).
  if (e.bandwidth) {
    ojson bw;
    bw["gbps"] = finite(e.bandwidth->gbps);
    bw["method"] = e.bandwidth->method;
    bw["bytes"] = e.bandwidth->bytes;
    bw["reps"] = e.bandwidth->timing.reps;
    bw["median_ms"] = finite(e.bandwidth->timing.median_ms);
    bw["min_ms"] = finite(e.bandwidth->timing.min_ms);
    bw["max_ms"] = finite(e.bandwidth->timing.max_ms);
    env["device_bandwidth"] = bw;
  } else {
    env["device_bandwidth"] = nullptr;
  }
  if (!e.bandwidth_missing.empty()) env["device_bandwidth_missing"] = e.bandwidth_missing;
  return env;
}

std::string to_json(const Report& report) {
  const Environment& e = report.environment;
  // The envelope every verb's JSON shares (schemas/envelope.schema.json); bench.schema.json allows the extra keys.
  ojson doc = envelope<ojson>("bench");
  doc["environment"] = environment_json(e);
  doc["rows"] = ojson::array();
  for (const CaseResult& r : report.rows) doc["rows"].push_back(row_json(r, e));
  return doc.dump(1) + "\n";
}

std::string partial_header_line(const Environment& environment) {
  ojson line;
  line["environment"] = environment_json(environment);
  return line.dump() + "\n";
}

std::string partial_row_line(const CaseResult& row, const Environment& environment) {
  return row_json(row, environment).dump() + "\n";
}

std::string to_table(const Report& report, bool markdown) {
  const Environment& e = report.environment;
  const bool cpu = e.device_kind == "cpu";
  const double scale = cpu ? 1e3 : 1.0;  // TFLOP/s -> GFLOP/s on the CPU, where numbers are in the hundreds
  const char* unit = cpu ? "GFLOP/s" : "TFLOP/s";
  auto rate = [&](const Measured& m) {
    return fmt::format(fmt::runtime(cpu ? "{:.1f}{}" : "{:.2f}{}"), m.tflops * scale, m.timing.spread() ? "~" : "");
  };

  // GPU tables add our GB/s and its share of the device bandwidth measured in this run beside the rate: a skinny
  // shape is bound by memory, and judged by bytes rather than FLOPs.
  const bool bytes = !cpu;
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"shape", "layout", "dtype", fmt::format("ours {}", unit), fmt::format("native {}", unit), "ratio",
                   "peers", "error", "verdict", "config", "native kernel", "source", "flags"});
  if (bytes) cells.back().insert(cells.back().begin() + 4, {"ours GB/s", "of bw"});
  bool any_spread = false, any_busy = false;
  for (const CaseResult& r : report.rows) {
    const Problem& p = r.plan.problem;
    const Measured* m = r.row();
    std::vector<std::string> flags;
    std::string ours = "-";
    if (m && m->timing.reps > 0) ours = rate(*m);
    if (r.fallback) {
      ours = fmt::format("({} {})", m->backend, ours);
      flags.push_back("fallback");
    } else if (!r.ours) {
      flags.push_back("ours-failed");
    }
    if (m && m->timing.spread()) flags.push_back("spread");
    if (m && m->timing.busy()) {
      flags.push_back(fmt::format("busy {:.1f}", m->timing.others_cores));
      any_busy = true;
    }
    if (r.ours && !r.check) flags.push_back("FAIL");
    std::string native = r.native ? fmt::format("{} {}", r.native->backend, r.native->timing.reps ? rate(*r.native) : "ok")
                                  : std::string("none");
    if (!r.native) flags.push_back("no-native");
    std::vector<std::string> peers;
    for (const Measured& peer : r.peers) peers.push_back(fmt::format("{} {}", peer.backend, peer.timing.reps ? rate(peer) : "ok"));
    any_spread = any_spread || (m && m->timing.spread()) || (r.native && r.native->timing.spread());
    for (const Measured& peer : r.peers) any_spread = any_spread || peer.timing.spread();
    std::string layout(to_string(p.layout));
    if (!tight(p)) layout += fmt::format(" ld {}/{}/{}", p.lda, p.ldb, p.ldc);
    const auto ratio = r.ratio();
    cells.push_back({shape_text(p), layout, dtype_text(p), ours, native, ratio ? fmt::format("{:.2f}", *ratio) : "-",
                     peers.empty() ? "-" : fmt::format("{}", fmt::join(peers, ", ")),
                     m ? fmt::format("{:.1e}", m->error.rel_error) : "-", verdict_text(r.verdict),
                     m ? m->config.describe() : r.plan.config.describe(),
                     r.native && !r.native->implementation.empty() ? r.native->implementation : "-",
                     r.plan.config_source,
                     fmt::format("{}", fmt::join(flags, " "))});
    if (bytes) {
      const auto gbps = r.gbps();
      const auto share = bandwidth_share(gbps, e);
      cells.back().insert(cells.back().begin() + 4, {gbps ? fmt::format("{:.1f}", *gbps) : "-",
                                                     share ? fmt::format("{:.1f}%", 100 * *share) : "-"});
    }
  }
  std::vector<bool> right = {false, false, false, true, true, true, false, true, false, false, false, false, false};
  if (bytes) right.insert(right.begin() + 4, {true, true});
  std::string out = fmt::format("tileforge {} bench | device {} | host {} | profile {} | {} threads | caches {} | seed {} | {}\n",
                                e.tool_version, e.device, e.host, e.profile, e.threads, e.cache_state, e.seed, e.date);
  out += markdown ? "\n" + columns::format_markdown(cells, right) + "\n" : columns::format_columns(cells, right);
  out += "ratio = native time / our time (above 1: tileforge is faster); error = ||C - Cref||_F / ||Cref||_F "
         "against float64";
  if (any_spread) out += "; ~ = spread: interquartile range over 0.30 of the median";
  if (any_busy) {
    out += fmt::format("; busy N = other processes used N cores while it was timed (over {:.1f}): even reps may all "
                       "be slow",
                       measure::kHostBusyCores);
  }
  out += "; verdict = the cost model's binding limit for our config and the share of it reached (! below 70%)";
  out += "\n";
  if (bytes) {
    out += "GB/s = A and B read and C written once (read too when beta != 0) / median time; of bw = GB/s / the device "
           "bandwidth\n";
    if (e.bandwidth) {
      out += fmt::format("device bandwidth: {:.1f} GB/s measured in this run ({}, {} reps, median {:.4f} ms)\n",
                         e.bandwidth->gbps, e.bandwidth->method, e.bandwidth->timing.reps, e.bandwidth->timing.median_ms);
    } else {
      out += fmt::format("device bandwidth: not measured ({})\n",
                         e.bandwidth_missing.empty() ? "no measurement" : e.bandwidth_missing);
    }
  }
  // Why rows have no native (once per distinct reason), so "none" in the table is never unexplained.
  std::vector<std::string> reasons;
  for (const CaseResult& r : report.rows) {
    if (r.native || r.native_missing.empty()) continue;
    if (std::find(reasons.begin(), reasons.end(), r.native_missing) == reasons.end()) reasons.push_back(r.native_missing);
  }
  for (const auto& why : reasons) out += fmt::format("no native: {}\n", why);
  return out;
}

std::string to_csv(const Report& report) {
  std::string out =
      "m,n,k,batch,dtype,out_dtype,accum,layout,lda,ldb,ldc,backend,config,config_source,fallback,median_ms,min_ms,"
      "max_ms,reps,spread_flag,tflops,peak_fraction,native_backend,native_median_ms,native_tflops,native_rel_error,"
      "ratio,peers,rel_error,max_scaled_error,verified,gbps,bandwidth_fraction\n";
  for (const CaseResult& r : report.rows) {
    const Problem& p = r.plan.problem;
    const Measured* m = r.row();
    static const Measured nothing{};
    const Measured& own = m ? *m : nothing;
    std::vector<std::string> peers;
    for (const Measured& peer : r.peers) peers.push_back(fmt::format("{}:{:.6g}ms:{:.6g}", peer.backend, peer.timing.median_ms, peer.tflops));
    const auto ratio = r.ratio();
    const auto gbps = r.gbps();
    const auto share = bandwidth_share(gbps, report.environment);
    std::vector<std::string> f = {
        fmt::format("{}", p.m), fmt::format("{}", p.n), fmt::format("{}", p.k), fmt::format("{}", p.batch),
        std::string(to_string(p.precision.input)), std::string(to_string(p.precision.output)),
        std::string(to_string(p.precision.accum)), std::string(to_string(p.layout)), fmt::format("{}", p.lda),
        fmt::format("{}", p.ldb), fmt::format("{}", p.ldc), m ? own.backend : "none",
        (m ? own.config : r.plan.config).describe(), r.plan.config_source, r.fallback ? "true" : "false",
        fmt::format("{:.6g}", own.timing.median_ms), fmt::format("{:.6g}", own.timing.min_ms),
        fmt::format("{:.6g}", own.timing.max_ms), fmt::format("{}", own.timing.reps),
        own.timing.spread() ? "true" : "false", fmt::format("{:.6g}", own.tflops),
        fmt::format("{:.6g}", r.peak_fraction()), r.native ? r.native->backend : "",
        r.native ? fmt::format("{:.6g}", r.native->timing.median_ms) : "",
        r.native ? fmt::format("{:.6g}", r.native->tflops) : "",
        r.native ? fmt::format("{:.3g}", r.native->error.rel_error) : "", ratio ? fmt::format("{:.4f}", *ratio) : "",
        fmt::format("{}", fmt::join(peers, ";")), fmt::format("{:.3g}", own.error.rel_error),
        fmt::format("{:.3g}", own.error.max_scaled_error), (r.ours && r.check.ok()) ? "true" : "false",
        gbps ? fmt::format("{:.6g}", *gbps) : "", share ? fmt::format("{:.4f}", *share) : ""};
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (i) out += ',';
      out += csv_field(f[i]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace tileforge::bench

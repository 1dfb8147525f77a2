// `tileforge verify`: one shape in every layout (or the ones asked for), ours and native against float64.
#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/envelope.hpp"
#include "bench/report.hpp"
#include "options.hpp"

namespace tileforge::cli {
namespace {

struct VerifyArgs {
  ProblemArgs problem;
  DeviceArgs device;
  OutputArgs output;
  RunArgs run;
};

const std::vector<std::string> kFormats = {"table", "json"};

double finite(double v) { return std::isfinite(v) ? v : 1.0e300; }

nlohmann::ordered_json error_json(const bench::Measured& m) {
  return {{"backend", m.backend},
          {"config", m.config.describe()},
          {"rel_error", finite(m.error.rel_error)},
          {"max_scaled_error", finite(m.error.max_scaled_error)},
          {"nan_count", m.error.nan_count},
          {"checked", m.error.checked},
          {"sampled", !m.error.full}};
}

std::string to_json(const bench::Environment& e, const std::vector<bench::CaseResult>& results) {
  // The envelope every verb's JSON shares (schemas/envelope.schema.json), with bench's environment object; one row
  // per case.
  auto doc = envelope<nlohmann::ordered_json>("verify");
  doc["environment"] = bench::environment_json(e);
  doc["rows"] = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    const Problem& p = r.plan.problem;
    nlohmann::ordered_json c;
    c["shape"] = {p.m, p.n, p.k};
    c["batch"] = p.batch;
    c["dtype"] = to_string(p.precision.input);
    c["out_dtype"] = to_string(p.precision.output);
    c["accum"] = to_string(p.precision.accum);
    c["layout"] = to_string(p.layout);
    c["ld"] = {p.lda, p.ldb, p.ldc};
    c["alpha"] = p.alpha;
    c["beta"] = p.beta;
    c["config_source"] = r.plan.config_source;
    c["config_reason"] = r.plan.config_reason;
    if (r.ours) c["ours"] = error_json(*r.ours);
    else c["ours"] = {{"backend", nullptr}, {"failure", r.ours_failure}};
    if (r.native) c["native"] = error_json(*r.native);
    else c["native"] = {{"backend", nullptr}, {"missing", r.native_missing}};
    c["peers"] = nlohmann::ordered_json::array();
    for (const auto& peer : r.peers) c["peers"].push_back(error_json(peer));
    if (r.threshold) c["threshold"] = *r.threshold;
    else c["threshold"] = nullptr;
    c["pass"] = r.ours.has_value() && r.check.ok();
    c["message"] = r.ours ? (r.check.ok() ? std::string("ok") : r.check.message()) : r.ours_failure;
    doc["rows"].push_back(c);
  }
  return doc.dump(1) + "\n";
}

std::string to_table(const bench::Environment& e, const std::vector<bench::CaseResult>& results) {
  std::string out;
  if (!results.empty()) {
    const Problem& p = results.front().plan.problem;
    out += fmt::format("tileforge {} verify {}x{}x{}{} {}->{} acc {} alpha {} beta {} | device {} | profile {} | seed {}\n",
                       e.tool_version, p.m, p.n, p.k, p.batch > 1 ? fmt::format(" batch {}", p.batch) : "",
                       to_string(p.precision.input), to_string(p.precision.output), to_string(p.precision.accum),
                       p.alpha, p.beta, e.device, e.profile, e.seed);
  }
  out += fmt::format("{:<20} {:>15} {:>16}  {:<10} {:>16} {:>10}  {}\n", "layout/ld", "ours rel_error", "ours max_scaled",
                     "native", "native rel_error", "threshold", "result");
  for (const auto& r : results) {
    const bool pass = r.ours.has_value() && r.check.ok();
    std::string result = pass ? "pass" : (r.ours ? "FAIL: " + r.check.message() : "FAIL: " + r.ours_failure);
    const Problem& q = r.plan.problem;
    out += fmt::format("{:<20} {:>15} {:>16}  {:<10} {:>16} {:>10}  {}\n",
                       fmt::format("{} {}/{}/{}", to_string(q.layout), q.lda, q.ldb, q.ldc),
                       r.ours ? fmt::format("{:.2e}", r.ours->error.rel_error) : "-",
                       r.ours ? fmt::format("{:.2e}", r.ours->error.max_scaled_error) : "-",
                       r.native ? r.native->backend : "none",
                       r.native ? fmt::format("{:.2e}", r.native->error.rel_error) : "-",
                       r.threshold ? fmt::format("{:.2e}", *r.threshold) : "-", result);
  }
  for (const auto& r : results) {
    if (!r.native && !r.native_missing.empty()) out += fmt::format("no native ({}): {}\n", to_string(r.plan.problem.layout), r.native_missing);
  }
  return out;
}

int run_verify(const VerifyArgs& a) {
  constexpr std::string_view verb = "verify";
  if (a.problem.shapes.size() != 1) {
    return fail(verb, invalid_argument(fmt::format("--shape given {} times (allowed: exactly one MxNxK)",
                                                   a.problem.shapes.size())));
  }
  auto settings = settings_from(a.run);
  if (!settings) return fail(verb, settings.status());
  settings->measure = false;
  auto device = open_device_from(a.device);
  if (!device) return fail(verb, device.status());
  ProblemArgs problem = a.problem;
  if (problem.layout.empty()) problem.layout = "all";
  auto problems = problems_from(problem, *device);
  if (!problems) return fail(verb, problems.status());
  auto planned = bench::plan_cases(*device, *problems, *settings);
  if (!planned) return fail(verb, planned.status());
  std::vector<bench::CasePlan> plans = std::move(*planned);
  std::optional<OutputFile> out;
  if (Status s = open_output(a.output.out, out); !s) return fail(verb, s);

  precompile_on_gpu(*device, plans, a.output);
  // verify runs each backend once and times nothing; the device's timer still owns the operands' memory.
  auto timer = measure::make_timer(*device);
  if (!timer) return fail(verb, timer.status());
  const bench::Environment env = bench::collect_environment(*device, (*timer)->cache_state(), settings->seed);
  std::vector<bench::CaseResult> results;
  bool all_pass = true;
  for (const auto& plan : plans) {
    if (show_progress(a.output)) {
      std::fprintf(stderr, "verifying %s ...\n", plan.problem.describe().c_str());
    }
    bench::CaseResult r = bench::run_case(*device, plan, *settings, **timer);
    for (const auto& w : r.warnings) std::fprintf(stderr, "tileforge verify: warning: %s\n", w.c_str());
    if (!r.refused.empty()) std::fprintf(stderr, "tileforge verify: error: %s\n", r.refused.c_str());
    all_pass = all_pass && r.ours.has_value() && r.check.ok();
    results.push_back(std::move(r));
    if (stop_for_lost_device(verb, **timer, plans.size() - results.size())) {
      all_pass = false;
      break;
    }
  }
  const std::string table = to_table(env, results);
  int code = emit(verb, out, a.output.format == "json" ? to_json(env, results) : table);
  if (code != kExitOk) return code;
  if (out && !a.output.quiet) write_stdout(table);
  return all_pass ? kExitOk : kExitFailure;
}

}  // namespace

Command add_verify_command(CLI::App& parent) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* app = parent.add_subcommand(
      "verify", "Check one shape in every layout against a float64 reference, for ours and the vendor library; "
                "exits 1 when ours exceeds its error threshold");
  add_problem_options(*app, args->problem, ProblemFlags::verify);
  add_device_options(*app, args->device);
  add_run_options(*app, args->run, false, true);
  add_output_options(*app, args->output, kFormats);
  return {app, [args] { return run_verify(*args); }};
}

}  // namespace tileforge::cli

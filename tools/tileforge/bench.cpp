// `tileforge bench`: ours against the native library and peers on a suite or on given shapes.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "bench/report.hpp"
#include "core/output_path.hpp"
#include "options.hpp"

namespace tileforge::cli {
namespace {

struct BenchArgs {
  ProblemArgs problem;
  DeviceArgs device;
  OutputArgs output;
  RunArgs run;
  bool config_peers = false;
};

const std::vector<std::string> kFormats = {"table", "json", "csv", "markdown"};

// FILE.partial beside a regular --out FILE: each finished row appended as a JSON line, so that an interrupted run
// keeps what it measured; removed once FILE is written whole. None for stdout, devices and FIFOs.
class PartialRows {
 public:
  PartialRows(const std::optional<OutputFile>& out, const bench::Environment& environment) {
    if (!out) return;
    auto where = output_path(out->path(), "--out");
    if (!where || where->kind != OutputKind::replace) return;
    path_ = where->target + ".partial";
    auto partial = output_path(path_, "--out's .partial file");
    if (!partial || partial->kind != OutputKind::replace) {
      path_.clear();
      return;
    }
    file_.open(path_, std::ios::trunc);
    if (!file_) {
      std::fprintf(stderr, "tileforge bench: warning: %s cannot be written; rows are kept only in memory\n",
                   path_.c_str());
      path_.clear();
      return;
    }
    file_ << bench::partial_header_line(environment) << std::flush;
  }
  void add(const bench::CaseResult& row, const bench::Environment& environment) {
    if (!path_.empty()) file_ << bench::partial_row_line(row, environment) << std::flush;
  }
  // The whole report is written: the partial file has served its purpose.
  void finish() {
    if (path_.empty()) return;
    file_.close();
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }

 private:
  std::string path_;
  std::ofstream file_;
};

int run_bench(const BenchArgs& a) {
  constexpr std::string_view verb = "bench";
  // Everything the user typed is checked before anything runs or any file is created.
  auto settings = settings_from(a.run);
  if (!settings) return fail(verb, settings.status());
  settings->config_peers = a.config_peers;
  auto device = open_device_from(a.device);
  if (!device) return fail(verb, device.status());
  auto problems = problems_from(a.problem, *device);
  if (!problems) return fail(verb, problems.status());
  auto planned = bench::plan_cases(*device, *problems, *settings);
  if (!planned) return fail(verb, planned.status());
  std::vector<bench::CasePlan> plans = std::move(*planned);
  auto timer = measure::make_timer(*device);
  if (!timer) return fail(verb, timer.status());
  std::optional<OutputFile> out;
  if (Status s = open_output(a.output.out, out); !s) return fail(verb, s);

  precompile_on_gpu(*device, plans, a.output);

  bench::Report report;
  report.environment = bench::collect_environment(*device, (*timer)->cache_state(), settings->seed);
  const bool progress = show_progress(a.output);
  PartialRows partial(out, report.environment);
  bool failed = false;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Problem& p = plans[i].problem;
    if (progress) {
      std::fprintf(stderr, "[%zu/%zu] %lldx%lldx%lld %s %s ...\n", i + 1, plans.size(), (long long)p.m,
                   (long long)p.n, (long long)p.k, std::string(to_string(p.layout)).c_str(),
                   std::string(to_string(p.precision.input)).c_str());
    }
    bench::CaseResult r = bench::run_case(*device, plans[i], *settings, **timer);
    for (const auto& w : r.warnings) std::fprintf(stderr, "tileforge bench: warning: %s\n", w.c_str());
    if (!r.refused.empty()) std::fprintf(stderr, "tileforge bench: error: %s\n", r.refused.c_str());
    // A wrong result, or a case where neither ours nor a vendor call ran, fails the run (after reporting it).
    if ((r.ours && !r.check) || !r.row()) failed = true;
    partial.add(r, report.environment);
    report.rows.push_back(std::move(r));
    if (stop_for_lost_device(verb, **timer, plans.size() - i - 1)) {
      failed = true;
      break;
    }
  }
  // The device's memory bandwidth, once per GPU run, under the same timer and contract, so that each row's GB/s is
  // judged against what this device copies now (issue 13). After the cases: a profiler counting the run's first
  // kernels still sees the GEMMs first. Not measured on a CPU.
  if (device->kind == "cuda" && (*timer)->device_lost().empty()) {
    if (progress) std::fprintf(stderr, "device bandwidth (a copy of twice the L2) ...\n");
    auto bw = measure::measure_device_bandwidth(*device, **timer, *settings);
    if (bw) {
      report.environment.bandwidth = std::move(*bw);
    } else {
      report.environment.bandwidth_missing = bw.status().message();
      std::fprintf(stderr, "tileforge bench: warning: the device bandwidth was not measured: %s\n",
                   bw.status().message().c_str());
    }
  }

  const std::string table = bench::to_table(report);
  const std::string content = a.output.format == "json"       ? bench::to_json(report)
                              : a.output.format == "csv"      ? bench::to_csv(report)
                              : a.output.format == "markdown" ? bench::to_table(report, true)
                                                              : table;
  int code = emit(verb, out, content);
  if (code != kExitOk) return code;
  partial.finish();
  if (out && !a.output.quiet) write_stdout(table);
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* app = parent.add_subcommand(
      "bench", "Time tileforge's kernels against the vendor library (and peers) on the same operands, interleaved, "
               "after verifying each; prints ratio = native time / our time");
  add_problem_options(*app, args->problem, ProblemFlags::bench);
  add_device_options(*app, args->device);
  add_run_options(*app, args->run, true, true);
  add_output_options(*app, args->output, kFormats);
  app->add_flag("--config-peers", args->config_peers,
                "also time other tuners' config lists for our kernel as peers, in the same rounds (the triton "
                "family: Triton's autotune over its tutorial's 17 configs); each list's fastest verified config is "
                "the peer's row");
  return {app, [args] { return run_bench(*args); }};
}

}  // namespace tileforge::cli

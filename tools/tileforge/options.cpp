// Shared CLI options: registration with CLI11 and parsing into Problems, Devices and Settings with named errors.
#include "options.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/suite.hpp"
#include "core/parse.hpp"
#include "hw/hw.hpp"
#include "validators.hpp"

namespace tileforge::cli {
namespace {

constexpr int64_t kMaxInt = INT64_MAX;

// A domain parser attached to its option, so that CLI11 refuses what it refuses with the parser's own words.
template <typename Parse>
CLI::Validator parsed(const char* option, Parse parse) {
  return check::parsed_by(option, [option, parse](const std::string& text) -> Status {
    auto v = parse(text, option);
    return v ? Status() : v.status();
  });
}

// cpu, cuda, cuda:N or auto: the device's spelling is checked here, whether it is present when it is opened.
Status check_device_spec(const std::string& text) {
  if (text == "cpu" || text == "cuda" || text == "auto") return {};
  if (text.starts_with("cuda:")) {
    auto n = parse_int(std::string_view(text).substr(5), "--device");
    if (n && *n >= 0) return {};
  }
  return invalid_argument(fmt::format("--device '{}' is not a device (allowed: cpu, cuda, cuda:N, auto)", text));
}

void add_layout_and_dtypes(CLI::App& app, ProblemArgs& a, ProblemFlags which) {
  const bool plan = which == ProblemFlags::plan;
  auto dtype = parsed("--dtype", [](const std::string& t, const char* n) { return parse_dtype(t, n); });
  app.add_option("--dtype", a.dtype,
                 plan ? "input dtype of A and B: f32, f16, bf16 (default: f32)" : "input dtype of A and B: f32, f16, bf16")
      ->type_name("DTYPE")
      ->check(dtype);
  app.add_option("--out-dtype", a.out_dtype, "dtype of C: the input dtype or f32 (default: the input dtype)")
      ->type_name("DTYPE")
      ->check(parsed("--out-dtype", [](const std::string& t, const char* n) { return parse_dtype(t, n); }));
  app.add_option("--accum", a.accum, "accumulator: f32, or f16 with f16 inputs (default: f32)")
      ->type_name("DTYPE")
      ->check(parsed("--accum", [](const std::string& t, const char* n) { return parse_dtype(t, n); }));
  const char* layout_help = which == ProblemFlags::bench ? "RR, RC, CR, CC (A then B; C row-major) or all (default: the suite's)"
                            : plan                       ? "RR, RC, CR, CC or all (default: RR)"
                                                         : "RR, RC, CR, CC or all (default: all)";
  app.add_option("--layout", a.layout, layout_help)
      ->type_name("LAYOUT")
      ->check(parsed("--layout", [](const std::string& t, const char* n) { return parse_layouts(t, n); }));
}

}  // namespace

void add_problem_options(CLI::App& app, ProblemArgs& a, ProblemFlags which) {
  const bool verify = which == ProblemFlags::verify;
  auto* shape = app.add_option("--shape", a.shapes, verify ? "MxNxK, the one shape to verify"
                                                    : which == ProblemFlags::plan ? "MxNxK (repeatable)"
                                                                                  : "MxNxK (repeatable); default: the device's suite")
                    ->type_name("MxNxK")
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                    ->check(parsed("--shape", [](const std::string& t, const char* n) { return parse_shape(t, n); }));
  if (which == ProblemFlags::bench) {
    auto* suite = app.add_option("--suite", a.suite, "suite JSON file, or a builtin suite name (cpu, public)")
                      ->type_name("NAME|FILE")
                      ->check(check::name_or_file(bench::builtin_suite_names, "suite"));
    shape->excludes(suite);
    suite->excludes(shape);
  } else if (verify) {
    shape->required();
  }
  add_layout_and_dtypes(app, a, which);
  const auto ld = check::integer(0, kMaxInt, "0 for tight, or at least the row length");
  app.add_option("--lda", a.lda, "leading dimension of A (default: tight)")->type_name("N")->check(ld);
  app.add_option("--ldb", a.ldb, "leading dimension of B (default: tight)")->type_name("N")->check(ld);
  app.add_option("--ldc", a.ldc, "leading dimension of C (default: tight)")->type_name("N")->check(ld);
  app.add_option("--batch", a.batch, "strided batch count (default: 1)")
      ->type_name("N")
      ->check(check::integer(1, kMaxInt, "an integer >= 1"));
  if (verify) {
    app.add_option("--alpha", a.alpha, "alpha (default: 1)")->type_name("X")->check(check::finite_number());
    app.add_option("--beta", a.beta, "beta (default: 0)")->type_name("X")->check(check::finite_number());
  }
}

void add_device_options(CLI::App& app, DeviceArgs& a, ThreadBound bound) {
  app.add_option("--device", a.device, "where to run: cpu, cuda, cuda:N or auto (default: auto)")
      ->type_name("DEVICE")
      ->check(check::parsed_by("--device", check_device_spec));
  app.add_option("--profile", a.profile, "chip record for planning and peaks: a builtin name or a JSON file "
                                         "(default: the running device's)")
      ->type_name("NAME|FILE")
      ->check(check::name_or_file(hw::builtin_profile_names, "profile"));
  // Threads run on this host's CPUs, whichever chip --profile plans for: more than it has only time-slice (and a
  // count such as 100000000 would try to start them all). A plan for another chip is bounded by any chip's count
  // (issue 18: --threads 100000000 hung the CPU model).
  const int64_t most = bound == ThreadBound::host ? std::min(hw::usable_cpu_count(), int(hw::bounds::threads.max))
                                                  : int64_t(hw::bounds::threads.max);
  const std::string allowed =
      bound == ThreadBound::host
          ? fmt::format("0 for all cores, or 1 to {}, the CPUs this process may run on", most)
          : fmt::format("0 for all cores, or 1 to {}", most);
  app.add_option("--threads", a.threads,
                 bound == ThreadBound::host ? "CPU threads: 1 to the CPUs this process may run on (default: all cores)"
                                            : "CPU threads the plan is for (default: all cores of the profile)")
      ->type_name("N")
      ->check(check::integer(0, most, allowed));
}

void add_output_options(CLI::App& app, OutputArgs& a, const std::vector<std::string>& formats,
                        std::string_view out_help) {
  app.add_option("--format", a.format,
                 fmt::format("output format: {} (default: what --out's extension says, .json, .csv or .md, where "
                             "offered; else {})",
                             fmt::join(formats, ", "), formats.front()))
      ->type_name("FORMAT")
      ->check(check::one_of(formats, "format"));
  // `--out report.json` without --format writes JSON, not the table: the extension says what the file is.
  app.parse_complete_callback([&a, formats] {
    if (!a.format.empty()) return;
    a.format = formats.front();
    const std::string ext = std::filesystem::path(a.out).extension().string();
    const std::string inferred = ext == ".json" ? "json" : ext == ".csv" ? "csv" : ext == ".md" ? "markdown" : "";
    if (!inferred.empty() && std::find(formats.begin(), formats.end(), inferred) != formats.end()) a.format = inferred;
  });
  app.add_option("--out", a.out,
                 out_help.empty() ? "write the report to FILE (atomically: whole or not at all; a device or FIFO in "
                                    "place, - for stdout; docs/RELIABILITY.md); the table still goes to stdout"
                                  : std::string(out_help))
      ->type_name("FILE")
      ->check(check::non_empty());
  app.add_flag("--quiet,-q", a.quiet, "no progress on stderr");
}

void add_set_option(CLI::App& app, std::vector<std::string>& sets, std::string_view help) {
  app.add_option("--set", sets, std::string(help))
      ->type_name("NAME=VALUE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(parsed("--set", [](const std::string& t, const char* n) { return parse_pin(t, n); }));
}

void add_nondeterministic_flag(CLI::App& app, bool& flag) {
  app.add_flag("--nondeterministic", flag,
               "allow configs whose results may differ in the last bits from run to run (split-K or stream-K slices "
               "summed by float atomics in the order they arrive) where they are predicted faster; without it every "
               "config sums in a fixed order and such DB records and pins are refused");
}

void add_run_options(CLI::App& app, RunArgs& a, bool with_timing, bool with_memory) {
  add_set_option(app, a.sets, "pin a parameter of our kernel, NAME=VALUE (repeatable)");
  add_nondeterministic_flag(app, a.nondeterministic);
  app.add_option("--seed", a.seed, "seed of the random operands (default: 42)")
      ->type_name("N")
      ->check(check::integer(0, kMaxInt, "an integer >= 0"));
  if (with_timing) {
    app.add_option("--min-reps", a.min_reps, "timed reps per backend, at least (default: 30)")
        ->type_name("N")
        ->check(check::integer(1, 1000000, "1 to 1000000"));
    app.add_option("--min-time", a.min_time, "timed seconds per backend, at least (default: 0.1)")
        ->type_name("S")
        ->check(check::seconds(true));
    app.add_option("--max-time", a.max_time, "cap on timed seconds per backend (default: 10)")
        ->type_name("S")
        ->check(check::seconds(false));
  }
  if (with_memory) {
    app.add_option("--max-memory", a.max_memory,
                   "memory a case may take, on the host and on a GPU, e.g. 20G (default: the host's MemAvailable); a "
                   "larger case is refused before anything is allocated")
        ->type_name("BYTES|NG")
        ->check(parsed("--max-memory", [](const std::string& t, const char* n) {
          return measure::parse_memory_size(t, n);
        }));
  }
  add_db_options(app, a.db, true);
}

void add_db_options(CLI::App& app, DbArgs& a, bool with_no_db) {
  // A callback rather than a bound std::string: "given" must be told apart from "not given".
  auto* path = app.add_option_function<std::string>(
                      "--db", [&a](const std::string& v) { a.path = v; },
                      "tuning DB file (default: $TILEFORGE_DB, else $XDG_CACHE_HOME/tileforge/tune.db or "
                      "~/.cache/tileforge/tune.db)")
                   ->type_name("PATH")
                   ->check(check::non_empty());
  if (with_no_db) {
    auto* off = app.add_flag("--no-db", a.disabled,
                             "ignore the tuning DB: nothing read from it or written to it (bench runs the planner's "
                             "choice, plan reports no tuned record)");
    path->excludes(off);
    off->excludes(path);
  }
}

Expected<Device> open_device_from(const DeviceArgs& a) { return open_device(a.device, a.profile, a.threads); }

Expected<std::vector<Problem>> problems_from(const ProblemArgs& a, const Device& device) {
  // The base precision and layouts: the suite's, or for bare --shape the device's default suite's.
  const bool from_suite = a.shapes.empty();
  const std::string suite_name = !a.suite.empty() ? a.suite : std::string(bench::default_suite_name(device.kind));
  auto suite = bench::load_suite(suite_name);
  if (!suite) return suite.status();

  Precision precision = suite->precision;
  if (!a.dtype.empty()) {
    auto t = parse_dtype(a.dtype, "--dtype");
    if (!t) return t.status();
    precision.input = *t;
    precision.output = *t;  // C follows A and B unless --out-dtype says otherwise
  }
  if (!a.out_dtype.empty()) {
    auto t = parse_dtype(a.out_dtype, "--out-dtype");
    if (!t) return t.status();
    precision.output = *t;
  }
  if (!a.accum.empty()) {
    auto t = parse_dtype(a.accum, "--accum");
    if (!t) return t.status();
    precision.accum = *t;
  }
  std::vector<Layout> layouts = suite->layouts;
  if (!a.layout.empty()) {
    auto l = parse_layouts(a.layout, "--layout");
    if (!l) return l.status();
    layouts = *l;
  }

  std::vector<std::pair<std::string, std::array<int64_t, 3>>> shapes;  // origin text, dims
  if (from_suite) {
    for (const auto& s : suite->shapes) shapes.emplace_back(fmt::format("suite {}", suite->origin), s);
  } else {
    for (const auto& text : a.shapes) {
      auto dims = parse_shape(text, "--shape");
      if (!dims) return dims.status();
      shapes.emplace_back(fmt::format("--shape {}", text), *dims);
    }
  }

  std::vector<Problem> problems;
  for (const auto& [origin, dims] : shapes) {
    for (Layout layout : layouts) {
      Problem p;
      p.m = dims[0];
      p.n = dims[1];
      p.k = dims[2];
      p.batch = a.batch;
      p.precision = precision;
      p.layout = layout;
      p.lda = a.lda;
      p.ldb = a.ldb;
      p.ldc = a.ldc;
      p.alpha = a.alpha;
      p.beta = a.beta;
      if (Status s = p.validate(); !s) {
        // Name where the problem came from, and the options by their flag names.
        std::string msg = s.message();
        for (const char* name : {"lda", "ldb", "ldc"}) {
          if (msg.starts_with(name)) msg = "--" + msg;
        }
        return invalid_argument(fmt::format("{} layout {}: {}", origin, to_string(layout), msg));
      }
      problems.push_back(p);
    }
  }
  return problems;
}

Expected<bench::Settings> settings_from(const RunArgs& a) {
  bench::Settings s;
  for (const auto& text : a.sets) {
    auto pin = parse_pin(text, "--set");
    if (!pin) return pin.status();
    s.pins.push_back(*pin);
  }
  s.deterministic = !a.nondeterministic;
  s.seed = uint64_t(a.seed);
  s.min_reps = a.min_reps;
  s.min_time_s = a.min_time;
  s.max_time_s = a.max_time;
  if (!a.max_memory.empty()) {
    auto v = measure::parse_memory_size(a.max_memory, "--max-memory");
    if (!v) return v.status();
    s.max_memory = *v;
  }
  auto db = db_request_from(a.db);
  if (!db) return db.status();
  s.db = *db;
  return s;
}

Expected<db::LocationRequest> db_request_from(const DbArgs& a) {
  db::LocationRequest r;
  r.disabled = a.disabled;
  if (a.path) {
    if (a.path->empty()) {
      return invalid_argument("--db is empty (allowed: a file path; or --no-db to use no tuning DB)");
    }
    r.path = *a.path;
  }
  return r;
}

int exit_code_for(const Status& status) {
  switch (status.code()) {
    case Code::ok: return kExitOk;
    case Code::invalid_argument:
    case Code::io_error: return kExitUsage;
    default: return kExitFailure;
  }
}

int fail(std::string_view verb, const Status& status) {
  std::fprintf(stderr, "tileforge %.*s: error: %s\n", int(verb.size()), verb.data(), status.message().c_str());
  return exit_code_for(status);
}

Status open_output(const std::string& path, std::optional<OutputFile>& out) {
  if (path.empty()) return {};
  auto file = OutputFile::create(path);
  if (!file) return file.status();
  out.emplace(std::move(*file));
  return {};
}

int emit(std::string_view verb, std::optional<OutputFile>& out, const std::string& content) {
  if (out) {
    if (Status s = out->commit(content); !s) return fail(verb, s);
    return kExitOk;
  }
  write_stdout(content);
  return kExitOk;
}

namespace {
int g_stdout_errno = 0;  // the cause of the first failed write to stdout
}  // namespace

void write_stdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() && g_stdout_errno == 0) {
    g_stdout_errno = errno != 0 ? errno : EIO;
  }
  if (std::fflush(stdout) != 0 && g_stdout_errno == 0) g_stdout_errno = errno != 0 ? errno : EIO;
}

int check_stdout(int code) {
  std::cout.flush();
  int err = g_stdout_errno;
  errno = 0;
  if (std::fflush(stdout) != 0 && err == 0) err = errno != 0 ? errno : EIO;
  if (err == 0 && !std::ferror(stdout) && std::cout.good()) return code;
  // NOTE: without a cause, stdio lost it: an earlier buffered write failed, and a later flush had nothing to retry.
  if (err != 0) {
    std::fprintf(stderr, "tileforge: error: writing standard output: %s\n", std::strerror(err));
  } else {
    std::fprintf(stderr, "tileforge: error: writing standard output failed\n");
  }
  return code == kExitOk ? kExitFailure : code;
}

bool show_progress(const OutputArgs& a) { return !a.quiet && isatty(STDERR_FILENO); }

bool stop_for_lost_device(std::string_view verb, const measure::RepTimer& timer, std::size_t left) {
  const std::string lost = timer.device_lost();
  if (lost.empty()) return false;
  std::fprintf(stderr,
               "tileforge %.*s: error: a GPU kernel faulted (first reported as \"%s\"): the CUDA context is lost for "
               "this process; %zu case(s) left not run\n",
               int(verb.size()), verb.data(), lost.c_str(), left);
  return true;
}

void precompile_on_gpu(const Device& device, const std::vector<bench::CasePlan>& plans, const OutputArgs& output) {
  if (device.kind != "cuda") return;
  const double secs = bench::precompile(device, plans);
  if (!output.quiet) std::fprintf(stderr, "compiled %zu kernels in %.1f s\n", plans.size(), secs);
}

}  // namespace tileforge::cli

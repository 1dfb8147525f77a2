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

namespace tileforge::cli {
namespace {

Expected<int64_t> int_in_range(const std::string& text, const char* name, int64_t min, int64_t max,
                               std::string_view allowed) {
  auto v = parse_int(text, name);
  if (!v) return invalid_argument(fmt::format("{} (allowed: {})", v.status().message(), allowed));
  if (*v < min || *v > max) return invalid_argument(fmt::format("{} = {} is out of range (allowed: {})", name, *v, allowed));
  return *v;
}

Expected<double> seconds(const std::string& text, const char* name, bool zero_ok) {
  const char* allowed = zero_ok ? "a number of seconds >= 0" : "a number of seconds > 0";
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) {
    return invalid_argument(fmt::format("{} '{}' is not a number (allowed: {})", name, text, allowed));
  }
  if (v < 0 || (!zero_ok && v == 0)) return invalid_argument(fmt::format("{} = {} (allowed: {})", name, text, allowed));
  return v;
}

Expected<double> scalar(const std::string& text, const char* name) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) {
    return invalid_argument(fmt::format("{} '{}' is not a finite number (allowed: a number such as 1 or -0.5)", name, text));
  }
  return v;
}

// An option given an empty value (--dtype "", often an unset shell variable) would read as "not given" and fall back
// to the default without a word: it is refused, by name, when the command line is parsed.
void refuse_empty_values(CLI::App& app, std::initializer_list<const char*> names) {
  static const CLI::Validator non_empty(
      [](std::string& value) {
        return value.empty() ? std::string("is empty (allowed: a value; or leave the option out for its default)")
                             : std::string();
      },
      "", "non-empty");
  for (const char* name : names)
    if (CLI::Option* o = app.get_option_no_throw(name)) o->check(non_empty);
}

}  // namespace

void add_problem_options(CLI::App& app, ProblemArgs& a, ProblemFlags which) {
  const bool bench = which == ProblemFlags::bench;
  auto* shape = app.add_option("--shape", a.shapes, bench ? "MxNxK (repeatable); default: the device's suite"
                                                          : "MxNxK, the one shape to verify")
                    ->type_name("MxNxK")
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  if (bench) {
    auto* suite = app.add_option("--suite", a.suite, "suite JSON file, or a builtin suite name (cpu, public)")
                      ->type_name("NAME|FILE");
    shape->excludes(suite);
    suite->excludes(shape);
  } else {
    shape->required();
  }
  app.add_option("--dtype", a.dtype, "input dtype of A and B: f32, f16, bf16")->type_name("DTYPE");
  app.add_option("--out-dtype", a.out_dtype, "dtype of C: the input dtype or f32 (default: the input dtype)")
      ->type_name("DTYPE");
  app.add_option("--accum", a.accum, "accumulator: f32, or f16 with f16 inputs (default: f32)")->type_name("DTYPE");
  app.add_option("--layout", a.layout,
                 bench ? "RR, RC, CR, CC (A then B; C row-major) or all (default: the suite's)"
                       : "RR, RC, CR, CC or all (default: all)")
      ->type_name("LAYOUT");
  app.add_option("--lda", a.lda, "leading dimension of A (default: tight)")->type_name("N");
  app.add_option("--ldb", a.ldb, "leading dimension of B (default: tight)")->type_name("N");
  app.add_option("--ldc", a.ldc, "leading dimension of C (default: tight)")->type_name("N");
  app.add_option("--batch", a.batch, "strided batch count (default: 1)")->type_name("N");
  if (!bench) {
    app.add_option("--alpha", a.alpha, "alpha (default: 1)")->type_name("X");
    app.add_option("--beta", a.beta, "beta (default: 0)")->type_name("X");
  }
  refuse_empty_values(app, {"--shape", "--suite", "--dtype", "--out-dtype", "--accum", "--layout", "--lda", "--ldb",
                            "--ldc", "--batch", "--alpha", "--beta"});
}

void add_device_options(CLI::App& app, DeviceArgs& a) {
  app.add_option("--device", a.device, "where to run: cpu, cuda, cuda:N or auto (default: auto)")->type_name("DEVICE");
  app.add_option("--profile", a.profile, "chip record for planning and peaks: a builtin name or a JSON file "
                                         "(default: the running device's)")
      ->type_name("NAME|FILE");
  app.add_option("--threads", a.threads, "CPU threads: 1 to the CPUs this process may run on (default: all cores)")
      ->type_name("N");
  refuse_empty_values(app, {"--device", "--profile", "--threads"});
}

void add_output_options(CLI::App& app, OutputArgs& a, const std::vector<std::string>& formats, bool with_out) {
  app.add_option("--format", a.format,
                 fmt::format("output format: {} (default: what --out's extension says, .json, .csv or .md, where "
                             "offered; else table)",
                             fmt::join(formats, ", ")))
      ->type_name("FORMAT");
  // `--out report.json` without --format writes JSON, not the table: the extension says what the file is.
  app.parse_complete_callback([&a, formats] {
    if (!a.format.empty()) return;
    a.format = "table";
    const std::string ext = std::filesystem::path(a.out).extension().string();
    const std::string inferred = ext == ".json" ? "json" : ext == ".csv" ? "csv" : ext == ".md" ? "markdown" : "";
    if (!inferred.empty() && std::find(formats.begin(), formats.end(), inferred) != formats.end()) a.format = inferred;
  });
  if (with_out) {
    app.add_option("--out", a.out, "write the report to FILE (atomically: whole or not at all; a device or FIFO "
                                   "in place, - for stdout; docs/RELIABILITY.md); the table still goes to stdout")
        ->type_name("FILE");
  }
  app.add_flag("--quiet,-q", a.quiet, "no progress on stderr");
  refuse_empty_values(app, {"--format", "--out"});
}

void add_run_options(CLI::App& app, RunArgs& a, bool with_timing, bool with_memory) {
  app.add_option("--set", a.sets, "pin a parameter of our kernel, NAME=VALUE (repeatable)")
      ->type_name("NAME=VALUE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--seed", a.seed, "seed of the random operands (default: 42)")->type_name("N");
  if (with_timing) {
    app.add_option("--min-reps", a.min_reps, "timed reps per backend, at least (default: 30)")->type_name("N");
    app.add_option("--min-time", a.min_time, "timed seconds per backend, at least (default: 0.1)")->type_name("S");
    app.add_option("--max-time", a.max_time, "cap on timed seconds per backend (default: 10)")->type_name("S");
  }
  if (with_memory) {
    app.add_option("--max-memory", a.max_memory,
                   "memory a case may take, on the host and on a GPU, e.g. 20G (default: the host's MemAvailable); a "
                   "larger case is refused before anything is allocated")
        ->type_name("BYTES|NG");
  }
  refuse_empty_values(app, {"--set", "--seed", "--min-reps", "--min-time", "--max-time", "--max-memory"});
  add_db_options(app, a.db, true);
}

void add_db_options(CLI::App& app, DbArgs& a, bool with_no_db) {
  // A callback rather than a bound std::string: "given but empty" must be told apart from "not given".
  auto* path = app.add_option_function<std::string>(
                      "--db", [&a](const std::string& v) { a.path = v; },
                      "tuning DB file (default: $TILEFORGE_DB, else $XDG_CACHE_HOME/tileforge/tune.db or "
                      "~/.cache/tileforge/tune.db)")
                   ->type_name("PATH");
  if (with_no_db) {
    auto* off = app.add_flag("--no-db", a.disabled, "ignore the tuning DB: the planner chooses our config");
    path->excludes(off);
    off->excludes(path);
  }
}

Expected<Device> open_device_from(const DeviceArgs& a) {
  int threads = 0;
  if (!a.threads.empty()) {
    // Threads run on this host's CPUs, whichever chip --profile plans for: more than it has only time-slice (and a
    // count such as 100000000 would try to start them all).
    const int cpus = std::min(hw::usable_cpu_count(), int(hw::bounds::threads.max));
    auto t = int_in_range(a.threads, "--threads", 0, cpus,
                          fmt::format("0 for all cores, or 1 to {}, the CPUs this process may run on", cpus));
    if (!t) return t.status();
    threads = int(*t);
  }
  static const char* allowed_devices = "cpu, cuda, cuda:N, auto";
  if (a.device.empty()) return invalid_argument(fmt::format("--device is empty (allowed: {})", allowed_devices));
  return open_device(a.device, a.profile, threads);
}

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

  auto ld = [](const std::string& text, const char* name) -> Expected<int64_t> {
    if (text.empty()) return int64_t(0);
    return int_in_range(text, name, INT64_MIN, INT64_MAX, "0 for tight, or at least the row length");
  };
  auto lda = ld(a.lda, "--lda");
  if (!lda) return lda.status();
  auto ldb = ld(a.ldb, "--ldb");
  if (!ldb) return ldb.status();
  auto ldc = ld(a.ldc, "--ldc");
  if (!ldc) return ldc.status();
  int64_t batch = 1;
  if (!a.batch.empty()) {
    auto b = int_in_range(a.batch, "--batch", 1, INT64_MAX, "an integer >= 1");
    if (!b) return b.status();
    batch = *b;
  }
  double alpha = 1.0, beta = 0.0;
  if (!a.alpha.empty()) {
    auto v = scalar(a.alpha, "--alpha");
    if (!v) return v.status();
    alpha = *v;
  }
  if (!a.beta.empty()) {
    auto v = scalar(a.beta, "--beta");
    if (!v) return v.status();
    beta = *v;
  }

  std::vector<Problem> problems;
  for (const auto& [origin, dims] : shapes) {
    for (Layout layout : layouts) {
      Problem p;
      p.m = dims[0];
      p.n = dims[1];
      p.k = dims[2];
      p.batch = batch;
      p.precision = precision;
      p.layout = layout;
      p.lda = *lda;
      p.ldb = *ldb;
      p.ldc = *ldc;
      p.alpha = alpha;
      p.beta = beta;
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
  if (!a.seed.empty()) {
    auto v = int_in_range(a.seed, "--seed", 0, INT64_MAX, "an integer >= 0");
    if (!v) return v.status();
    s.seed = uint64_t(*v);
  }
  if (!a.min_reps.empty()) {
    auto v = int_in_range(a.min_reps, "--min-reps", 1, 1000000, "1 to 1000000");
    if (!v) return v.status();
    s.min_reps = int(*v);
  }
  if (!a.min_time.empty()) {
    auto v = seconds(a.min_time, "--min-time", true);
    if (!v) return v.status();
    s.min_time_s = *v;
  }
  if (!a.max_time.empty()) {
    auto v = seconds(a.max_time, "--max-time", false);
    if (!v) return v.status();
    s.max_time_s = *v;
  }
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

Status check_format(const OutputArgs& a, const std::vector<std::string>& formats) {
  for (const auto& f : formats)
    if (a.format == f) return {};
  return invalid_argument(fmt::format("--format '{}' is not known (allowed: {})", a.format, fmt::join(formats, ", ")));
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

Status open_output(const std::string& path, std::optional<bench::OutputFile>& out) {
  if (path.empty()) return {};
  auto file = bench::OutputFile::create(path);
  if (!file) return file.status();
  out.emplace(std::move(*file));
  return {};
}

int emit(std::string_view verb, std::optional<bench::OutputFile>& out, const std::string& content) {
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

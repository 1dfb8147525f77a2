// Options shared by the CLI verbs, their parsing into Problems, Devices and bench Settings, and exit codes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "backends/backend.hpp"
#include "bench/harness.hpp"
#include "output_file.hpp"
#include "core/expected.hpp"
#include "db/location.hpp"
#include "validators.hpp"

namespace tileforge::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the run happened and found a problem (a failed check, a missing device)
inline constexpr int kExitUsage = 2;    // bad input: nothing ran

// A verb: its CLI11 subcommand and what runs when it is chosen (returns the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_devices_command(CLI::App& parent);
Command add_bench_command(CLI::App& parent);
Command add_verify_command(CLI::App& parent);
Command add_plan_command(CLI::App& parent);
Command add_db_command(CLI::App& parent);
Command add_tune_command(CLI::App& parent);
Command add_compare_command(CLI::App& parent);
Command add_banks_command(CLI::App& parent);
Command add_ladder_command(CLI::App& parent);
Command add_report_command(CLI::App& parent);

// The options every verb shares, as CLI11 binds them: numbers typed, names and shapes checked by validators when the
// command line is parsed (validators.hpp), so that a bad value is refused by name before anything runs. Names stay
// text where the library takes text (dtype, layout), empty meaning "not given".
struct ProblemArgs {
  std::vector<std::string> shapes;  // each checked as MxNxK
  std::string suite;
  std::string dtype, out_dtype, accum;
  std::string layout;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0: tight
  int64_t batch = 1;
  double alpha = 1.0, beta = 0.0;  // verify only
};

struct DeviceArgs {
  std::string device = "auto";
  std::string profile;
  int threads = 0;  // 0: all cores
};

struct OutputArgs {
  std::string format;  // empty until parsed: --format, else what --out's extension says (.json, .csv, .md), else table
  std::string out;
  bool quiet = false;
};

// Which tuning DB: --db PATH (std::nullopt when not given) and --no-db.
struct DbArgs {
  std::optional<std::string> path;
  bool disabled = false;
};

struct RunArgs {
  std::vector<std::string> sets;
  int64_t seed = int64_t(bench::Settings{}.seed);
  int min_reps = bench::Settings{}.min_reps;
  double min_time = bench::Settings{}.min_time_s, max_time = bench::Settings{}.max_time_s;
  std::string max_memory;  // --max-memory BYTES|NG, checked when parsed
  DbArgs db;
  bool nondeterministic = false;  // --nondeterministic: Options::deterministic false
};

// bench: repeatable --shape or --suite; verify: exactly one --shape, --alpha and --beta; plan: repeatable --shape,
// the planner's defaults (f32, RR).
enum class ProblemFlags { bench, verify, plan };
void add_problem_options(CLI::App& app, ProblemArgs& args, ProblemFlags which);
// host: --threads up to the CPUs this process may run on; any_chip: up to the plausible count of any chip (plans
// for a chip that is not this host).
enum class ThreadBound { host, any_chip };
void add_device_options(CLI::App& app, DeviceArgs& args, ThreadBound bound = ThreadBound::host);
// --format (one of `formats`; without it, what --out's extension says where offered: .json json, .csv csv, .md
// markdown; else the first of `formats`), --out FILE and --quiet: the one place every verb gets them from.
// `out_help` says where the report goes with --out.
void add_output_options(CLI::App& app, OutputArgs& args, const std::vector<std::string>& formats,
                        std::string_view out_help = {});
// --out's help for the verbs whose report is not also shown as a table on stdout.
inline constexpr std::string_view kOutInsteadOfStdout =
    "write the report to FILE instead of stdout (atomically: whole or not at all; a device or FIFO in place, - for "
    "stdout; docs/RELIABILITY.md)";
// --nondeterministic: configs whose sums vary from run to run (float atomics) allowed; without it, refused.
void add_nondeterministic_flag(CLI::App& app, bool& flag);
// --set NAME=VALUE (repeatable), each checked as NAME=VALUE; the family checks the name and value.
void add_set_option(CLI::App& app, std::vector<std::string>& sets, std::string_view help);
// with_memory: --max-memory, for the verbs whose cases run through bench::run_case (bench, verify).
void add_run_options(CLI::App& app, RunArgs& args, bool with_timing, bool with_memory = false);
// --db PATH, and --no-db where the verb can run without a DB (the two exclude each other).
void add_db_options(CLI::App& app, DbArgs& args, bool with_no_db);

Expected<Device> open_device_from(const DeviceArgs& args);

// The cases to run: shapes from --shape or the suite (the device's default suite when neither is given), the
// suite's precision and layout unless overridden, every Problem validated. `verb` prefixes messages.
Expected<std::vector<Problem>> problems_from(const ProblemArgs& args, const Device& device);

// --set, --seed, the timing options, --max-memory and the tuning DB.
Expected<bench::Settings> settings_from(const RunArgs& args);
// --db / --no-db as the DB library takes them; an empty --db is refused.
Expected<db::LocationRequest> db_request_from(const DbArgs& args);

// The exit code for a Status that stops a verb: usage errors (bad arguments, unreadable files) are 2.
int exit_code_for(const Status& status);
// Prints "tileforge VERB: error: MESSAGE" on stderr and returns the exit code.
int fail(std::string_view verb, const Status& status);

// Creates the --out file now, so that an unwritable path is refused before anything runs; no path leaves `out` empty.
Status open_output(const std::string& path, std::optional<OutputFile>& out);

// Writes `content` to --out atomically (the file was created up front) or to stdout.
int emit(std::string_view verb, std::optional<OutputFile>& out, const std::string& content);

// Writes `text` to stdout and flushes it; a failure is remembered (with its cause, which stdio does not keep) for
// check_stdout, so that every verb's output goes through one check.
void write_stdout(std::string_view text);
// Run by main after the verb: flushes stdout and std::cout, and when anything could not be written (a full disk, a
// closed file) says so on stderr and returns a failing exit status (the verb's own when it failed already).
int check_stdout(int code);

// Progress goes to stderr only when it is a terminal and --quiet was not given.
bool show_progress(const OutputArgs& args);
// On a GPU, compiles every plan's kernel on all host cores before anything runs (NVRTC time then overlaps instead
// of adding up case by case), and says how long it took unless --quiet.
void precompile_on_gpu(const Device& device, const std::vector<bench::CasePlan>& plans, const OutputArgs& output);
// True, after saying so on stderr, when a GPU kernel has faulted and taken the device's context with it: the verb
// stops its cases there (`left` of them not run) instead of failing each one as if it had faulted too.
bool stop_for_lost_device(std::string_view verb, const measure::RepTimer& timer, std::size_t left);

}  // namespace tileforge::cli

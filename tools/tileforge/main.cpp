// tileforge command line: parses the verb and its options with CLI11 and maps errors to exit codes.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "options.hpp"

// The commit the tool was built from (generated at build time by cmake/build_commit.cmake).
extern const char* const tileforge_build_commit;

int main(int argc, char** argv) {
  using namespace tileforge::cli;
  CLI::App app{"tileforge: plans, generates, verifies and benchmarks GEMM kernels for the chip it runs on, and "
               "compares them with the vendor library.",
               "tileforge"};
  app.set_version_flag("--version", std::string(tileforge::version()) + " (" + tileforge_build_commit + ")");
  app.require_subcommand(1);
  app.fallthrough(false);
  // A repeated single-valued option takes the last value (as most tools do); repeatable ones opt out.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  const Command commands[] = {add_devices_command(app), add_bench_command(app), add_verify_command(app),
                              add_plan_command(app), add_db_command(app),
                              add_tune_command(app), add_compare_command(app),
                              add_ladder_command(app), add_banks_command(app), add_report_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return check_stdout(app.exit(e));  // --help, --version: printed on stdout, exit 0
  } catch (const CLI::ParseError& e) {
    // Usage errors: one line on stderr naming the argument, nothing on stdout, exit 2.
    std::fprintf(stderr, "tileforge: error: %s\n(run 'tileforge --help' or 'tileforge VERB --help')\n", e.what());
    return kExitUsage;
  }
  try {
    for (const Command& c : commands) {
      if (c.app->parsed()) return check_stdout(c.run());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tileforge: error: %s\n", e.what());
    return kExitFailure;
  }
  return kExitUsage;
}

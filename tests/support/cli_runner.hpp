// Runs the tileforge CLI from tests: a child process with stdout and stderr captured, started without a shell.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tileforge::testing {

struct CliResult {
  int exit_code = -1;  // 128 + signal when it was killed; -1 when it could not be started
  std::string out, err;
};

// A started CLI process whose output goes to `<tag>.stdout` and `<tag>.stderr` in its folder.
struct CliProcess {
  pid_t pid = -1;
  std::filesystem::path out, err;
};

// Environment changes for the child: a value sets the variable, nullopt removes it; the rest is this process's.
using EnvChanges = std::map<std::string, std::optional<std::string>>;

// A whole file as bytes ("" when it cannot be read).
std::string slurp(const std::filesystem::path& path);

// Starts the CLI with `args` (no shell, so they need no quoting); `tag` names its output files in `dir`, so that
// processes running at once keep theirs apart.
CliProcess spawn_cli(const std::vector<std::string>& args, const std::filesystem::path& dir,
                     const EnvChanges& env = {}, const std::string& tag = "cli");

// Waits for the process, returns its exit code and output, and removes the output files.
CliResult wait_cli(const CliProcess& process);

// spawn_cli, then wait_cli.
CliResult run_cli(const std::vector<std::string>& args, const std::filesystem::path& dir, const EnvChanges& env = {});

// run_cli as on a full disk: every file the child writes is held to `max_file_bytes` (RLIMIT_FSIZE, with SIGXFSZ
// ignored so that a write past it fails with EFBIG instead of killing the process), with no root and no small
// filesystem needed. Its own stdout and stderr files are held to it too: keep what it prints below the limit.
CliResult run_cli_on_full_disk(const std::vector<std::string>& args, const std::filesystem::path& dir,
                               const EnvChanges& env, uint64_t max_file_bytes);

}  // namespace tileforge::testing

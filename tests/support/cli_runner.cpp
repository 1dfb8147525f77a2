// Runs the tileforge CLI from tests with posix_spawn (or fork and exec, to limit its file sizes), its output
// captured to files.
#include "support/cli_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "support/child_process.hpp"

extern char** environ;

namespace tileforge::testing {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

// The child's argument and environment vectors, built before it starts (a forked child may not allocate).
struct ChildArgs {
  std::vector<std::string> all, vars;
  std::vector<char*> argv, envp;
  ChildArgs(const std::vector<std::string>& args, const EnvChanges& env) {
    all = {TILEFORGE_CLI_PATH};
    all.insert(all.end(), args.begin(), args.end());
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (char** e = environ; *e; ++e) {
      const std::string var = *e;
      if (!env.count(var.substr(0, var.find('=')))) vars.push_back(var);
    }
    for (const auto& [name, value] : env)
      if (value) vars.push_back(name + "=" + *value);
    for (auto& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
  }
};

}  // namespace

CliProcess spawn_cli(const std::vector<std::string>& args, const fs::path& dir, const EnvChanges& env,
                     const std::string& tag) {
  CliProcess p{-1, dir / (tag + ".stdout"), dir / (tag + ".stderr")};
  ChildArgs child(args, env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (posix_spawn(&p.pid, child.argv[0], &actions, nullptr, child.argv.data(), child.envp.data()) != 0) p.pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return p;
}

CliResult run_cli_on_full_disk(const std::vector<std::string>& args, const fs::path& dir, const EnvChanges& env,
                               uint64_t max_file_bytes) {
  CliProcess p{-1, dir / "cli.stdout", dir / "cli.stderr"};
  ChildArgs child(args, env);
  const int out_fd = ::open(p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd >= 0 && err_fd >= 0) {
    p.pid = ::fork();
    if (p.pid == 0) {
      // Only async-signal-safe calls here: this process may have other threads.
      if (!hold_files_to(max_file_bytes) || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) {
        ::_exit(126);
      }
      ::execve(child.argv[0], child.argv.data(), child.envp.data());
      ::_exit(127);
    }
  }
  if (out_fd >= 0) ::close(out_fd);
  if (err_fd >= 0) ::close(err_fd);
  return wait_cli(p);
}

CliResult wait_cli(const CliProcess& process) {
  CliResult r;
  if (process.pid < 0) return r;
  int status = 0;
  waitpid(process.pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(process.out);
  r.err = slurp(process.err);
  fs::remove(process.out);
  fs::remove(process.err);
  return r;
}

CliResult run_cli(const std::vector<std::string>& args, const fs::path& dir, const EnvChanges& env) {
  return wait_cli(spawn_cli(args, dir, env));
}

}  // namespace tileforge::testing

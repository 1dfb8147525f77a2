// Runs the tileforge CLI from tests with posix_spawn, its output captured to files.
#include "support/cli_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

extern char** environ;

namespace tileforge::testing {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CliProcess spawn_cli(const std::vector<std::string>& args, const fs::path& dir, const EnvChanges& env,
                     const std::string& tag) {
  CliProcess p{-1, dir / (tag + ".stdout"), dir / (tag + ".stderr")};
  std::vector<std::string> all = {TILEFORGE_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    if (!env.count(var.substr(0, var.find('=')))) vars.push_back(var);
  }
  for (const auto& [name, value] : env)
    if (value) vars.push_back(name + "=" + *value);
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (posix_spawn(&p.pid, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) p.pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return p;
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

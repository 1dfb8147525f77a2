// Where the CLI's output goes, as a user meets it: a stdout that cannot be written fails every verb with a message,
// --out on a full device fails and leaves the device, --out - is stdout, a link to a device is refused.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using tileforge::testing::CliResult;
using tileforge::testing::run_cli;
using tileforge::testing::slurp;

const std::vector<std::string> kQuick = {"--min-reps", "2", "--min-time", "0", "--max-time", "0.02", "--quiet"};

bool is_char_device(const char* path) {
  struct stat st {};
  return lstat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

// The CLI with its stdout on `stdout_path` (a device: nothing is created) and stderr captured; no shell. With
// `unprivileged`, a root test process runs it as the user nobody: a writer that renamed over what is at a path (as
// --out did before the output rule, replacing /dev/full) then fails instead of damaging the system.
CliResult run_cli_with_stdout(const std::vector<std::string>& args, const char* stdout_path, const fs::path& dir,
                              bool unprivileged = false) {
  CliResult r;
  const fs::path err = dir / "cli.stderr";
  std::vector<std::string> all = {TILEFORGE_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int out_fd = open(stdout_path, O_WRONLY | O_CLOEXEC);
  const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0 || err_fd < 0) return r;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) _exit(126);
    if (unprivileged && getuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
      _exit(126);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
  if (pid < 0) return r;
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = slurp(err);
  fs::remove(err);
  return r;
}

class CliOutput : public ::testing::Test {
 protected:
  void SetUp() override { dir = tileforge::testing::fresh_test_dir("tileforge_cli_output_"); }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(CliOutput, EveryVerbFailsWhenStdoutCannotBeWritten) {
  if (!is_char_device("/dev/full")) GTEST_SKIP() << "/dev/full is not a character device here";
  const std::string db = (dir / "t.db").string();
  std::vector<std::string> bench = {"bench", "--shape", "8x8x8"};
  bench.insert(bench.end(), kQuick.begin(), kQuick.end());
  const std::vector<std::vector<std::string>> runs = {
      {"devices"},
      {"devices", "--format", "json"},
      {"plan", "--shape", "64x64x64"},
      {"plan", "--shape", "64x64x64", "--explain"},  // more than stdio's buffer: the failure comes mid-write
      {"db", "list", "--db", db},
      {"verify", "--shape", "8x8x8", "--quiet"},
      bench,
      {"tune", "--shape", "16x16x16", "--device", "cpu", "--top", "1", "--no-db", "--quiet", "--min-reps", "2",
       "--min-time", "0", "--max-time", "0.02"},
      {"--help"},
  };
  for (const auto& args : runs) {
    std::string label;
    for (const auto& a : args) label += a + " ";
    const CliResult r = run_cli_with_stdout(args, "/dev/full", dir);
    EXPECT_NE(r.exit_code, 0) << label << "\nstderr: " << r.err;
    EXPECT_NE(r.exit_code, -1) << label << ": not started";
    EXPECT_NE(r.err.find("writing standard output"), std::string::npos) << label << "\nstderr: " << r.err;
  }
  // The same runs with a stdout that works exit 0 (the check is not a false alarm).
  const CliResult ok = run_cli_with_stdout({"plan", "--shape", "64x64x64", "--explain"}, "/dev/null", dir);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err, "");
}

TEST_F(CliOutput, OutOnAFullDeviceFailsAndLeavesTheDevice) {
  if (!is_char_device("/dev/full")) GTEST_SKIP() << "/dev/full is not a character device here";
  const struct stat before = [] {
    struct stat st {};
    lstat("/dev/full", &st);
    return st;
  }();
  // Unprivileged: run as root, the code before the output rule renamed a regular file over /dev/full.
  const CliResult r = run_cli_with_stdout(
      {"verify", "--shape", "8x8x8", "--quiet", "--format", "json", "--out", "/dev/full"}, "/dev/null", dir, true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out '/dev/full'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::strerror(ENOSPC)), std::string::npos) << r.err;
  struct stat after {};
  ASSERT_EQ(lstat("/dev/full", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_rdev, before.st_rdev);
}

TEST_F(CliOutput, OutDashIsStandardOutput) {
  const CliResult r = run_cli({"verify", "--shape", "8x8x8", "--quiet", "--format", "json", "--out", "-"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_EQ(doc["rows"].size(), 4u);
  EXPECT_FALSE(fs::exists("-"));
}

TEST_F(CliOutput, OutThroughALinkToADeviceIsRefusedBeforeRunning) {
  const fs::path link = dir / "r.json";
  fs::create_symlink("/dev/null", link);
  std::vector<std::string> args = {"bench", "--shape", "8x8x8", "--out", link.string()};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  const CliResult r = run_cli(args, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--out '" + link.string() + "'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), fs::path("/dev/null"));
}

}  // namespace

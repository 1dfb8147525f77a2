// The CLI's --out writer: a regular file appears whole on commit or not at all; devices, FIFOs and stdout are
// written in place and never replaced, write failures are reported (a full disk under a regular file too), links
// stay links.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "tools/tileforge/output_file.hpp"
#include "support/test_support.hpp"
#include "support/unprivileged.hpp"

namespace tileforge::cli {
namespace {

namespace fs = std::filesystem;

using testing::read_file;

// The kind and device number of what is at `path` itself (a link is not followed).
struct Node {
  mode_t mode = 0;
  dev_t rdev = 0;
};
Node node(const char* path) {
  struct stat st {};
  if (lstat(path, &st) != 0) return {};
  return {st.st_mode, st.st_rdev};
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir = testing::fresh_test_dir("tileforge_output_file_"); }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(OutputFileTest, FullDeviceReportsTheFailureAndStaysADevice) {
  if (!S_ISCHR(node("/dev/full").mode)) GTEST_SKIP() << "/dev/full is not a character device here";
  const Node before = node("/dev/full");
  const std::string result = testing::in_unprivileged_child([] {
    auto f = OutputFile::create("/dev/full");
    if (!f) return "create: " + f.status().to_string();
    const Status s = f->commit("{\"rows\": []}\n");
    return s ? std::string("written") : s.to_string();
  });
  EXPECT_EQ(result.rfind("io_error: --out '/dev/full': write failed", 0), 0u) << result;
  EXPECT_NE(result.find(std::strerror(ENOSPC)), std::string::npos) << result;
  const Node after = node("/dev/full");
  EXPECT_TRUE(S_ISCHR(after.mode));
  EXPECT_EQ(after.rdev, before.rdev);
}

// What `body` returned, run in a child whose files are held to `max_bytes`, as on a full disk.
std::string on_full_disk(uint64_t max_bytes, const std::function<std::string()>& body) {
  return testing::in_child([max_bytes] { return testing::hold_files_to(max_bytes); }, body);
}

// A regular file on a full disk: the failure names the path and the cause, the file keeps its old contents (the
// new ones went to a temporary file, which is removed), and nothing else is left in the folder.
TEST_F(OutputFileTest, FullDiskUnderARegularFileKeepsItsOldContents) {
  const fs::path target = dir / "bench.json";
  std::mt19937_64 rng(std::random_device{}());
  const std::string old = "old " + std::to_string(rng()) + "\n";
  { std::ofstream(target) << old; }
  std::string content(8192 + rng() % 8192, 'x');
  const std::string result = on_full_disk(4096, [&] {
    auto f = OutputFile::create(target.string());
    if (!f) return "create: " + f.status().to_string();
    const Status s = f->commit(content);
    return s ? std::string("written") : s.to_string();
  });
  EXPECT_EQ(result.rfind("io_error: --out '" + target.string() + "': write failed (", 0), 0u) << result;
  EXPECT_NE(result.find(std::strerror(EFBIG)), std::string::npos) << result;
  EXPECT_EQ(read_file(target), old);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1) << "a temporary file was left";
  // Under the limit the same write goes through whole.
  content.resize(2048);
  const std::string fits = on_full_disk(4096, [&] {
    auto f = OutputFile::create(target.string());
    if (!f) return "create: " + f.status().to_string();
    const Status s = f->commit(content);
    return s ? std::string("written") : s.to_string();
  });
  EXPECT_EQ(fits, "written");
  EXPECT_EQ(read_file(target), content);
}

TEST_F(OutputFileTest, NullDeviceIsWrittenInPlace) {
  if (!S_ISCHR(node("/dev/null").mode)) GTEST_SKIP() << "/dev/null is not a character device here";
  const Node before = node("/dev/null");
  const std::string result = testing::in_unprivileged_child([] {
    auto f = OutputFile::create("/dev/null");
    if (!f) return "create: " + f.status().to_string();
    const Status s = f->commit("{}\n");
    return s ? std::string("written") : s.to_string();
  });
  EXPECT_EQ(result, "written");
  EXPECT_TRUE(S_ISCHR(node("/dev/null").mode));
  EXPECT_EQ(node("/dev/null").rdev, before.rdev);
}

TEST_F(OutputFileTest, FifoIsWrittenInPlaceWithNoTemporaryFile) {
  const fs::path fifo = dir / "results.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // The reader end is open first (non-blocking), so opening the writer end cannot wait, whatever the code does.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  {
    auto f = OutputFile::create(fifo.string());
    ASSERT_TRUE(f) << f.status().to_string();
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);  // no temporary file beside it
    ASSERT_TRUE(f->commit("through the pipe\n"));
  }
  char buf[256];
  const ssize_t n = read(reader, buf, sizeof buf);
  close(reader);
  EXPECT_EQ(std::string(buf, n > 0 ? std::size_t(n) : 0), "through the pipe\n");
  EXPECT_TRUE(S_ISFIFO(node(fifo.c_str()).mode));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);
}

TEST_F(OutputFileTest, LinkToARegularFileStaysALink) {
  const fs::path target = dir / "latest.json", link = dir / "out.json";
  { std::ofstream(target) << "old"; }
  fs::create_symlink("latest.json", link);
  {
    auto f = OutputFile::create(link.string());
    ASSERT_TRUE(f) << f.status().to_string();
    ASSERT_TRUE(f->commit("{}\n"));
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(target), "{}\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 2);
}

TEST_F(OutputFileTest, LinkToAnythingElseIsRefusedBeforeTheRun) {
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const fs::path& points_at : {fifo, dir / "missing.json", fs::path("/dev/null")}) {
    const fs::path link = dir / ("link-" + points_at.filename().string());
    fs::create_symlink(points_at, link);
    auto f = OutputFile::create(link.string());
    ASSERT_FALSE(f) << points_at;
    EXPECT_NE(f.status().message().find("--out '" + link.string() + "'"), std::string::npos)
        << f.status().message();
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(fs::read_symlink(link), points_at);
  }
  EXPECT_FALSE(fs::exists(dir / "missing.json"));
  EXPECT_TRUE(S_ISFIFO(node(fifo.c_str()).mode));
}

// Runs `body` with this process's stdout on `path`, then puts stdout back.
template <class F>
void with_stdout_on(const char* path, F body) {
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  dup2(fd, STDOUT_FILENO);
  close(fd);
  body();
  std::fflush(stdout);
  std::clearerr(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
}

TEST_F(OutputFileTest, DashIsStandardOutput) {
  const fs::path captured = dir / "stdout.txt";
  Status s;
  with_stdout_on(captured.c_str(), [&] {
    auto f = OutputFile::create("-");
    s = f ? f->commit("to stdout\n") : f.status();
  });
  EXPECT_TRUE(s) << s.to_string();
  EXPECT_EQ(read_file(captured), "to stdout\n");
  const bool made_a_file = fs::is_regular_file("-");  // not a file named '-' in the working folder
  if (made_a_file) fs::remove("-");
  EXPECT_FALSE(made_a_file);
}

TEST_F(OutputFileTest, DashOnAFullStdoutReportsTheFailure) {
  if (!S_ISCHR(node("/dev/full").mode)) GTEST_SKIP() << "/dev/full is not a character device here";
  Status s;
  with_stdout_on("/dev/full", [&] {
    auto f = OutputFile::create("-");
    s = f ? f->commit(std::string(100000, 'x')) : f.status();
  });
  const bool made_a_file = fs::is_regular_file("-");
  if (made_a_file) fs::remove("-");
  EXPECT_FALSE(made_a_file);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find(std::strerror(ENOSPC)), std::string::npos) << s.message();
}

// A fresh folder of its own for a whole-or-nothing test.
fs::path scratch(const char* name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(OutputFile, AppearsOnlyOnCommit) {
  const fs::path dir = scratch("tileforge_output_commit");
  const fs::path target = dir / "out.json";
  {
    auto f = OutputFile::create(target.string());
    ASSERT_TRUE(f) << f.status().to_string();
    EXPECT_FALSE(fs::exists(target));
    ASSERT_TRUE(f->commit("{}\n"));
  }
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{}\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(OutputFile, LeavesNothingWithoutCommit) {
  const fs::path dir = scratch("tileforge_output_discard");
  {
    auto f = OutputFile::create((dir / "out.json").string());
    ASSERT_TRUE(f);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 0);
  fs::remove_all(dir);
}

TEST(OutputFile, KeepsAnExistingFileUntilCommit) {
  const fs::path dir = scratch("tileforge_output_keep");
  const fs::path target = dir / "out.csv";
  { std::ofstream(target) << "old"; }
  {
    auto f = OutputFile::create(target.string());
    ASSERT_TRUE(f);
  }
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "old");
  fs::remove_all(dir);
}

TEST(OutputFile, RefusesMissingFoldersAndFolders) {
  auto missing = OutputFile::create("/nonexistent/folder/out.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("--out"), std::string::npos);
  auto folder = OutputFile::create(::testing::TempDir());
  ASSERT_FALSE(folder);
  EXPECT_NE(folder.status().message().find("folder"), std::string::npos);
}

}  // namespace
}  // namespace tileforge::cli

// The output rule: what is at a path decides how it is written; only regular files are replaced, links stay links,
// and a link to anything but a regular file is refused.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/output_path.hpp"
#include "support/test_support.hpp"
#include "support/unprivileged.hpp"

namespace tileforge {
namespace {

namespace fs = std::filesystem;

using testing::read_file;

std::ptrdiff_t entries(const fs::path& dir) { return std::distance(fs::directory_iterator(dir), {}); }

bool is_char_device(const char* path) {
  struct stat st {};
  return lstat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

class OutputPathTest : public ::testing::Test {
 protected:
  void SetUp() override { dir = testing::fresh_test_dir("tileforge_output_path_"); }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(OutputPathTest, EachKindOfPath) {
  const fs::path regular = dir / "r.json";
  { std::ofstream(regular) << "old"; }
  auto r = output_path(regular.string(), "--out");
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_EQ(r->kind, OutputKind::replace);
  EXPECT_EQ(r->target, regular.string());
  auto fresh = output_path((dir / "new.json").string(), "--out");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->kind, OutputKind::replace);
  auto dash = output_path("-", "--out");
  ASSERT_TRUE(dash);
  EXPECT_EQ(dash->kind, OutputKind::standard_output);
  if (is_char_device("/dev/null")) {
    auto null = output_path("/dev/null", "--out");
    ASSERT_TRUE(null);
    EXPECT_EQ(null->kind, OutputKind::stream);
  }
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto f = output_path(fifo.string(), "--out");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, OutputKind::stream);
  auto folder = output_path(dir.string(), "--out");
  ASSERT_FALSE(folder);
  EXPECT_NE(folder.status().message().find("folder"), std::string::npos);
  auto empty = output_path("", "--out");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.status().message().find("--out"), std::string::npos);
}

TEST_F(OutputPathTest, LinkToARegularFileIsWrittenThroughAndStaysALink) {
  const fs::path target = dir / "real.json", link = dir / "link.json";
  { std::ofstream(target) << "old"; }
  fs::create_symlink("real.json", link);
  auto p = output_path(link.string(), "--out");
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_EQ(p->kind, OutputKind::replace);
  EXPECT_EQ(fs::path(p->target), fs::canonical(target));
  ASSERT_TRUE(replace_file(link.string(), "new\n", "--out"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), fs::path("real.json"));
  EXPECT_EQ(read_file(target), "new\n");
  EXPECT_EQ(entries(dir), 2);  // no temporary file left
}

TEST_F(OutputPathTest, LinksToAnythingButARegularFileAreRefusedAndKept) {
  const fs::path fifo = dir / "fifo", folder = dir / "folder";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  fs::create_directory(folder);
  struct Case {
    const char* name;
    fs::path points_at;
  };
  std::vector<Case> cases = {{"to-fifo", fifo}, {"to-folder", folder}, {"dangling", dir / "missing.json"},
                             {"loop", dir / "loop"}};
  if (is_char_device("/dev/null")) cases.push_back({"to-device", "/dev/null"});
  for (const Case& c : cases) {
    const fs::path link = dir / c.name;
    fs::create_symlink(c.points_at, link);
    auto p = output_path(link.string(), "--out");
    ASSERT_FALSE(p) << c.name;
    EXPECT_EQ(p.status().code(), Code::invalid_argument) << c.name;
    const std::string& msg = p.status().message();
    EXPECT_NE(msg.find("--out '" + link.string() + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
    EXPECT_FALSE(replace_file(link.string(), "x", "--out")) << c.name;
    EXPECT_TRUE(fs::is_symlink(link)) << c.name;
    EXPECT_EQ(fs::read_symlink(link), c.points_at) << c.name;
  }
  EXPECT_FALSE(fs::exists(dir / "missing.json"));  // a dangling link does not create its target
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(OutputPathTest, ReplaceFileWritesRegularFilesWholeAndNothingElse) {
  const fs::path file = dir / "sub.json";
  { std::ofstream(file) << "old contents, longer than the new"; }
  ASSERT_TRUE(replace_file(file.string(), "{}\n", "TEST"));
  EXPECT_EQ(read_file(file), "{}\n");
  ASSERT_TRUE(replace_file((dir / "fresh.json").string(), "1\n", "TEST"));
  EXPECT_EQ(read_file(dir / "fresh.json"), "1\n");
  EXPECT_EQ(entries(dir), 2);
  const Status missing = replace_file((dir / "no" / "such" / "x.json").string(), "1", "TEST");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("TEST"), std::string::npos);
  // A FIFO is refused at once (not opened, so nothing blocks) and stays a FIFO.
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(replace_file(fifo.string(), "x", "TEST"));
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A device: refused (in an unprivileged child: run as root, a replacing writer would destroy /dev/null).
  if (is_char_device("/dev/null")) {
    const std::string result = testing::in_unprivileged_child([] {
      const Status s = replace_file("/dev/null", "x", "TEST");
      return s ? std::string("replaced") : s.message();
    });
    EXPECT_NE(result.find("TEST '/dev/null' is not a regular file"), std::string::npos) << result;
    EXPECT_TRUE(is_char_device("/dev/null"));
  }
}

}  // namespace
}  // namespace tileforge

// OutputFile: mkstemp in the target folder, fsync, rename; a signal handler removes the temporary file if the
// run is interrupted, so a failed or cancelled run leaves no partial output.
#include "bench/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace tileforge::bench {
namespace {

// The temporary file pending right now, for the signal handler (which may only call async-signal-safe code).
char g_pending[4096];
std::atomic<bool> g_has_pending{false};

extern "C" void remove_pending_and_reraise(int sig) {
  if (g_has_pending.load()) unlink(g_pending);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void set_pending(const std::string& temp) {
  if (temp.size() >= sizeof g_pending) return;
  std::memcpy(g_pending, temp.c_str(), temp.size() + 1);
  g_has_pending.store(true);
  static bool installed = false;
  if (!installed) {
    installed = true;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      if (std::signal(sig, remove_pending_and_reraise) == SIG_IGN) std::signal(sig, SIG_IGN);  // keep nohup's choice
    }
  }
}

void clear_pending() { g_has_pending.store(false); }

}  // namespace

Expected<OutputFile> OutputFile::create(std::string_view path_text, std::string_view what) {
  const std::string path(path_text);
  if (path.empty()) return invalid_argument(fmt::format("{}: empty file name (allowed: a path to a file)", what));
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument(fmt::format("{} '{}' is a folder (allowed: a path to a file)", what, path));
  }
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::string name = ".";
  name += p.filename().string();
  name += ".tmp.XXXXXX";
  std::string temp = (dir / name).string();
  int fd = mkstemp(temp.data());
  if (fd < 0) {
    return Status(Code::io_error, fmt::format("{} '{}': cannot create a file in folder '{}' ({}) (allowed: a path in "
                                              "a writable folder)",
                                              what, path, dir.string(), std::strerror(errno)));
  }
  set_pending(temp);
  return OutputFile(path, temp, fd, std::string(what));
}

OutputFile::OutputFile(std::string path, std::string temp, int fd, std::string what)
    : path_(std::move(path)), temp_(std::move(temp)), what_(std::move(what)), fd_(fd) {}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)), what_(std::move(other.what_)), fd_(other.fd_),
      committed_(other.committed_) {
  other.fd_ = -1;
  other.committed_ = true;  // the moved-from object owns nothing to remove
}

OutputFile::~OutputFile() {
  if (!committed_) discard();
}

void OutputFile::discard() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!temp_.empty()) unlink(temp_.c_str());
  clear_pending();
}

Status OutputFile::commit(std::string_view content) {
  auto fail = [&](const char* step) {
    Status s(Code::io_error, fmt::format("{} '{}': {} failed ({})", what_, path_, step, std::strerror(errno)));
    discard();
    committed_ = true;
    return s;
  };
  if (committed_ || fd_ < 0) return Status(Code::internal, fmt::format("{} '{}' written twice", what_, path_));
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd_, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    done += std::size_t(n);
  }
  // mkstemp creates 0600; results are ordinary files, so give them the usual permissions under the umask.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd_, 0666 & ~mask);
  if (fsync(fd_) != 0) return fail("fsync");
  if (close(fd_) != 0) {
    fd_ = -1;
    return fail("close");
  }
  fd_ = -1;
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) return fail("rename");
  committed_ = true;
  clear_pending();
  return {};
}

}  // namespace tileforge::bench

// OutputFile: mkstemp beside a regular target, fsync, rename; devices, FIFOs and stdout written in place. A signal
// handler removes the temporary file if the run is interrupted, so a failed or cancelled run leaves no partial output.
#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace tileforge::cli {
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
  auto out = output_path(path_text, what);
  if (!out) return out.status();
  if (out->kind == OutputKind::standard_output) return OutputFile(std::move(*out), "", -1, std::string(what));
  if (out->kind == OutputKind::stream) {
    // NOTE: opened as the shell's '>' would (a FIFO waits here for its reader), never created, truncated or replaced.
    const int fd = open(out->target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      return Status(Code::io_error, fmt::format("{} '{}': cannot open it for writing ({})", what, out->path,
                                                std::strerror(errno)));
    }
    return OutputFile(std::move(*out), "", fd, std::string(what));
  }
  // A regular file or a new one (at the link's target when `path` is a symbolic link to a regular file).
  const std::filesystem::path target(out->target);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string name = ".";
  name += target.filename().string();
  name += ".tmp.XXXXXX";
  std::string temp = (dir / name).string();
  int fd = mkstemp(temp.data());
  if (fd < 0) {
    return Status(Code::io_error, fmt::format("{} '{}': cannot create a file in folder '{}' ({}) (allowed: a path in "
                                              "a writable folder)",
                                              what, out->path, dir.string(), std::strerror(errno)));
  }
  set_pending(temp);
  return OutputFile(std::move(*out), temp, fd, std::string(what));
}

OutputFile::OutputFile(OutputPath out, std::string temp, int fd, std::string what)
    : out_(std::move(out)), temp_(std::move(temp)), what_(std::move(what)), fd_(fd) {}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : out_(std::move(other.out_)), temp_(std::move(other.temp_)), what_(std::move(other.what_)), fd_(other.fd_),
      committed_(other.committed_) {
  other.fd_ = -1;
  other.temp_.clear();
  other.committed_ = true;  // the moved-from object owns nothing to remove
}

OutputFile::~OutputFile() {
  if (!committed_) discard();
}

void OutputFile::discard() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!temp_.empty()) {
    unlink(temp_.c_str());
    clear_pending();
  }
}

Status OutputFile::commit(std::string_view content) {
  auto fail = [&](const char* step) {
    Status s(Code::io_error, fmt::format("{} '{}': {} failed ({})", what_, out_.path, step, std::strerror(errno)));
    discard();
    committed_ = true;
    return s;
  };
  if (committed_) return Status(Code::internal, fmt::format("{} '{}' written twice", what_, out_.path));
  if (out_.kind == OutputKind::standard_output) {
    // Through stdio, so that it keeps its place among what the verb printed before.
    committed_ = true;
    if (std::fwrite(content.data(), 1, content.size(), stdout) != content.size() || std::fflush(stdout) != 0) {
      Status s = fail("write");
      std::clearerr(stdout);  // reported here, with its cause: the CLI's final check of stdout need not repeat it
      return s;
    }
    return {};
  }
  if (fd_ < 0) return Status(Code::internal, fmt::format("{} '{}' written twice", what_, out_.path));
  if (!write_all(fd_, content)) return fail("write");
  if (out_.kind == OutputKind::stream) {
    const int closed = close(fd_);
    fd_ = -1;
    if (closed != 0) return fail("close");
    committed_ = true;
    return {};
  }
  // mkstemp creates 0600; results are ordinary files, so give them the usual permissions under the umask.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd_, 0666 & ~mask);
  if (fsync(fd_) != 0) return fail("fsync");
  const int closed = close(fd_);
  fd_ = -1;
  if (closed != 0) return fail("close");
  if (std::rename(temp_.c_str(), out_.target.c_str()) != 0) return fail("rename");
  temp_.clear();
  committed_ = true;
  clear_pending();
  return {};
}

}  // namespace tileforge::cli

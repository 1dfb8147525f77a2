// Output paths: lstat/stat decide the kind; replace_file is the temporary-file-and-rename writer for regular files.
#include "core/output_path.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace tileforge {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAllowed =
    "allowed: a regular file, a symbolic link to one, a new file in an existing folder, a character device, a FIFO, "
    "or '-' for standard output";

const char* describe(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

Expected<OutputPath> output_path(std::string_view path_text, std::string_view what) {
  const std::string path(path_text);
  if (path.empty()) return invalid_argument(fmt::format("{}: empty file name (allowed: a path to a file)", what));
  if (path == "-") return OutputPath{OutputKind::standard_output, path, path};
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return OutputPath{OutputKind::replace, path, path};  // a new file; its folder is checked later
    return Status(Code::io_error, fmt::format("{} '{}': cannot inspect it ({})", what, path, std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode)) {
    // NOTE: a link itself is never renamed over (run as root, that replaced links such as /dev/stdout), and its
    // target is written only when it is a regular file: a dangling link would create a file wherever it points (a
    // planted link in a shared folder), and a link into a device is refused rather than guessed about.
    std::error_code ec;
    const std::string points_at = fs::read_symlink(path, ec).string();
    struct stat target {};
    if (stat(path.c_str(), &target) != 0) {
      const int e = errno;
      if (e == ENOENT) {
        return invalid_argument(fmt::format("{} '{}' is a symbolic link to '{}', which does not exist; it is not "
                                            "followed or replaced ({})",
                                            what, path, points_at, kAllowed));
      }
      return invalid_argument(fmt::format("{} '{}' is a symbolic link that cannot be followed ({}); it is not "
                                          "replaced ({})",
                                          what, path, std::strerror(e), kAllowed));
    }
    if (!S_ISREG(target.st_mode)) {
      return invalid_argument(fmt::format("{} '{}' is a symbolic link to '{}', which is {}, not a regular file; it is "
                                          "not written or replaced ({})",
                                          what, path, points_at, describe(target.st_mode), kAllowed));
    }
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr) {
      return Status(Code::io_error, fmt::format("{} '{}': cannot resolve the symbolic link ({})", what, path,
                                                std::strerror(errno)));
    }
    return OutputPath{OutputKind::replace, path, resolved};
  }
  if (S_ISREG(st.st_mode)) return OutputPath{OutputKind::replace, path, path};
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return OutputPath{OutputKind::stream, path, path};
  if (S_ISDIR(st.st_mode)) {
    return invalid_argument(fmt::format("{} '{}' is a folder (allowed: a path to a file)", what, path));
  }
  return invalid_argument(fmt::format("{} '{}' is {} ({})", what, path, describe(st.st_mode), kAllowed));
}

bool write_all(int fd, std::string_view content) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;  // a write that makes no progress would loop forever
      return false;
    }
    done += std::size_t(n);
  }
  return true;
}

Status replace_file(std::string_view path_text, std::string_view content, std::string_view what) {
  auto out = output_path(path_text, what);
  if (!out) return out.status();
  if (out->kind != OutputKind::replace) {
    return invalid_argument(fmt::format("{} '{}' is not a regular file and is not replaced (allowed: a path to a "
                                        "regular file, or to a new one)",
                                        what, out->path));
  }
  const fs::path target(out->target);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string temp = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = mkstemp(temp.data());
  if (fd < 0) {
    return Status(Code::io_error, fmt::format("{} '{}': cannot create a file in folder '{}' ({}) (allowed: a path in "
                                              "a writable folder)",
                                              what, out->path, dir.string(), std::strerror(errno)));
  }
  auto fail = [&](const char* step) {
    const int e = errno;
    if (fd >= 0) close(fd);
    unlink(temp.c_str());
    return Status(Code::io_error, fmt::format("{} '{}': {} failed ({})", what, out->path, step, std::strerror(e)));
  };
  if (!write_all(fd, content)) return fail("write");
  // mkstemp creates 0600; these are ordinary files, so give them the usual permissions under the umask.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (fsync(fd) != 0) return fail("fsync");
  const int closed = close(fd);
  fd = -1;
  if (closed != 0) return fail("close");
  if (std::rename(temp.c_str(), out->target.c_str()) != 0) return fail("rename");
  return {};
}

}  // namespace tileforge

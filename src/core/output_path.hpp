// The one rule for every file tileforge writes (--out, the host-measurement cache): what is at the path decides how
// it is written, and nothing but a regular file is ever replaced (docs/RELIABILITY.md, "Outputs").
#pragma once

#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace tileforge {

enum class OutputKind {
  standard_output,  // "-": written to stdout
  replace,          // a regular file, or nothing yet: a temporary file beside `target`, renamed over it
  stream,           // a character device or a FIFO: opened and written in place, never replaced
};

struct OutputPath {
  OutputKind kind = OutputKind::replace;
  std::string path;    // as given, for messages
  std::string target;  // where to write: `path`, or the regular file that the symbolic link `path` points at
};

// What is at `path` and how to write it. A symbolic link is written through to its target when that is a regular
// file (the link stays); a link to anything else, or to nothing, is refused, as are folders, block devices and
// sockets. Messages name `what` (the option or variable) and the path.
Expected<OutputPath> output_path(std::string_view path, std::string_view what);

// Writes all of `content` to `fd`, retrying short writes and EINTR; false with errno set when a write fails.
bool write_all(int fd, std::string_view content);

// Replaces the regular file at `path` (or creates it) with `content`: a temporary file beside it, fsync, rename, so
// a reader sees the old file or the new one, never half. Refuses what output_path() refuses, and character devices
// and FIFOs too (a cache or record file must be a file).
Status replace_file(std::string_view path, std::string_view content, std::string_view what);

}  // namespace tileforge

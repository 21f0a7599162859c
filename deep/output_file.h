// Files the user names as outputs, written so that nothing is lost (issue 11):
//
// * A regular file (or a new one) is replaced atomically: the bytes go to
//   PATH.tmp-<pid>-<n> beside it, are flushed to disk, and the temporary is
//   renamed over PATH, so PATH is always the old or the new file, complete.
// * A character device or FIFO (/dev/null, /dev/stdout, a pipe) is written in
//   place: it is never replaced by a regular file.
// * A symbolic link is followed: its target is replaced, the link stays.
// * Anything else (a directory, a socket, a block device) is refused.
// Every write, flush and close is checked: a full disk or /dev/full is an
// Error naming the file and the system's reason, and no temporary is left.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace deep500 {

// Writes the concatenation of `parts` to `path` as above; `what` starts the
// error message (e.g. "--metrics-json").
void write_output_file(const std::string& path, std::initializer_list<std::string_view> parts,
                       const std::string& what);

// For writers that produce a file themselves (HDF5): a fresh temporary path
// beside `path`, and the move of that temporary into place with the rules
// above (a device target gets the temporary's bytes copied in). The
// temporary is removed whether or not the move succeeds.
std::string output_temp_path(const std::string& path);
void install_output_file(const std::string& temp, const std::string& path, const std::string& what);

// Before long work starts: throws Error starting with `what` unless `path`
// can be written as above (its folder exists and is writable, or it is an
// existing writable device; not a directory or another special file).
void check_output_path(const std::string& path, const std::string& what);

// Writes "deep500: " + text + "\n" to stderr in one write(), so that the
// lines of several ranks (or processes) sharing a terminal never interleave.
void print_stderr_line(const std::string& text);

}  // namespace deep500

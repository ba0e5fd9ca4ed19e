//===- OutputFile.h - Writing a tool's output files safely ------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every file a memwall tool writes (-o, --report, SVGs, bundles, dumped
// tensors) goes through OutputFile, so that only a fully successful run
// leaves or replaces an output:
//
// - "-" is stdout, written through; every write is checked.
// - A symlink is followed to its final target (a dangling one's target is
//   created); the link itself stays.
// - A target that exists and is not a regular file (a device such as
//   /dev/null, a FIFO) is opened and written in place, never replaced; so
//   is a file named through /proc (/dev/stdout redirected to a file), which
//   is appended to.
// - Anything else is written to a temporary file beside the target (in the
//   same directory, so rename(2) is atomic), with the mode a new file gets
//   (or the replaced file's mode), and renamed over the target on commit().
//   A failure, or destruction without commit(), removes the temporary and
//   leaves the target as it was.
// - SIGINT, SIGTERM and SIGHUP remove live temporaries, then run the
//   handler that was there before (LLVM's, or the default: the process still
//   dies of the signal).
//
// OutputDirectory does the same for a directory of files (a bundle).
//
// Plain C++17 and POSIX: the runtime builds without LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_OUTPUTFILE_H
#define MEMWALL_RUNTIME_OUTPUTFILE_H

#include "memwall-runtime/Status.h"

#include <cstddef>
#include <string>
#include <vector>

namespace memwall::runtime {

class OutputDirectory;

/// One output file. Errors are Io errors "cannot write [WHAT ]'PATH':
/// REASON"; after the first one, write() and commit() return it again.
class OutputFile {
public:
  OutputFile() = default;
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;
  /// Discards what was written unless commit() succeeded.
  ~OutputFile();

  /// Opens `path` ("-" is stdout). `what` names the output in messages
  /// ("report"); it may be empty.
  Status open(const std::string &path, const std::string &what = "");
  /// Writes `size` bytes, retrying short and interrupted writes; a failure
  /// also removes the temporary.
  Status write(const void *data, size_t size);
  Status write(const std::string &text) {
    return write(text.data(), text.size());
  }
  /// Completes the output: closes it and, for a temporary, renames it over
  /// the target. On failure the target is as it was.
  Status commit();
  /// Drops what was written: removes the temporary; the target is untouched.
  void discard();

  bool isOpen() const { return kind != Kind::Closed; }
  /// The first error, or success.
  const Status &error() const { return firstError; }

private:
  friend class OutputDirectory;
  Status openAs(const std::string &path, const std::string &shownPath,
                const std::string &what);
  /// Records (and returns) the first error, and drops the temporary.
  Status fail(const std::string &reason);
  void removeTemporary();

  enum class Kind { Closed, Stdout, InPlace, Temporary };
  Kind kind = Kind::Closed;
  int fd = -1;
  /// The path as the user wrote it (for messages), the resolved target, and
  /// the temporary renamed onto it.
  std::string shownPath, targetPath, temporaryPath;
  std::string what;
  Status firstError;
  int cleanupSlot = -1;
  /// The signal cleanups done before the temporary was made.
  unsigned cleanupsAtOpen = 0;
};

/// Writes `contents` to `path` through an OutputFile.
Status writeOutputFile(const std::string &path, const std::string &contents,
                       const std::string &what = "");

/// A directory of output files (a bundle), built as a temporary directory
/// beside the target and moved into place on commit(). Only an existing
/// directory that holds the marker file (manifest.json for a bundle) is
/// replaced; anything else at the path is refused.
class OutputDirectory {
public:
  OutputDirectory() = default;
  OutputDirectory(const OutputDirectory &) = delete;
  OutputDirectory &operator=(const OutputDirectory &) = delete;
  /// Removes the temporary directory unless commit() succeeded.
  ~OutputDirectory();

  /// Prepares to write the directory `path`; `what` names it in messages
  /// ("bundle").
  Status open(const std::string &path, const std::string &what,
              const std::string &markerFile);
  /// Opens the file `name` (no '/') of the new directory in `file`; commit
  /// `file` before the directory.
  Status openFile(const std::string &name, OutputFile &file);
  /// Moves the new directory into place, replacing (and then removing) the
  /// old one. On failure the old directory is intact.
  Status commit();
  /// Removes the temporary directory and its files.
  void discard();

  /// The temporary directory being filled ("" when none).
  const std::string &temporaryDirectory() const { return temporaryPath; }

private:
  Status fail(const std::string &reason);

  std::string shownPath, targetPath, temporaryPath;
  std::string what;
  bool replacing = false;
  int cleanupSlot = -1;
  unsigned cleanupsAtOpen = 0;
  /// Cleanup slots of the files opened in the directory.
  std::vector<int> memberSlots;
};

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_OUTPUTFILE_H

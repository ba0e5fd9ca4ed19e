//===- InputLimits.cpp - size and nesting limits on files memwall reads ---===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Support/InputLimits.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace memwall;

static llvm::Error inputError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string formatLimit(uint64_t bytes) {
  return bytes % (uint64_t(1) << 30) == 0
             ? llvm::formatv("{0} GiB", bytes >> 30).str()
             : llvm::formatv("{0} MiB", bytes >> 20).str();
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
memwall::readTextInput(llvm::StringRef path, llvm::StringRef what,
                       uint64_t maxBytes) {
  namespace fs = llvm::sys::fs;
  llvm::StringRef shownPath = path == "-" ? llvm::StringRef("<stdin>") : path;
  fs::file_t file = fs::kInvalidFile;
  if (path == "-") {
    file = fs::getStdinHandle();
  } else if (llvm::Expected<fs::file_t> opened =
                 fs::openNativeFileForRead(path)) {
    file = *opened;
  } else {
    return inputError("cannot read " + what + " '" + path +
                      "': " + llvm::toString(opened.takeError()));
  }
  llvm::scope_exit closeFile([&] {
    if (path != "-")
      fs::closeFile(file);
  });
  fs::file_status status;
  if (std::error_code error = fs::status(file, status))
    return inputError("cannot read " + what + " '" + shownPath +
                      "': " + error.message());
  if (status.type() == fs::file_type::directory_file)
    return inputError("cannot read " + what + " '" + shownPath +
                      "': it is a directory");
  auto tooLarge = [&] {
    return inputError(llvm::formatv("{0} '{1}' is larger than memwall reads "
                                    "({2})",
                                    what, shownPath, formatLimit(maxBytes)));
  };
  // Binary files (and /dev/zero) are not text: refused at the first NUL.
  auto findNul = [&](llvm::StringRef text, size_t base) -> llvm::Error {
    size_t nul = text.find('\0');
    if (nul == llvm::StringRef::npos)
      return llvm::Error::success();
    return inputError(
        llvm::formatv("{0} '{1}' is not a text file (a NUL byte at offset {2})",
                      what, shownPath, base + nul));
  };
  if (status.type() == fs::file_type::regular_file) {
    if (status.getSize() > maxBytes)
      return tooLarge();
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getOpenFile(file, shownPath, status.getSize());
    if (!buffer)
      return inputError("cannot read " + what + " '" + shownPath +
                        "': " + buffer.getError().message());
    if (llvm::Error error = findNul((*buffer)->getBuffer(), 0))
      return std::move(error);
    return std::move(*buffer);
  }
  // Devices, FIFOs and stdin have no size up front: read in chunks, stopping
  // at the cap or the first NUL.
  llvm::SmallString<0> contents;
  for (;;) {
    size_t before = contents.size();
    contents.resize_for_overwrite(before + (1 << 16));
    llvm::Expected<size_t> got = fs::readNativeFile(
        file, llvm::MutableArrayRef<char>(contents.data() + before, 1 << 16));
    if (!got)
      return inputError("cannot read " + what + " '" + shownPath +
                        "': " + llvm::toString(got.takeError()));
    contents.truncate(before + *got);
    if (llvm::Error error =
            findNul(llvm::StringRef(contents).drop_front(before), before))
      return std::move(error);
    if (contents.size() > maxBytes)
      return tooLarge();
    if (*got == 0)
      break;
  }
  return llvm::MemoryBuffer::getMemBufferCopy(contents, shownPath);
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
memwall::readIRInput(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readTextInput(path, "input", kMaxIRInputBytes);
  if (!buffer)
    return buffer.takeError();
  if (llvm::Error error =
          checkNestingDepth((*buffer)->getBuffer(),
                            (*buffer)->getBufferIdentifier(), TextSyntax::MLIR))
    return std::move(error);
  return buffer;
}

llvm::Error memwall::checkNestingDepth(llvm::StringRef text,
                                       llvm::StringRef bufferName,
                                       TextSyntax syntax, unsigned maxDepth) {
  unsigned depth = 0;
  unsigned line = 1;
  size_t lineStart = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"':
      // Skip the string literal; an unterminated one is the parser's error.
      for (++i; i < e && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n') {
          ++line;
          lineStart = i + 1;
        }
      }
      break;
    case '/':
      if (syntax == TextSyntax::MLIR && i + 1 < e && text[i + 1] == '/')
        while (i + 1 < e && text[i + 1] != '\n')
          ++i;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (c == '<' && syntax == TextSyntax::JSON)
        break;
      if (++depth > maxDepth)
        return inputError(llvm::formatv(
            "{0}:{1}:{2}: nested deeper than {3} levels; memwall does not "
            "parse inputs nested this deeply",
            bufferName, line, i - lineStart + 1, maxDepth));
      break;
    case ')':
    case ']':
    case '}':
    case '>':
      // "->" is an arrow, not a closing bracket.
      if (c == '>' &&
          (syntax == TextSyntax::JSON || (i > 0 && text[i - 1] == '-')))
        break;
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return llvm::Error::success();
}

llvm::Error memwall::checkRunsWithoutCrashing(llvm::function_ref<void()> work,
                                              llvm::StringRef what) {
  pid_t child = fork();
  if (child < 0)
    return llvm::Error::success(); // cannot isolate: run it in-process
  if (child == 0) {
    int devNull = open("/dev/null", O_WRONLY);
    if (devNull >= 0)
      dup2(devNull, STDERR_FILENO);
    work();
    _exit(0);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return llvm::Error::success();
  // The child exits 0 whatever `work` concluded: anything else is a crash
  // (a signal, or a sanitizer's or crash handler's exit status).
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return llvm::Error::success();
  std::string how =
      WIFSIGNALED(status)
          ? llvm::formatv("signal {0}, {1}", WTERMSIG(status),
                          strsignal(WTERMSIG(status)))
                .str()
          : llvm::formatv("exit status {0}", WEXITSTATUS(status)).str();
  return inputError(what + " crashed a child process (" + how +
                    "); the file is damaged or hostile");
}

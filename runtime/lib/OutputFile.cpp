//===- OutputFile.cpp - Writing a tool's output files safely --------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/OutputFile.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <ftw.h>
#include <mutex>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

namespace memwall::runtime {
namespace {

//===----------------------------------------------------------------------===//
// Removing live temporaries on SIGINT, SIGTERM and SIGHUP
//===----------------------------------------------------------------------===//

enum SlotState : int { kFree, kFilling, kFile, kDirectory };

/// The registry of live temporaries: fixed-size, so that the signal handler
/// reads it without allocating or locking.
struct CleanupSlot {
  std::atomic<int> state{kFree};
  /// The process that registered it: a forked child removes none of its
  /// parent's files.
  pid_t owner = 0;
  char path[PATH_MAX];
};
static_assert(std::atomic<int>::is_always_lock_free,
              "the signal handler reads the slots' state");

constexpr int kNumCleanupSlots = 32;
CleanupSlot cleanupSlots[kNumCleanupSlots];

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kNumCleanupSignals = sizeof(kCleanupSignals) / sizeof(int);
struct sigaction previousActions[kNumCleanupSignals];
std::atomic<bool> handlerInstalled[kNumCleanupSignals];
std::mutex installMutex;
/// How many times the handler removed the temporaries: an output open
/// across one has lost its temporary (when the signal did not end the
/// process, as one ignored before LLVM took it does not).
std::atomic<unsigned> cleanupsDone{0};

/// Async-signal-safe (getpid, unlink, rmdir and atomics only).
void removeRegisteredTemporaries() {
  pid_t self = getpid();
  // Files first, so that a bundle's directory is empty when it is removed.
  for (int kind : {kFile, kDirectory}) {
    for (CleanupSlot &slot : cleanupSlots) {
      int state = kind;
      if (slot.state.load() != kind || slot.owner != self)
        continue;
      if (kind == kFile)
        unlink(slot.path);
      else
        rmdir(slot.path);
      slot.state.compare_exchange_strong(state, kFree);
    }
  }
}

void removeTemporariesAndReraise(int signal) {
  int savedErrno = errno;
  removeRegisteredTemporaries();
  cleanupsDone.fetch_add(1);
  for (int i = 0; i < kNumCleanupSignals; ++i) {
    if (kCleanupSignals[i] != signal)
      continue;
    handlerInstalled[i].store(false);
    sigaction(signal, &previousActions[i], nullptr);
  }
  // Pending until this handler returns; then the previous handler (LLVM's,
  // say) or the default action gets it, and the exit status is the signal's.
  raise(signal);
  errno = savedErrno;
}

void installCleanupHandlers() {
  std::lock_guard<std::mutex> lock(installMutex);
  static bool atExitRegistered = false;
  if (!atExitRegistered) {
    // exit() without unwinding (LLVM's report_fatal_error) skips the
    // destructors that would remove the temporaries.
    std::atexit(removeRegisteredTemporaries);
    atExitRegistered = true;
  }
  for (int i = 0; i < kNumCleanupSignals; ++i) {
    if (handlerInstalled[i].load())
      continue;
    struct sigaction current;
    if (sigaction(kCleanupSignals[i], nullptr, &current) != 0)
      continue;
    // An ignored signal (under nohup, say) stays ignored.
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN)
      continue;
    // Saved before installing: the handler restores it.
    previousActions[i] = current;
    struct sigaction action = {};
    action.sa_handler = removeTemporariesAndReraise;
    sigemptyset(&action.sa_mask);
    // A process the signal does not end (it was ignored before LLVM took
    // it) goes on without EINTR from the calls it was in.
    action.sa_flags = SA_RESTART;
    if (sigaction(kCleanupSignals[i], &action, nullptr) == 0)
      handlerInstalled[i].store(true);
  }
}

const char *const kInterrupted =
    "interrupted by a signal, which removed the unfinished file";

/// Registers `path` (a kFile or kDirectory) for removal on a signal. Returns
/// the slot, or -1 when the registry is full or the path too long (the
/// output is still written; only a signal would leave it behind).
int registerForCleanup(const std::string &path, SlotState kind) {
  std::string absolute = path;
  if (!path.empty() && path[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)))
      absolute = std::string(cwd) + "/" + path;
  }
  if (absolute.size() >= PATH_MAX)
    return -1;
  installCleanupHandlers();
  for (int i = 0; i < kNumCleanupSlots; ++i) {
    int expected = kFree;
    if (!cleanupSlots[i].state.compare_exchange_strong(expected, kFilling))
      continue;
    std::memcpy(cleanupSlots[i].path, absolute.c_str(), absolute.size() + 1);
    cleanupSlots[i].owner = getpid();
    cleanupSlots[i].state.store(kind);
    return i;
  }
  return -1;
}

void unregisterForCleanup(int &slot) {
  if (slot >= 0)
    cleanupSlots[slot].state.store(kFree);
  slot = -1;
}

/// Defers SIGINT, SIGTERM and SIGHUP in this thread while a temporary is
/// created and registered, or renamed and unregistered, so the handler never
/// sees half of either.
class CleanupSignalsBlocked {
public:
  CleanupSignalsBlocked() {
    sigset_t signals;
    sigemptyset(&signals);
    for (int signal : kCleanupSignals)
      sigaddset(&signals, signal);
    pthread_sigmask(SIG_BLOCK, &signals, &previous);
  }
  ~CleanupSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous, nullptr); }

private:
  sigset_t previous;
};

//===----------------------------------------------------------------------===//
// Paths
//===----------------------------------------------------------------------===//

std::string describeErrno(int error) { return std::strerror(error); }

/// Six characters for a temporary's name; O_EXCL, not this, makes the name
/// unique.
std::string uniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  timespec now = {};
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t bits = static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ULL ^
                  static_cast<uint64_t>(now.tv_nsec) ^
                  (static_cast<uint64_t>(now.tv_sec) << 32) ^
                  (counter.fetch_add(1) + 1) * 0xbf58476d1ce4e5b9ULL;
  bits = (bits ^ (bits >> 30)) * 0xbf58476d1ce4e5b9ULL;
  bits = (bits ^ (bits >> 27)) * 0x94d049bb133111ebULL;
  bits ^= bits >> 31;
  static constexpr char alphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string suffix;
  for (int i = 0; i < 6; ++i, bits /= 62)
    suffix += alphabet[bits % 62];
  return suffix;
}

/// Splits `path` into its directory ("" or ending in '/') and its last
/// component.
void splitPath(const std::string &path, std::string &directory,
               std::string &name) {
  size_t slash = path.rfind('/');
  directory = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  name = slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Whether the link `path` is in /proc, as /dev/stdout's target
/// /proc/self/fd/1 is: it names an open file (a pipe, a deleted file, the
/// shell's redirection), not a path to replace.
bool isProcLink(const std::string &path) {
  std::string parent, name;
  splitPath(path, parent, name);
  char *real = realpath(parent.empty() ? "." : parent.c_str(), nullptr);
  bool inProc = real && std::strncmp(real, "/proc/", 6) == 0;
  std::free(real);
  return inProc;
}

/// Follows `path` through symlinks to the path to create or replace; a
/// dangling link gives its target. Stops at a link in /proc, setting
/// `throughProc`. Returns 0 or an errno value.
int resolveSymlinks(const std::string &path, std::string &resolved,
                    bool &throughProc) {
  resolved = path;
  throughProc = false;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat status;
    if (lstat(resolved.c_str(), &status) != 0 || !S_ISLNK(status.st_mode))
      return 0;
    if (isProcLink(resolved)) {
      throughProc = true;
      return 0;
    }
    // /proc links report size 0.
    std::string target(status.st_size > 0 ? status.st_size + 1 : PATH_MAX,
                       '\0');
    ssize_t length = readlink(resolved.c_str(), &target[0], target.size());
    if (length < 0)
      return errno;
    if (static_cast<size_t>(length) >= target.size())
      return ENAMETOOLONG;
    target.resize(length);
    if (target.empty())
      return ENOENT;
    if (target[0] == '/') {
      resolved = target;
    } else {
      std::string directory, name;
      splitPath(resolved, directory, name);
      resolved = directory + target;
    }
  }
  return ELOOP;
}

/// Creates `.<name><tag>XXXXXX` beside `target` (a file open for writing,
/// or a directory) with the mode the kernel gives a new one (0666 or 0777
/// less the umask, default ACLs included), registered for cleanup. Returns
/// the file's descriptor (0 for a directory) or -1 with errno set.
int createBeside(const std::string &target, const char *tag, bool directory,
                 std::string &path, int &slot) {
  std::string parent, name;
  splitPath(target, parent, name);
  // Room for the prefix and suffix within NAME_MAX.
  name = name.substr(0, 200);
  for (int attempt = 0; attempt < 100; ++attempt) {
    path = parent + "." + name + tag + uniqueSuffix();
    CleanupSignalsBlocked blocked;
    int fd = directory ? mkdir(path.c_str(), 0777)
                       : open(path.c_str(),
                              O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST)
        continue;
      return -1;
    }
    slot = registerForCleanup(path, directory ? kDirectory : kFile);
    return fd;
  }
  errno = EEXIST;
  return -1;
}

int removeEntry(const char *path, const struct stat *, int type, struct FTW *) {
  return type == FTW_DP ? rmdir(path) : unlink(path);
}

/// Removes `path` and everything under it. Returns 0 or an errno value.
int removeTree(const std::string &path) {
  if (nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) == 0)
    return 0;
  return errno ? errno : EIO;
}

std::string formatError(const std::string &what, const std::string &path,
                        const std::string &reason) {
  return "cannot write " + (what.empty() ? "" : what + " ") + "'" + path +
         "': " + reason;
}

} // namespace

//===----------------------------------------------------------------------===//
// OutputFile
//===----------------------------------------------------------------------===//

OutputFile::~OutputFile() { discard(); }

Status OutputFile::open(const std::string &path, const std::string &what) {
  return openAs(path, path == "-" ? "<stdout>" : path, what);
}

Status OutputFile::openAs(const std::string &path, const std::string &shownPath,
                          const std::string &what) {
  discard();
  this->shownPath = shownPath;
  this->what = what;
  firstError = Status();
  if (path == "-") {
    kind = Kind::Stdout;
    fd = STDOUT_FILENO;
    return Status();
  }

  struct stat status;
  bool exists = stat(path.c_str(), &status) == 0;
  if (!exists && errno != ENOENT)
    return fail(describeErrno(errno));
  if (exists && S_ISDIR(status.st_mode))
    return fail(describeErrno(EISDIR));
  bool throughProc = false;
  if (int error = resolveSymlinks(path, targetPath, throughProc))
    return fail(describeErrno(error));
  if (exists && (!S_ISREG(status.st_mode) || throughProc)) {
    // A device (/dev/null), a FIFO, a terminal: written in place; renaming
    // over it would replace it with a regular file. A file open as
    // /dev/stdout is appended to, as stdout itself would be.
    int append = S_ISREG(status.st_mode) ? O_APPEND : 0;
    fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | append);
    if (fd < 0)
      return fail(describeErrno(errno));
    kind = Kind::InPlace;
    return Status();
  }
  if (throughProc)
    return fail(describeErrno(ENOENT));
  std::string parent, name;
  splitPath(targetPath, parent, name);
  if (name.empty() || name == "." || name == "..")
    return fail(describeErrno(EISDIR));
  cleanupsAtOpen = cleanupsDone.load();
  fd = createBeside(targetPath, ".tmp-", /*directory=*/false, temporaryPath,
                    cleanupSlot);
  if (fd < 0)
    return fail(describeErrno(errno));
  kind = Kind::Temporary;
  // A replaced file keeps its mode.
  if (exists && fchmod(fd, status.st_mode & 07777) != 0)
    return fail(describeErrno(errno));
  return Status();
}

Status OutputFile::write(const void *data, size_t size) {
  if (!firstError.ok())
    return firstError;
  if (kind == Kind::Closed)
    return fail("the output is not open");
  const char *bytes = static_cast<const char *>(data);
  while (size > 0) {
    // Linux writes at most about 2 GiB at once.
    ssize_t written = ::write(fd, bytes, size < (1u << 30) ? size : (1u << 30));
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return fail(describeErrno(errno));
    }
    if (written == 0)
      return fail(describeErrno(EIO));
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return Status();
}

Status OutputFile::commit() {
  if (!firstError.ok())
    return firstError;
  switch (kind) {
  case Kind::Closed:
    return fail("the output is not open");
  case Kind::Stdout:
    // Unbuffered: every write was checked.
    kind = Kind::Closed;
    return Status();
  case Kind::InPlace: {
    int result = close(fd);
    fd = -1;
    kind = Kind::Closed;
    if (result != 0 && errno != EINTR)
      return fail(describeErrno(errno));
    return Status();
  }
  case Kind::Temporary:
    break;
  }
  // A file system may report a failed write only at close.
  int result = close(fd);
  fd = -1;
  if (result != 0 && errno != EINTR)
    return fail(describeErrno(errno));
  CleanupSignalsBlocked blocked;
  if (cleanupsDone.load() != cleanupsAtOpen)
    return fail(kInterrupted);
  if (rename(temporaryPath.c_str(), targetPath.c_str()) != 0)
    return fail(describeErrno(errno));
  unregisterForCleanup(cleanupSlot);
  temporaryPath.clear();
  kind = Kind::Closed;
  return Status();
}

void OutputFile::discard() {
  if (kind == Kind::InPlace && fd >= 0)
    close(fd);
  if (kind == Kind::Temporary)
    removeTemporary();
  fd = -1;
  kind = Kind::Closed;
}

void OutputFile::removeTemporary() {
  if (fd >= 0)
    close(fd);
  fd = -1;
  CleanupSignalsBlocked blocked;
  if (!temporaryPath.empty())
    unlink(temporaryPath.c_str());
  unregisterForCleanup(cleanupSlot);
  temporaryPath.clear();
}

Status OutputFile::fail(const std::string &reason) {
  if (firstError.ok())
    firstError = Status(ErrorCode::Io, formatError(what, shownPath, reason));
  discard();
  return firstError;
}

Status writeOutputFile(const std::string &path, const std::string &contents,
                       const std::string &what) {
  OutputFile file;
  if (Status error = file.open(path, what); !error.ok())
    return error;
  if (Status error = file.write(contents); !error.ok())
    return error;
  return file.commit();
}

//===----------------------------------------------------------------------===//
// OutputDirectory
//===----------------------------------------------------------------------===//

OutputDirectory::~OutputDirectory() { discard(); }

Status OutputDirectory::open(const std::string &path, const std::string &what,
                             const std::string &markerFile) {
  discard();
  shownPath = path;
  this->what = what;
  replacing = false;
  struct stat status;
  if (stat(path.c_str(), &status) == 0) {
    struct stat marker;
    if (!S_ISDIR(status.st_mode) ||
        stat((path + "/" + markerFile).c_str(), &marker) != 0)
      return Status(ErrorCode::Io, "'" + path + "' exists and is not a " +
                                       what + ": not replacing it");
    replacing = true;
  } else if (errno != ENOENT) {
    return fail(describeErrno(errno));
  }

  bool throughProc = false;
  if (int error = resolveSymlinks(path, targetPath, throughProc))
    return fail(describeErrno(error));
  // "model.bundle/" names model.bundle.
  while (targetPath.size() > 1 && targetPath.back() == '/')
    targetPath.pop_back();
  cleanupsAtOpen = cleanupsDone.load();
  if (createBeside(targetPath, ".tmp-", /*directory=*/true, temporaryPath,
                   cleanupSlot) < 0) {
    temporaryPath.clear();
    return fail(describeErrno(errno));
  }
  // A replaced directory keeps its mode.
  if (replacing && chmod(temporaryPath.c_str(), status.st_mode & 07777) != 0)
    return fail(describeErrno(errno));
  return Status();
}

Status OutputDirectory::openFile(const std::string &name, OutputFile &file) {
  if (temporaryPath.empty())
    return fail("the output is not open");
  std::string path = temporaryPath + "/" + name;
  // Registered before it exists, so that a signal removes it once
  // committed into the directory (and the directory can then go).
  memberSlots.push_back(registerForCleanup(path, kFile));
  return file.openAs(path, shownPath + "/" + name, "");
}

Status OutputDirectory::commit() {
  if (temporaryPath.empty())
    return fail("the output is not open");
  // The old directory is moved aside, the new one in, and only then the old
  // one removed; a signal in between waits.
  CleanupSignalsBlocked blocked;
  if (cleanupsDone.load() != cleanupsAtOpen)
    return fail(kInterrupted);
  std::string aside;
  if (replacing) {
    // An empty directory of a unique name that rename(2) may replace.
    int asideSlot = -1;
    if (createBeside(targetPath, ".old-", /*directory=*/true, aside,
                     asideSlot) < 0)
      return fail(describeErrno(errno));
    unregisterForCleanup(asideSlot);
    if (rename(targetPath.c_str(), aside.c_str()) != 0) {
      int error = errno;
      rmdir(aside.c_str());
      return fail(describeErrno(error));
    }
  }
  if (rename(temporaryPath.c_str(), targetPath.c_str()) != 0) {
    int error = errno;
    if (replacing)
      rename(aside.c_str(), targetPath.c_str());
    return fail(describeErrno(error));
  }
  for (int &slot : memberSlots)
    unregisterForCleanup(slot);
  memberSlots.clear();
  unregisterForCleanup(cleanupSlot);
  temporaryPath.clear();
  if (replacing)
    if (int error = removeTree(aside))
      return Status(ErrorCode::Io,
                    "wrote " + what + " '" + shownPath +
                        "' but cannot remove the old one, moved to '" + aside +
                        "': " + describeErrno(error));
  return Status();
}

void OutputDirectory::discard() {
  CleanupSignalsBlocked blocked;
  if (!temporaryPath.empty())
    removeTree(temporaryPath);
  for (int &slot : memberSlots)
    unregisterForCleanup(slot);
  memberSlots.clear();
  unregisterForCleanup(cleanupSlot);
  temporaryPath.clear();
}

Status OutputDirectory::fail(const std::string &reason) {
  discard();
  return Status(ErrorCode::Io, formatError(what, shownPath, reason));
}

} // namespace memwall::runtime

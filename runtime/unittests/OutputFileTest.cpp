//===- OutputFileTest.cpp - Tests of the safe output files ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/OutputFile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace memwall::runtime;
namespace fs = std::filesystem;

namespace {

/// Stands in for the handler LLVM's InitLLVM installs before a tool opens
/// any output: installed before main, so the cleanup handler finds it and
/// runs it after removing the temporaries.
volatile sig_atomic_t earlierHandlerExitStatus = 0;
/// > 0: exit with it; < 0: return (the process goes on); 0: die of it.
void earlierHandler(int signal) {
  if (earlierHandlerExitStatus > 0)
    _exit(earlierHandlerExitStatus);
  if (earlierHandlerExitStatus < 0)
    return;
  std::signal(signal, SIG_DFL);
  raise(signal);
}
[[maybe_unused]] const bool earlierHandlerInstalled =
    std::signal(SIGINT, earlierHandler) != SIG_ERR;

/// A signal ignored by whoever started the tests (nohup) is not one the
/// cleanup handler takes; a child that raises it must see it.
void stopIgnoring(int signal) {
  struct sigaction current;
  if (sigaction(signal, nullptr, &current) == 0 &&
      current.sa_handler == SIG_IGN)
    std::signal(signal, SIG_DFL);
}

class OutputFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/memwall-output-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string path(const std::string &name) const { return dir + "/" + name; }
  static std::string read(const std::string &file) {
    std::ifstream stream(file, std::ios::binary);
    std::stringstream contents;
    contents << stream.rdbuf();
    return contents.str();
  }
  static void write(const std::string &file, const std::string &contents) {
    std::ofstream(file, std::ios::binary) << contents;
  }
  /// The names in `directory`, sorted.
  static std::vector<std::string> list(const std::string &directory) {
    std::vector<std::string> names;
    for (const fs::directory_entry &entry : fs::directory_iterator(directory))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  static bool hasTemporary(const std::string &directory) {
    for (const std::string &name : list(directory))
      if (name.find(".tmp-") != std::string::npos ||
          name.find(".old-") != std::string::npos)
        return true;
    return false;
  }

  std::string dir;
};

TEST_F(OutputFileTest, ANewFileAppearsOnlyOnCommit) {
  OutputFile file;
  ASSERT_EQ(file.open(path("new.txt")).message(), "");
  ASSERT_EQ(file.write("hello").message(), "");
  EXPECT_FALSE(fs::exists(path("new.txt")));
  // The temporary is beside the target.
  EXPECT_TRUE(hasTemporary(dir));
  ASSERT_EQ(file.commit().message(), "");
  EXPECT_EQ(read(path("new.txt")), "hello");
  EXPECT_EQ(list(dir), std::vector<std::string>{"new.txt"});
}

TEST_F(OutputFileTest, ANewFileGetsTheModeOfANewFile) {
  mode_t previous = umask(027);
  {
    OutputFile file;
    ASSERT_EQ(file.open(path("new.txt")).message(), "");
    ASSERT_EQ(file.commit().message(), "");
  }
  umask(previous);
  struct stat status;
  ASSERT_EQ(stat(path("new.txt").c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0640u);
}

TEST_F(OutputFileTest, AnExistingFileIsUntouchedUntilCommitAndAfterADiscard) {
  write(path("out.txt"), "old");
  ASSERT_EQ(chmod(path("out.txt").c_str(), 0604), 0);
  {
    OutputFile file;
    ASSERT_EQ(file.open(path("out.txt")).message(), "");
    ASSERT_EQ(file.write("new contents").message(), "");
    EXPECT_EQ(read(path("out.txt")), "old");
    // Destroyed without commit: discarded.
  }
  EXPECT_EQ(read(path("out.txt")), "old");
  EXPECT_EQ(list(dir), std::vector<std::string>{"out.txt"});

  OutputFile file;
  ASSERT_EQ(file.open(path("out.txt")).message(), "");
  ASSERT_EQ(file.write("new contents").message(), "");
  EXPECT_EQ(read(path("out.txt")), "old");
  ASSERT_EQ(file.commit().message(), "");
  EXPECT_EQ(read(path("out.txt")), "new contents");
  // The replaced file's mode is kept.
  struct stat status;
  ASSERT_EQ(stat(path("out.txt").c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0604u);
  EXPECT_EQ(list(dir), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputFileTest, AFailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  // A file size limit stands in for a full disk; in a child, so that the
  // limit does not outlive the test.
  write(path("out.txt"), "old");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {1024, 1024};
    setrlimit(RLIMIT_FSIZE, &limit);
    OutputFile file;
    if (!file.open(path("out.txt")).ok())
      _exit(2);
    std::string error = file.write(std::string(4096, 'x')).message();
    bool named = error == "cannot write '" + path("out.txt") +
                              "': " + std::strerror(EFBIG);
    // Later writes and the commit report the first error again.
    bool sticky = file.write("more").message() == error &&
                  file.commit().message() == error;
    _exit(named && sticky ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read(path("out.txt")), "old");
  EXPECT_EQ(list(dir), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputFileTest, DevFullIsAnErrorAndStaysACharacterDevice) {
  OutputFile file;
  ASSERT_EQ(file.open("/dev/full", "report").message(), "");
  std::string error = file.write("x").message();
  EXPECT_EQ(error, std::string("cannot write report '/dev/full': ") +
                       std::strerror(ENOSPC));
  EXPECT_EQ(file.commit().message(), error);
  struct stat status;
  ASSERT_EQ(lstat("/dev/full", &status), 0);
  EXPECT_TRUE(S_ISCHR(status.st_mode));
}

TEST_F(OutputFileTest, DevNullIsWrittenInPlace) {
  EXPECT_EQ(writeOutputFile("/dev/null", "anything").message(), "");
  struct stat status;
  ASSERT_EQ(lstat("/dev/null", &status), 0);
  EXPECT_TRUE(S_ISCHR(status.st_mode));
}

TEST_F(OutputFileTest, StdoutWritesAreChecked) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int full = open("/dev/full", O_WRONLY);
    if (full < 0 || dup2(full, STDOUT_FILENO) < 0)
      _exit(2);
    std::string error = writeOutputFile("-", "text").message();
    _exit(error == std::string("cannot write '<stdout>': ") +
                       std::strerror(ENOSPC)
              ? 0
              : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(OutputFileTest, DevStdoutRedirectedToAFileAppendsToThatFile) {
  // `tool -o /dev/stdout > file`: the shell's file is written, not replaced
  // (which would orphan what the process writes to stdout itself).
  write(path("redirected.txt"), "first\n");
  struct stat before;
  ASSERT_EQ(stat(path("redirected.txt").c_str(), &before), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int file = open(path("redirected.txt").c_str(), O_WRONLY | O_APPEND);
    if (file < 0 || dup2(file, STDOUT_FILENO) < 0)
      _exit(2);
    _exit(writeOutputFile("/dev/stdout", "second\n").ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read(path("redirected.txt")), "first\nsecond\n");
  struct stat after;
  ASSERT_EQ(stat(path("redirected.txt").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(list(dir), std::vector<std::string>{"redirected.txt"});
}

TEST_F(OutputFileTest, AFifoIsWrittenThrough) {
  ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read(path("fifo")); });
  EXPECT_EQ(writeOutputFile(path("fifo"), "through the pipe").message(), "");
  reader.join();
  EXPECT_EQ(received, "through the pipe");
  struct stat status;
  ASSERT_EQ(lstat(path("fifo").c_str(), &status), 0);
  EXPECT_TRUE(S_ISFIFO(status.st_mode));
  EXPECT_EQ(list(dir), std::vector<std::string>{"fifo"});
}

TEST_F(OutputFileTest, ASymlinkStaysASymlinkAndItsTargetGetsTheContents) {
  ASSERT_EQ(mkdir(path("real").c_str(), 0700), 0);
  write(path("real/target.txt"), "old");
  ASSERT_EQ(symlink("real/target.txt", path("link").c_str()), 0);
  ASSERT_EQ(symlink("link", path("link-to-link").c_str()), 0);
  EXPECT_EQ(writeOutputFile(path("link-to-link"), "new").message(), "");
  struct stat status;
  ASSERT_EQ(lstat(path("link").c_str(), &status), 0);
  EXPECT_TRUE(S_ISLNK(status.st_mode));
  ASSERT_EQ(lstat(path("link-to-link").c_str(), &status), 0);
  EXPECT_TRUE(S_ISLNK(status.st_mode));
  EXPECT_EQ(read(path("real/target.txt")), "new");
  EXPECT_EQ(list(path("real")), std::vector<std::string>{"target.txt"});

  // A dangling link's target is created.
  ASSERT_EQ(symlink("real/created.txt", path("dangling").c_str()), 0);
  EXPECT_EQ(writeOutputFile(path("dangling"), "created").message(), "");
  ASSERT_EQ(lstat(path("dangling").c_str(), &status), 0);
  EXPECT_TRUE(S_ISLNK(status.st_mode));
  EXPECT_EQ(read(path("real/created.txt")), "created");
}

TEST_F(OutputFileTest, ARelativePathGetsItsTemporaryInItsDirectory) {
  ASSERT_EQ(mkdir(path("sub").c_str(), 0700), 0);
  char previous[4096];
  ASSERT_NE(getcwd(previous, sizeof(previous)), nullptr);
  ASSERT_EQ(chdir(dir.c_str()), 0);
  OutputFile file;
  std::string opened = file.open("sub/x").message();
  bool temporaryInSub = hasTemporary(path("sub"));
  std::string written = file.write("relative").message();
  std::string committed = file.commit().message();
  ASSERT_EQ(chdir(previous), 0);
  EXPECT_EQ(opened, "");
  EXPECT_TRUE(temporaryInSub);
  EXPECT_EQ(written, "");
  EXPECT_EQ(committed, "");
  EXPECT_EQ(read(path("sub/x")), "relative");
  EXPECT_EQ(list(dir), std::vector<std::string>{"sub"});
  EXPECT_EQ(list(path("sub")), std::vector<std::string>{"x"});
}

TEST_F(OutputFileTest, FailuresNameThePathAndLeaveNothing) {
  std::string missing = path("no-such-dir/out.txt");
  EXPECT_EQ(writeOutputFile(missing, "x", "report").message(),
            "cannot write report '" + missing + "': " + std::strerror(ENOENT));
  ASSERT_EQ(mkdir(path("taken").c_str(), 0700), 0);
  EXPECT_EQ(writeOutputFile(path("taken"), "x").message(),
            "cannot write '" + path("taken") + "': " + std::strerror(EISDIR));
  EXPECT_EQ(list(dir), std::vector<std::string>{"taken"});
  EXPECT_TRUE(list(path("taken")).empty());
}

/// Runs `body` in a child and returns its wait status.
template <typename Body> int inChild(Body body) {
  pid_t child = fork();
  if (child == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

TEST_F(OutputFileTest, SIGTERMRemovesTheTemporaryAndKillsTheProcess) {
  write(path("out.txt"), "old");
  int status = inChild([&] {
    stopIgnoring(SIGTERM);
    OutputFile file;
    if (!file.open(path("out.txt")).ok() || !file.write("new").ok())
      _exit(2);
    raise(SIGTERM);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(read(path("out.txt")), "old");
  EXPECT_EQ(list(dir), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputFileTest, SIGINTRunsTheHandlerThatWasThereBefore) {
  int status = inChild([&] {
    earlierHandlerExitStatus = 42;
    OutputFile file;
    if (!file.open(path("out.txt")).ok())
      _exit(2);
    raise(SIGINT);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 42);
  EXPECT_TRUE(list(dir).empty());
}

TEST_F(OutputFileTest, AnOutputOpenAcrossASignalThatDidNotKillIsAnError) {
  // A handler that returns (LLVM's, for a signal ignored before it took it)
  // leaves the process running after the temporaries were removed: the
  // commit says why the output is lost.
  write(path("out.txt"), "old");
  int status = inChild([&] {
    earlierHandlerExitStatus = -1;
    OutputFile file;
    if (!file.open(path("out.txt")).ok() || !file.write("new").ok())
      _exit(2);
    raise(SIGINT);
    std::string expected = "cannot write '" + path("out.txt") +
                           "': interrupted by a signal, which removed the "
                           "unfinished file";
    _exit(file.commit().message() == expected ? 0 : 3);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read(path("out.txt")), "old");
  EXPECT_EQ(list(dir), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputFileTest, SIGHUPRemovesATemporaryDirectoryAndItsFiles) {
  int status = inChild([&] {
    stopIgnoring(SIGHUP);
    OutputDirectory bundle;
    OutputFile manifest, kernels;
    if (!bundle.open(path("b.bundle"), "bundle", "manifest.json").ok() ||
        !bundle.openFile("manifest.json", manifest).ok() ||
        !manifest.write("{}").ok() || !manifest.commit().ok() ||
        !bundle.openFile("kernels.ptx", kernels).ok() ||
        !kernels.write("ptx").ok())
      _exit(2);
    raise(SIGHUP);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGHUP);
  EXPECT_TRUE(list(dir).empty());
}

TEST_F(OutputFileTest, ADirectoryAppearsOnlyOnCommit) {
  OutputDirectory bundle;
  ASSERT_EQ(bundle.open(path("b.bundle"), "bundle", "manifest.json").message(),
            "");
  OutputFile manifest;
  ASSERT_EQ(bundle.openFile("manifest.json", manifest).message(), "");
  ASSERT_EQ(manifest.write("{}").message(), "");
  ASSERT_EQ(manifest.commit().message(), "");
  EXPECT_FALSE(fs::exists(path("b.bundle")));
  ASSERT_EQ(bundle.commit().message(), "");
  EXPECT_EQ(read(path("b.bundle/manifest.json")), "{}");
  EXPECT_EQ(list(dir), std::vector<std::string>{"b.bundle"});
}

TEST_F(OutputFileTest, ADirectoryReplacesAnOldBundle) {
  ASSERT_EQ(mkdir(path("b.bundle").c_str(), 0750), 0);
  write(path("b.bundle/manifest.json"), "old");
  write(path("b.bundle/kernels.ptx"), "old ptx");
  {
    OutputDirectory bundle;
    ASSERT_EQ(
        bundle.open(path("b.bundle"), "bundle", "manifest.json").message(), "");
    OutputFile manifest;
    ASSERT_EQ(bundle.openFile("manifest.json", manifest).message(), "");
    ASSERT_EQ(manifest.write("new").message(), "");
    ASSERT_EQ(manifest.commit().message(), "");
    EXPECT_EQ(read(path("b.bundle/manifest.json")), "old");
    ASSERT_EQ(bundle.commit().message(), "");
  }
  EXPECT_EQ(read(path("b.bundle/manifest.json")), "new");
  // The old bundle is gone as a whole, not merged into.
  EXPECT_EQ(list(path("b.bundle")), std::vector<std::string>{"manifest.json"});
  struct stat status;
  ASSERT_EQ(stat(path("b.bundle").c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0750u);
  EXPECT_EQ(list(dir), std::vector<std::string>{"b.bundle"});
}

TEST_F(OutputFileTest, ADirectoryRefusesToReplaceWhatIsNotABundle) {
  write(path("file"), "keep");
  ASSERT_EQ(mkdir(path("plain-dir").c_str(), 0700), 0);
  write(path("plain-dir/data"), "keep");
  for (const char *name : {"file", "plain-dir"}) {
    OutputDirectory bundle;
    EXPECT_EQ(bundle.open(path(name), "bundle", "manifest.json").message(),
              "'" + path(name) +
                  "' exists and is not a bundle: not replacing it");
  }
  EXPECT_EQ(read(path("file")), "keep");
  EXPECT_EQ(read(path("plain-dir/data")), "keep");
  EXPECT_EQ(list(dir), (std::vector<std::string>{"file", "plain-dir"}));
}

TEST_F(OutputFileTest, AnUncommittedDirectoryLeavesNothing) {
  ASSERT_EQ(mkdir(path("b.bundle").c_str(), 0700), 0);
  write(path("b.bundle/manifest.json"), "old");
  {
    OutputDirectory bundle;
    ASSERT_EQ(
        bundle.open(path("b.bundle"), "bundle", "manifest.json").message(), "");
    OutputFile manifest;
    ASSERT_EQ(bundle.openFile("manifest.json", manifest).message(), "");
    ASSERT_EQ(manifest.write("new").message(), "");
    ASSERT_EQ(manifest.commit().message(), "");
    // A later file fails: the caller returns without committing.
  }
  EXPECT_EQ(read(path("b.bundle/manifest.json")), "old");
  EXPECT_EQ(list(dir), std::vector<std::string>{"b.bundle"});

  OutputDirectory missingParent;
  std::string target = path("no-such-dir/b.bundle");
  EXPECT_EQ(missingParent.open(target, "bundle", "manifest.json").message(),
            "cannot write bundle '" + target + "': " + std::strerror(ENOENT));
  EXPECT_EQ(list(dir), std::vector<std::string>{"b.bundle"});
}

TEST_F(OutputFileTest, ADirectoryThroughARelativePath) {
  ASSERT_EQ(mkdir(path("sub").c_str(), 0700), 0);
  char previous[4096];
  ASSERT_NE(getcwd(previous, sizeof(previous)), nullptr);
  ASSERT_EQ(chdir(dir.c_str()), 0);
  std::string result;
  {
    OutputDirectory bundle;
    OutputFile manifest;
    result = bundle.open("sub/x.bundle", "bundle", "manifest.json").message();
    if (result.empty())
      result = bundle.openFile("manifest.json", manifest).message();
    if (result.empty())
      result = writeOutputFile(bundle.temporaryDirectory() + "/extra", "e")
                   .message();
    if (result.empty())
      result = manifest.write("{}").message();
    if (result.empty())
      result = manifest.commit().message();
    if (result.empty())
      result = bundle.commit().message();
  }
  ASSERT_EQ(chdir(previous), 0);
  EXPECT_EQ(result, "");
  EXPECT_EQ(list(path("sub")), std::vector<std::string>{"x.bundle"});
  EXPECT_EQ(list(path("sub/x.bundle")),
            (std::vector<std::string>{"extra", "manifest.json"}));
}

} // namespace

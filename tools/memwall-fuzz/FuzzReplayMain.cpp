//===- FuzzReplayMain.cpp - run a fuzz target over files, without libFuzzer
//===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Normal (non-fuzzing) builds link each fuzz target with this main, so the
// seed corpus and every reproducer of a fixed bug run as a ctest on every
// build, under whatever sanitizers that build uses:
//
//   memwall-ir-fuzzer test/Fuzz/corpus/memwall-ir-fuzzer
//   build/examples/gpt2-prefill.mlir
//
// Arguments are files or directories (their regular files, sorted). A crash
// is the failure, as under libFuzzer; the target's return value is ignored.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <string>
#include <sys/stat.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);

static bool readWholeFile(const std::string &path, std::vector<uint8_t> &out) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return false;
  uint8_t chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, file)) > 0)
    out.insert(out.end(), chunk, chunk + got);
  bool ok = !std::ferror(file);
  std::fclose(file);
  return ok;
}

static void collect(const std::string &path, std::vector<std::string> &files) {
  struct stat status;
  if (stat(path.c_str(), &status) != 0) {
    std::fprintf(stderr, "fuzz replay: error: cannot read '%s'\n",
                 path.c_str());
    std::exit(1);
  }
  if (!S_ISDIR(status.st_mode)) {
    files.push_back(path);
    return;
  }
  DIR *directory = opendir(path.c_str());
  if (!directory)
    return;
  std::vector<std::string> entries;
  while (dirent *entry = readdir(directory))
    if (entry->d_name[0] != '.')
      entries.push_back(path + "/" + entry->d_name);
  closedir(directory);
  std::sort(entries.begin(), entries.end());
  for (const std::string &entry : entries)
    collect(entry, files);
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    collect(argv[i], files);
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 1;
  }
  for (const std::string &file : files) {
    std::vector<uint8_t> data;
    if (!readWholeFile(file, data)) {
      std::fprintf(stderr, "fuzz replay: error: cannot read '%s'\n",
                   file.c_str());
      return 1;
    }
    // Announced first, so a crash names its input.
    std::fprintf(stderr, "replaying %s\n", file.c_str());
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  std::printf("replayed %zu inputs without a crash\n", files.size());
  return 0;
}

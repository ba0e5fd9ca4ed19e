//===- NcclApiTest.cpp - Tests of the ranks of a run and NCCL's loader ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/NcclApi.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <thread>
#include <unistd.h>

// Where NCCL's own header is at hand, NcclApi.h's copy of its ABI must agree
// with it (memwall-run itself never includes it: GPU machines may lack it).
#if __has_include(<nccl.h>) && __has_include(<cuda_runtime.h>)
#include <nccl.h>
namespace ours = memwall::runtime::nccl;
static_assert(ours::ncclSuccess == ::ncclSuccess);
static_assert(ours::ncclFloat16 == ::ncclFloat16);
static_assert(ours::ncclFloat32 == ::ncclFloat32);
static_assert(ours::ncclBfloat16 == ::ncclBfloat16);
static_assert(ours::ncclSum == ::ncclSum);
static_assert(sizeof(ours::ncclUniqueId) == sizeof(::ncclUniqueId));
static_assert(sizeof(ours::ncclResult_t) == sizeof(::ncclResult_t));
static_assert(sizeof(ours::ncclDataType_t) == sizeof(::ncclDataType_t));
static_assert(sizeof(ours::ncclRedOp_t) == sizeof(::ncclRedOp_t));
#endif

using namespace memwall::runtime;

namespace {

/// Sets (or, with null, unsets) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old, hadValue = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (hadValue)
      setenv(name, saved.c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::string saved;
  bool hadValue = false;
};

/// A fresh directory, removed with what it holds.
class TempDir {
public:
  TempDir() {
    char pattern[] = "/tmp/memwall-nccl-test-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() {
    for (const std::string &name : entries())
      unlink((path + "/" + name).c_str());
    rmdir(path.c_str());
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    if (DIR *dir = opendir(path.c_str())) {
      while (dirent *entry = readdir(dir))
        if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
          names.push_back(entry->d_name);
      closedir(dir);
    }
    return names;
  }
  std::string path;
};

nccl::ncclUniqueId makeId(char fill) {
  nccl::ncclUniqueId id;
  for (size_t i = 0; i < sizeof(id.internal); ++i)
    id.internal[i] = static_cast<char>(fill + i % 7);
  return id;
}

Status parse(const char *world, const char *rank, const char *idFile,
             RankConfig &config) {
  return parseRankConfig(world, rank, idFile, config);
}

TEST(RankConfig, UnsetIsOneRank) {
  RankConfig config;
  config.worldSize = 5;
  ASSERT_TRUE(parse(nullptr, nullptr, nullptr, config).ok());
  EXPECT_EQ(config.worldSize, 1);
  EXPECT_EQ(config.rank, 0);
  EXPECT_EQ(config.idFile, "");
  // A world of one needs no id file, even when one is named.
  ASSERT_TRUE(parse("1", "0", "/tmp/unused", config).ok());
  EXPECT_EQ(config.idFile, "");
}

TEST(RankConfig, ReadsWorldRankAndIdFile) {
  RankConfig config;
  ASSERT_EQ(parse("4", "3", "/shared/id", config).message(), "");
  EXPECT_EQ(config.worldSize, 4);
  EXPECT_EQ(config.rank, 3);
  EXPECT_EQ(config.idFile, "/shared/id");
}

TEST(RankConfig, WorldMustBeAPositiveInteger) {
  RankConfig config;
  Status status = parse("two", nullptr, nullptr, config);
  EXPECT_EQ(status.code(), ErrorCode::Ranks);
  EXPECT_EQ(status.message(),
            "MEMWALL_WORLD_SIZE must be a positive integer (the number of "
            "ranks: memwall-run processes, one per device), not 'two'");
  for (const char *bad :
       {"0", "-1", "+2", " 2", "2 ", "2x", "", "1e3", "99999999999"})
    EXPECT_NE(parse(bad, nullptr, "/id", config)
                  .message()
                  .find(std::string("MEMWALL_WORLD_SIZE must be a positive "
                                    "integer")),
              std::string::npos)
        << bad;
}

TEST(RankConfig, RankMustLieInTheWorld) {
  RankConfig config;
  EXPECT_EQ(parse("2", "2", "/id", config).message(),
            "MEMWALL_RANK must be an integer from 0 to 1 (MEMWALL_WORLD_SIZE "
            "is 2), not '2'");
  EXPECT_EQ(parse(nullptr, "1", nullptr, config).message(),
            "MEMWALL_RANK must be an integer from 0 to 0 (MEMWALL_WORLD_SIZE "
            "is 1), not '1'");
  for (const char *bad : {"-1", "one", "", "0x1"})
    EXPECT_EQ(parse("2", bad, "/id", config).code(), ErrorCode::Ranks) << bad;
}

TEST(RankConfig, WorldAboveOneNeedsAnIdFile) {
  RankConfig config;
  std::string expected =
      "MEMWALL_WORLD_SIZE is 2 but MEMWALL_NCCL_ID_FILE is not set: rank 0 "
      "writes NCCL's unique id to that file for the other ranks (a path "
      "every rank can read, fresh for each run)";
  EXPECT_EQ(parse("2", "1", nullptr, config).message(), expected);
  EXPECT_EQ(parse("2", "1", "", config).message(), expected);
}

Manifest withAllReduce(int64_t groupSize) {
  Manifest manifest;
  Step step;
  step.kind = StepKind::AllReduce;
  step.name = "reduce_1";
  step.allReduce.groupSize = groupSize;
  manifest.steps.push_back(step);
  return manifest;
}

TEST(RanksForBundle, BundlesWithoutAllReduceIgnoreTheEnvironment) {
  ScopedEnv world("MEMWALL_WORLD_SIZE", "abc");
  Manifest manifest;
  manifest.steps.emplace_back(); // a kernel step
  RankConfig config;
  EXPECT_TRUE(ranksForBundle(manifest, config).ok());
  EXPECT_EQ(config.worldSize, 1);
}

TEST(RanksForBundle, EveryGroupMustBeTheWorld) {
  ScopedEnv world("MEMWALL_WORLD_SIZE", nullptr);
  ScopedEnv rank("MEMWALL_RANK", nullptr);
  RankConfig config;
  EXPECT_TRUE(ranksForBundle(withAllReduce(1), config).ok());
  Status status = ranksForBundle(withAllReduce(2), config);
  EXPECT_EQ(status.code(), ErrorCode::Ranks);
  EXPECT_EQ(status.message(),
            "step 'reduce_1' sums over a group of 2 devices (group_size 2), "
            "but this run has 1 rank (MEMWALL_WORLD_SIZE, default 1): run 2 "
            "memwall-run processes, one per device, each with "
            "MEMWALL_WORLD_SIZE=2, its own MEMWALL_RANK (0 to 1) and the same "
            "MEMWALL_NCCL_ID_FILE");
  {
    ScopedEnv twoRanks("MEMWALL_WORLD_SIZE", "2");
    ScopedEnv rankOne("MEMWALL_RANK", "1");
    ScopedEnv idFile("MEMWALL_NCCL_ID_FILE", "/shared/id");
    ASSERT_EQ(ranksForBundle(withAllReduce(2), config).message(), "");
    EXPECT_EQ(config.worldSize, 2);
    EXPECT_EQ(config.rank, 1);
    EXPECT_EQ(config.idFile, "/shared/id");
    EXPECT_EQ(ranksForBundle(withAllReduce(1), config).message(),
              "step 'reduce_1' sums over a group of 1 device (group_size 1), "
              "but this run has 2 ranks (MEMWALL_WORLD_SIZE, default 1): run "
              "it as one memwall-run process, without MEMWALL_WORLD_SIZE");
    // A malformed variable is reported before any group.
    ScopedEnv badRank("MEMWALL_RANK", "7");
    EXPECT_NE(ranksForBundle(withAllReduce(1), config)
                  .message()
                  .find("MEMWALL_RANK must be an integer from 0 to 1"),
              std::string::npos);
  }
}

TEST(NcclId, PublishedIdIsReadBackWhole) {
  TempDir dir;
  std::string path = dir.path + "/id";
  nccl::ncclUniqueId written = makeId('a'), read = makeId('z');
  ASSERT_EQ(publishNcclId(path, written).message(), "");
  // Renamed into place: no temporary is left beside it.
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"id"});
  RankConfig config{2, 1, path};
  ASSERT_EQ(waitForNcclId(path, 1, config, read).message(), "");
  EXPECT_EQ(std::memcmp(read.internal, written.internal, sizeof(read.internal)),
            0);
}

TEST(NcclId, WaitsForAnIdPublishedLater) {
  TempDir dir;
  std::string path = dir.path + "/id";
  nccl::ncclUniqueId written = makeId('A'), read = makeId('z');
  std::thread rank0([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(publishNcclId(path, written).ok());
  });
  RankConfig config{2, 1, path};
  Status status = waitForNcclId(path, 30, config, read);
  rank0.join();
  ASSERT_EQ(status.message(), "");
  EXPECT_EQ(std::memcmp(read.internal, written.internal, sizeof(read.internal)),
            0);
}

TEST(NcclId, WaitingTimesOutNamingTheFileAndTheRanks) {
  TempDir dir;
  std::string path = dir.path + "/id";
  nccl::ncclUniqueId id;
  RankConfig config{3, 2, path};
  auto start = std::chrono::steady_clock::now();
  Status status = waitForNcclId(path, 0.05, config, id);
  EXPECT_GE(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(50));
  EXPECT_EQ(status.code(), ErrorCode::Ranks);
  EXPECT_EQ(status.message(),
            "rank 2 of 3 waited 0.05 s for rank 0 to write NCCL's unique id "
            "to '" +
                path +
                "' (MEMWALL_NCCL_ID_FILE): start rank 0 with the same "
                "MEMWALL_WORLD_SIZE and MEMWALL_NCCL_ID_FILE");
}

TEST(NcclId, AFileOfAnotherSizeIsNoId) {
  TempDir dir;
  std::string path = dir.path + "/id";
  nccl::ncclUniqueId id;
  RankConfig config{2, 1, path};
  std::ofstream(path) << "short";
  EXPECT_EQ(waitForNcclId(path, 1, config, id).message(),
            "'" + path +
                "' (MEMWALL_NCCL_ID_FILE) has 5 bytes, not 128 bytes: it is "
                "no NCCL unique id");
  std::ofstream(path) << std::string(200, 'x');
  EXPECT_EQ(waitForNcclId(path, 1, config, id).message(),
            "'" + path +
                "' (MEMWALL_NCCL_ID_FILE) has more than 128 bytes: it is no "
                "NCCL unique id");
}

TEST(Nccl, MissingLibraryNamesThePathAndTheVariable) {
  ScopedEnv library("MEMWALL_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  Nccl nccl;
  Status status = nccl.load();
  EXPECT_EQ(status.code(), ErrorCode::Nccl);
  EXPECT_EQ(status.message().rfind("cannot load NCCL from "
                                   "'/nonexistent/libnccl.so.2' "
                                   "(MEMWALL_NCCL_LIBRARY): ",
                                   0),
            0u)
      << status.message();
}

TEST(Nccl, LibraryWithoutNcclsSymbolsIsUnusable) {
  ScopedEnv library("MEMWALL_NCCL_LIBRARY", "libm.so.6");
  Nccl nccl;
  EXPECT_EQ(nccl.load().message(), "the NCCL library 'libm.so.6' is "
                                   "unusable: it has no symbol ncclGetVersion");
}

TEST(Nccl, VersionCodesOldAndNew) {
  EXPECT_EQ(ncclVersionString(22703), "2.27.3");
  EXPECT_EQ(ncclVersionString(21003), "2.10.3");
  EXPECT_EQ(ncclVersionString(2804), "2.8.4"); // before 2.9's new encoding
  EXPECT_LT(2804, kNcclBfloat16Version);
  EXPECT_LT(20906, kNcclBfloat16Version); // 2.9.6
}

TEST(Nccl, DataTypesAreNcclsValues) {
  EXPECT_EQ(ncclTypeOf(DType::F32), 7);
  EXPECT_EQ(ncclTypeOf(DType::F16), 6);
  EXPECT_EQ(ncclTypeOf(DType::BF16), 9);
}

} // namespace

//===- NcclApi.cpp - NCCL, loaded at run time, and the ranks of a run -----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/NcclApi.h"
#include "memwall-runtime/OutputFile.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <thread>
#include <type_traits>
#include <unistd.h>

namespace memwall::runtime {

namespace {

Status ranksError(const std::string &message) {
  return Status(ErrorCode::Ranks, message);
}

/// Parses a decimal integer in [0, INT_MAX] with nothing around it.
bool parseNonNegative(const char *text, int &value) {
  if (!text || *text < '0' || *text > '9')
    return false;
  errno = 0;
  char *end = nullptr;
  long long parsed = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || parsed > INT_MAX)
    return false;
  value = static_cast<int>(parsed);
  return true;
}

const char *orEmpty(const char *text) { return text ? text : ""; }

std::string plural(int count, const char *noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

} // namespace

Status Nccl::load() {
  const char *configured = std::getenv("MEMWALL_NCCL_LIBRARY");
  bool fromEnvironment = configured && *configured;
  path = fromEnvironment ? configured : kDefaultNcclLibrary;
  // RTLD_LOCAL: nothing else in the process should bind to these symbols.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    return Status(
        ErrorCode::Nccl,
        "cannot load NCCL from '" + path + "' " +
            (fromEnvironment
                 ? std::string("(MEMWALL_NCCL_LIBRARY)")
                 : std::string("(set MEMWALL_NCCL_LIBRARY to a "
                               "libnccl.so.2, e.g. PyTorch's "
                               "site-packages/nvidia/nccl/lib/libnccl.so.2)")) +
            ": " + (reason ? reason : "unknown dlopen error"));
  }
  // The first missing symbol, into `missing`.
  auto resolve = [&](auto &function, const char *name, std::string &missing) {
    if (void *symbol = dlsym(library, name))
      function =
          reinterpret_cast<std::remove_reference_t<decltype(function)>>(symbol);
    else if (missing.empty())
      missing = name;
  };
  std::string missing;
  resolve(getVersion, "ncclGetVersion", missing);
  resolve(getUniqueId, "ncclGetUniqueId", missing);
  resolve(commInitRank, "ncclCommInitRank", missing);
  resolve(allReduce, "ncclAllReduce", missing);
  resolve(commDestroy, "ncclCommDestroy", missing);
  resolve(getErrorString, "ncclGetErrorString", missing);
  if (!missing.empty())
    return Status(ErrorCode::Nccl, "the NCCL library '" + path +
                                       "' is unusable: it has no symbol " +
                                       missing);
  std::string optional;
  resolve(getLastError, "ncclGetLastError", optional);
  return Status();
}

std::string Nccl::describe(nccl::ncclResult_t result) const {
  const char *text = getErrorString ? getErrorString(result) : nullptr;
  std::string description = text ? text : "NCCL error";
  description += " (" + std::to_string(result) + ")";
  if (getLastError)
    if (const char *details = getLastError(nullptr); details && *details) {
      // One line, as every memwall-run error is.
      std::string line = details;
      for (char &c : line)
        if (c == '\n')
          c = ' ';
      description += ": " + line;
    }
  return description;
}

Status parseRankConfig(const char *worldSize, const char *rank,
                       const char *idFile, RankConfig &config) {
  config = RankConfig();
  if (worldSize &&
      (!parseNonNegative(worldSize, config.worldSize) || config.worldSize < 1))
    return ranksError(
        "MEMWALL_WORLD_SIZE must be a positive integer (the number of "
        "ranks: memwall-run processes, one per device), not '" +
        std::string(worldSize) + "'");
  if (rank &&
      (!parseNonNegative(rank, config.rank) || config.rank >= config.worldSize))
    return ranksError("MEMWALL_RANK must be an integer from 0 to " +
                      std::to_string(config.worldSize - 1) +
                      " (MEMWALL_WORLD_SIZE is " +
                      std::to_string(config.worldSize) + "), not '" +
                      std::string(rank) + "'");
  if (config.worldSize > 1 && !*orEmpty(idFile))
    return ranksError(
        "MEMWALL_WORLD_SIZE is " + std::to_string(config.worldSize) +
        " but MEMWALL_NCCL_ID_FILE is not set: rank 0 writes NCCL's unique "
        "id to that file for the other ranks (a path every rank can read, "
        "fresh for each run)");
  if (config.worldSize > 1)
    config.idFile = idFile;
  return Status();
}

Status ranksForBundle(const Manifest &manifest, RankConfig &config) {
  config = RankConfig();
  const Step *first = nullptr;
  for (const Step &step : manifest.steps)
    if (step.kind == StepKind::AllReduce) {
      first = &step;
      break;
    }
  // Only all-reduces involve other ranks.
  if (!first)
    return Status();
  if (Status error = parseRankConfig(
          std::getenv("MEMWALL_WORLD_SIZE"), std::getenv("MEMWALL_RANK"),
          std::getenv("MEMWALL_NCCL_ID_FILE"), config);
      !error.ok())
    return error;
  for (const Step &step : manifest.steps) {
    if (step.kind != StepKind::AllReduce ||
        step.allReduce.groupSize == config.worldSize)
      continue;
    // Validated: at least 1. A group too large for an int can never match.
    int64_t group = step.allReduce.groupSize;
    std::string message =
        "step '" + step.name + "' sums over a group of " +
        std::to_string(group) + (group == 1 ? " device" : " devices") +
        " (group_size " + std::to_string(group) + "), but this run has " +
        plural(config.worldSize, "rank") + " (MEMWALL_WORLD_SIZE, default 1): ";
    if (group == 1)
      message += "run it as one memwall-run process, without "
                 "MEMWALL_WORLD_SIZE";
    else
      message += "run " + std::to_string(group) +
                 " memwall-run processes, one per device, each with "
                 "MEMWALL_WORLD_SIZE=" +
                 std::to_string(group) + ", its own MEMWALL_RANK (0 to " +
                 std::to_string(group - 1) +
                 ") and the same MEMWALL_NCCL_ID_FILE";
    return ranksError(message);
  }
  return Status();
}

Status publishNcclId(const std::string &path, const nccl::ncclUniqueId &id) {
  return writeOutputFile(path, std::string(id.internal, sizeof(id.internal)),
                         "the NCCL unique id (MEMWALL_NCCL_ID_FILE)");
}

Status waitForNcclId(const std::string &path, double timeoutSeconds,
                     const RankConfig &config, nccl::ncclUniqueId &id) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeoutSeconds));
  std::string where = "'" + path + "' (MEMWALL_NCCL_ID_FILE)";
  while (true) {
    // Rank 0 renames the whole id into place: the file is complete or absent.
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char bytes[sizeof(id.internal) + 1];
      size_t got = 0;
      int readErrno = 0;
      while (got < sizeof(bytes)) {
        ssize_t count = read(fd, bytes + got, sizeof(bytes) - got);
        if (count < 0 && errno == EINTR)
          continue;
        if (count < 0)
          readErrno = errno;
        if (count <= 0)
          break;
        got += static_cast<size_t>(count);
      }
      close(fd);
      if (readErrno != 0)
        return ranksError("cannot read " + where + ": " +
                          std::strerror(readErrno));
      if (got != sizeof(id.internal))
        return ranksError(where + " has " +
                          (got > sizeof(id.internal)
                               ? std::string("more than ")
                               : std::to_string(got) + " bytes, not ") +
                          std::to_string(sizeof(id.internal)) +
                          " bytes: it is no NCCL unique id");
      std::memcpy(id.internal, bytes, sizeof(id.internal));
      return Status();
    }
    if (errno != ENOENT)
      return ranksError("cannot open " + where + ": " + std::strerror(errno));
    if (Clock::now() >= deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", timeoutSeconds);
  return ranksError("rank " + std::to_string(config.rank) + " of " +
                    std::to_string(config.worldSize) + " waited " + seconds +
                    " s for rank 0 to write NCCL's unique id to " + where +
                    ": start rank 0 with the same MEMWALL_WORLD_SIZE and "
                    "MEMWALL_NCCL_ID_FILE");
}

std::string ncclVersionString(int code) {
  int major = code >= 10000 ? code / 10000 : code / 1000;
  int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(code % 100);
}

nccl::ncclDataType_t ncclTypeOf(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return nccl::ncclBfloat16;
  case DType::F16:
    return nccl::ncclFloat16;
  default:
    return nccl::ncclFloat32; // validation admits only f32, bf16 and f16
  }
}

} // namespace memwall::runtime

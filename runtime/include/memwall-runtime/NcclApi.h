//===- NcclApi.h - NCCL at run time, and the ranks of a run -----*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A bundle's all_reduce steps run through NCCL's ncclAllReduce, one
// memwall-run process (a rank) per device. memwall-run neither links NCCL nor
// needs its headers (GPU machines often have NCCL only inside PyTorch's
// wheel): it dlopens the library and declares the few types and entry points
// it calls itself. The ranks come from the environment (MEMWALL_WORLD_SIZE,
// MEMWALL_RANK, MEMWALL_NCCL_ID_FILE; docs/runtime.md, "All-reduce steps"),
// and are checked against the bundle before any device is opened. Free of
// CUDA headers, so that those checks build and run everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_NCCLAPI_H
#define MEMWALL_RUNTIME_NCCLAPI_H

#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/Status.h"

#include <string>

// cuda.h's CUstream (and cudaStream_t) is a pointer to this.
struct CUstream_st;

namespace memwall::runtime {

namespace nccl {
// NCCL's documented C ABI (nccl.h of NCCL 2.x), declared here because no
// NCCL header may be present: the subset memwall-run calls, with NCCL's
// names and values. Its enums are C enums, passed as int.
using ncclResult_t = int;
constexpr ncclResult_t ncclSuccess = 0;
/// Opaque: NCCL's communicator.
struct ncclComm;
using ncclComm_t = ncclComm *;
/// NCCL_UNIQUE_ID_BYTES = 128; passed by value to ncclCommInitRank.
struct ncclUniqueId {
  char internal[128];
};
using ncclDataType_t = int;
constexpr ncclDataType_t ncclFloat16 = 6;
constexpr ncclDataType_t ncclFloat32 = 7;
/// Since NCCL 2.10.
constexpr ncclDataType_t ncclBfloat16 = 9;
using ncclRedOp_t = int;
constexpr ncclRedOp_t ncclSum = 0;

using GetVersionFn = ncclResult_t (*)(int *version);
using GetUniqueIdFn = ncclResult_t (*)(ncclUniqueId *uniqueId);
using CommInitRankFn = ncclResult_t (*)(ncclComm_t *comm, int nranks,
                                        ncclUniqueId commId, int rank);
using AllReduceFn = ncclResult_t (*)(const void *sendbuff, void *recvbuff,
                                     size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm,
                                     CUstream_st *stream);
using CommDestroyFn = ncclResult_t (*)(ncclComm_t comm);
using GetErrorStringFn = const char *(*)(ncclResult_t result);
/// Since NCCL 2.13: the last error's details ("Duplicate GPU detected ...").
using GetLastErrorFn = const char *(*)(ncclComm_t comm);
} // namespace nccl

/// The library loaded when $MEMWALL_NCCL_LIBRARY is unset.
constexpr const char *kDefaultNcclLibrary = "libnccl.so.2";
/// How long a rank other than 0 waits for rank 0's NCCL unique id.
constexpr double kNcclIdTimeoutSeconds = 60;
/// NCCL's version code (NCCL_VERSION(2, 10, 0)) from which it sums bf16.
constexpr int kNcclBfloat16Version = 21000;

struct Nccl {
  nccl::GetVersionFn getVersion = nullptr;
  nccl::GetUniqueIdFn getUniqueId = nullptr;
  nccl::CommInitRankFn commInitRank = nullptr;
  nccl::AllReduceFn allReduce = nullptr;
  nccl::CommDestroyFn commDestroy = nullptr;
  nccl::GetErrorStringFn getErrorString = nullptr;
  nccl::GetLastErrorFn getLastError = nullptr; // optional
  /// The library dlopened.
  std::string path;

  /// dlopens $MEMWALL_NCCL_LIBRARY, else libnccl.so.2, and resolves every
  /// entry point. Fails with Nccl naming the path tried.
  Status load();
  /// "unhandled system error (run with NCCL_DEBUG=INFO for details) (2)",
  /// with ncclGetLastError's details when the library has it.
  std::string describe(nccl::ncclResult_t result) const;
};

/// The ranks of a run: this process is rank `rank` of `worldSize`, one
/// memwall-run process per device.
struct RankConfig {
  int worldSize = 1;
  int rank = 0;
  /// Where rank 0 leaves the NCCL unique id for the others; empty (and
  /// unused) for a world of one.
  std::string idFile;
};

/// Reads the values of MEMWALL_WORLD_SIZE (default 1), MEMWALL_RANK (default
/// 0) and MEMWALL_NCCL_ID_FILE, each null when unset. Fails with Ranks on a
/// world below 1, a rank outside it, a non-number, or a world above 1
/// without an id file.
Status parseRankConfig(const char *worldSize, const char *rank,
                       const char *idFile, RankConfig &config);

/// The ranks of this run, for `manifest` (validated): from the environment
/// when it has an all_reduce step (else one rank, the environment unread),
/// every all_reduce step's group_size the world size. Fails with Ranks.
Status ranksForBundle(const Manifest &manifest, RankConfig &config);

/// Writes `id` to `path` through a temporary file renamed over it, so that
/// a reader sees all of it or nothing. Fails with Ranks.
Status publishNcclId(const std::string &path, const nccl::ncclUniqueId &id);

/// Waits up to `timeoutSeconds` for `path` to appear and reads the id from
/// it. Fails with Ranks (timed out, or a file that is no id).
Status waitForNcclId(const std::string &path, double timeoutSeconds,
                     const RankConfig &config, nccl::ncclUniqueId &id);

/// "2.27.3" for ncclGetVersion's code (27 * 100 + 3 + 20000; before 2.9,
/// 2.8.4 was 2804).
std::string ncclVersionString(int code);

/// NCCL's type of `dtype` (f32, bf16 or f16: what validation admits).
nccl::ncclDataType_t ncclTypeOf(DType dtype);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_NCCLAPI_H

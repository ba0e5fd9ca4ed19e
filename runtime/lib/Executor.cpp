//===- Executor.cpp - Runs a bundle on the GPU ----------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Executor.h"
#include "memwall-runtime/Checked.h"

#include "memwall-runtime/CudaApi.h"
#include "memwall-runtime/GemmPlan.h"
#include "memwall-runtime/NcclApi.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unistd.h>

namespace memwall::runtime {

namespace {

// Kernels may use this much dynamic shared memory without opting in.
constexpr int64_t kDefaultDynamicSharedBytes = 48 * 1024;

cudaDataType cudaTypeOf(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  default:
    return CUDA_R_32F; // validation admits only f32, bf16 and f16
  }
}

cublasLtEpilogue_t cublasEpilogueOf(Epilogue epilogue) {
  switch (epilogue) {
  case Epilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::Relu:
    return CUBLASLT_EPILOGUE_RELU;
  case Epilogue::ReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case Epilogue::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case Epilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// The largest power of two, at most 256, dividing the start of every batch
// matrix: cuBLASLt's heuristic must not pick kernels assuming more.
uint32_t alignmentOf(int64_t offsetBytes, int64_t strideBytes,
                     int32_t batchCount) {
  uint64_t bits = static_cast<uint64_t>(offsetBytes) | 256;
  if (batchCount > 1 && strideBytes > 0)
    bits |= static_cast<uint64_t>(strideBytes);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

bool failed(const Status &error) { return !error.ok(); }

struct PreparedStep {
  // kernel
  CUfunction function = nullptr;
  std::vector<CUdeviceptr> argValues;
  std::vector<void *> params; // pointers into argValues
  /// Device copies of the step's encoded tensor maps (argValues point here).
  std::vector<CUdeviceptr> tensorMaps;
  // gemm
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layoutA = nullptr, layoutB = nullptr,
                         layoutC = nullptr, layoutD = nullptr;
  cublasLtMatmulAlgo_t algo{};
  CUdeviceptr pointerA = 0, pointerB = 0, pointerC = 0, pointerD = 0;
  CUdeviceptr bias = 0;
  float alpha = 1, beta = 0;
  // all-reduce
  CUdeviceptr reduceInput = 0, reduceOutput = 0;
};

/// Owns every driver object of one run and releases them in reverse order.
class GpuSession {
public:
  GpuSession(const Manifest &manifest, const GpuRunOptions &options,
             const RankConfig &ranks)
      : manifest(manifest), options(options), ranks(ranks) {}
  ~GpuSession();

  Status run(const std::vector<HostInput> &inputs, GpuRunResult &result);

private:
  const Manifest &manifest;
  const GpuRunOptions &options;
  const RankConfig ranks;
  CudaDriver cu;
  CublasLt lt;
  Nccl nccl;
  nccl::ncclComm_t comm = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::map<std::string, CUmodule> modules;
  CUdeviceptr arena = 0, workspace = 0;
  int64_t workspaceBytes = 0;
  cublasLtHandle_t ltHandle = nullptr;
  std::vector<PreparedStep> prepared;
  std::vector<CUevent> events;
  size_t freeBefore = 0, minFree = 0;

  static Status cudaFailure(const std::string &message) {
    return Status(ErrorCode::Cuda, message);
  }
  Status cudaFailure(const std::string &what, CUresult result) const {
    return cudaFailure(what + ": " + cu.describe(result));
  }
  static Status cublasFailure(const std::string &message) {
    return Status(ErrorCode::CuBLAS, message);
  }
  Status cublasFailure(const std::string &what, cublasStatus_t status) const {
    return cublasFailure(what + ": " + lt.describe(status));
  }
  Status ncclFailure(const std::string &what, nccl::ncclResult_t result) const {
    return Status(ErrorCode::Nccl, what + ": " + nccl.describe(result));
  }

  CUdeviceptr addressOf(const std::string &bufferName) const {
    return arena + manifest.findBuffer(bufferName)->offset;
  }

  Status openDevice(GpuRunResult &result);
  Status loadModules();
  Status allocateArena();
  Status prepareKernel(const Step &step, PreparedStep &out);
  Status encodeTensorMap(const std::string &context, const Buffer &buffer,
                         const TensorMap &map, CUdeviceptr &address);
  Status prepareGemm(const Step &step, PreparedStep &out);
  Status initNccl();
  Status createLayout(const MatrixLayoutPlan &plan, DType dtype,
                      const std::string &stepName,
                      cublasLtMatrixLayout_t &layout);
  Status launch(size_t stepIndex);
  Status launchAndWait(size_t stepIndex);
  Status uploadInputs(const std::vector<HostInput> &inputs);
  Status upload(const Buffer &buffer, const std::vector<uint8_t> &bytes,
                const std::string &what);
  Status download(const Buffer &buffer, const std::string &what,
                  reference::Tensor &tensor);
  Status runIsolatedPass(const std::vector<HostInput> &inputs,
                         GpuRunResult &result);
  Status noteFreeMemory();
  Status checkCountersAreZero(int runs);
};

GpuSession::~GpuSession() {
  if (!cu.init)
    return; // the driver never loaded
  // NCCL's resources live in the context: first, while it is retained.
  if (comm)
    nccl.commDestroy(comm);
  for (PreparedStep &step : prepared) {
    for (CUdeviceptr map : step.tensorMaps)
      cu.memFree(map);
    if (step.desc)
      lt.matmulDescDestroy(step.desc);
    for (cublasLtMatrixLayout_t layout :
         {step.layoutA, step.layoutB, step.layoutC, step.layoutD})
      if (layout)
        lt.matrixLayoutDestroy(layout);
  }
  if (ltHandle)
    lt.destroy(ltHandle);
  for (CUevent event : events)
    cu.eventDestroy(event);
  if (workspace)
    cu.memFree(workspace);
  if (arena)
    cu.memFree(arena);
  for (auto &entry : modules)
    cu.moduleUnload(entry.second);
  if (stream)
    cu.streamDestroy(stream);
  if (context)
    cu.primaryCtxRelease(device);
}

Status GpuSession::openDevice(GpuRunResult &result) {
  OpenedDevice opened;
  Status error = openFirstDevice(cu, opened);
  device = opened.device;
  context = opened.context;
  if (!error.ok())
    return error;
  result.device = opened.name + " (sm_" + std::to_string(opened.major) +
                  std::to_string(opened.minor) + ")";
  size_t total = 0;
  if (CUresult status = cu.memGetInfo(&freeBefore, &total);
      status != CUDA_SUCCESS)
    return cudaFailure("cuMemGetInfo", status);
  minFree = freeBefore;
  // A blocking stream: it waits for the arena memset and the uploads, which
  // run on the legacy default stream.
  if (CUresult status = cu.streamCreate(&stream, CU_STREAM_DEFAULT);
      status != CUDA_SUCCESS) {
    stream = nullptr;
    return cudaFailure("cuStreamCreate", status);
  }
  return {};
}

Status GpuSession::loadModules() {
  for (const Module &module : manifest.modules) {
    std::string path = options.bundleDir + "/" + module.file;
    std::string ptx;
    if (Status error = readFile(path, ptx); !error.ok())
      return error.withPrefix("module '" + module.name + "': ");
    CUmodule handle = nullptr;
    if (Status error = loadPtxModule(cu, ptx.c_str(), handle); !error.ok())
      return error.withPrefix("module '" + module.name + "' (" + path + "): ");
    modules[module.name] = handle;
  }
  return {};
}

Status GpuSession::noteFreeMemory() {
  size_t freeNow = 0, total = 0;
  if (CUresult status = cu.memGetInfo(&freeNow, &total); status != CUDA_SUCCESS)
    return cudaFailure("cuMemGetInfo", status);
  minFree = std::min(minFree, freeNow);
  return {};
}

Status GpuSession::allocateArena() {
  size_t freeNow = 0, total = 0;
  if (CUresult status = cu.memGetInfo(&freeNow, &total); status != CUDA_SUCCESS)
    return cudaFailure("cuMemGetInfo", status);
  if (static_cast<uint64_t>(manifest.arenaBytes) > freeNow)
    return Status(ErrorCode::OutOfMemory,
                  "the arena needs " + std::to_string(manifest.arenaBytes) +
                      " bytes but the device has only " +
                      std::to_string(freeNow) + " bytes free");
  // cuMemAlloc rejects 0 bytes; a bundle without buffers still gets a base.
  size_t bytes = std::max<int64_t>(manifest.arenaBytes, kBufferAlignment);
  if (CUresult status = cu.memAlloc(&arena, bytes); status != CUDA_SUCCESS) {
    arena = 0;
    return cudaFailure(
        "cuMemAlloc of the " + std::to_string(bytes) + "-byte arena", status);
  }
  // Zeroed so that runs are reproducible even if a kernel reads a byte no
  // one wrote, and because counters buffers must start at zero (their
  // kernels leave them zero for the next launch).
  if (CUresult status = cu.memsetD8(arena, 0, bytes); status != CUDA_SUCCESS)
    return cudaFailure("cuMemsetD8 of the arena", status);
  return {};
}

/// One communicator over the run's ranks (RankConfig), on the current
/// context's device: rank 0 makes NCCL's unique id and, in a world above
/// one, hands it to the others through the id file.
Status GpuSession::initNccl() {
  if (Status error = nccl.load(); failed(error))
    return error;
  int version = 0;
  if (nccl::ncclResult_t status = nccl.getVersion(&version);
      status != nccl::ncclSuccess)
    return ncclFailure("ncclGetVersion", status);
  for (const Step &step : manifest.steps)
    if (step.kind == StepKind::AllReduce &&
        step.allReduce.dtype == DType::BF16 && version < kNcclBfloat16Version)
      return Status(ErrorCode::Nccl,
                    "step '" + step.name + "' sums bf16, which NCCL " +
                        ncclVersionString(version) + " ('" + nccl.path +
                        "') cannot: it needs NCCL 2.10 or later");
  nccl::ncclUniqueId id{};
  if (ranks.rank == 0) {
    if (nccl::ncclResult_t status = nccl.getUniqueId(&id);
        status != nccl::ncclSuccess)
      return ncclFailure("ncclGetUniqueId", status);
    if (ranks.worldSize > 1)
      if (Status error = publishNcclId(ranks.idFile, id); failed(error))
        return error;
  } else if (Status error =
                 waitForNcclId(ranks.idFile, kNcclIdTimeoutSeconds, ranks, id);
             failed(error)) {
    return error;
  }
  nccl::ncclResult_t status =
      nccl.commInitRank(&comm, ranks.worldSize, id, ranks.rank);
  // Every rank has joined (or never will): a later run must not find this
  // id.
  if (ranks.rank == 0 && ranks.worldSize > 1)
    unlink(ranks.idFile.c_str());
  if (status != nccl::ncclSuccess) {
    comm = nullptr;
    return ncclFailure("ncclCommInitRank (rank " + std::to_string(ranks.rank) +
                           " of " + std::to_string(ranks.worldSize) +
                           (ranks.worldSize > 1
                                ? "; every rank needs a GPU of its own: "
                                  "set CUDA_VISIBLE_DEVICES per process"
                                : "") +
                           ")",
                       status);
  }
  return {};
}

Status GpuSession::prepareKernel(const Step &step, PreparedStep &out) {
  const KernelStep &kernel = step.kernel;
  std::string context = "step '" + step.name + "'";
  CUresult status = cu.moduleGetFunction(
      &out.function, modules.at(kernel.module), kernel.function.c_str());
  if (status != CUDA_SUCCESS)
    return cudaFailure(context + ": function '" + kernel.function +
                           "' of module '" + kernel.module + "'",
                       status);
  if (kernel.sharedBytes > kDefaultDynamicSharedBytes) {
    status = cu.funcSetAttribute(
        out.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        static_cast<int>(kernel.sharedBytes));
    if (status != CUDA_SUCCESS)
      return cudaFailure(context + ": allowing " +
                             std::to_string(kernel.sharedBytes) +
                             " bytes of dynamic shared memory",
                         status);
  }
  for (const std::string &arg : kernel.args)
    out.argValues.push_back(addressOf(arg));
  // A tensor map argument passes the map's device address instead.
  for (const TensorMap &map : kernel.tensorMaps) {
    CUdeviceptr address = 0;
    if (Status error = encodeTensorMap(
            context + ": tensor map of argument " + std::to_string(map.arg),
            *manifest.findBuffer(kernel.args[map.arg]), map, address);
        !error.ok())
      return error;
    out.tensorMaps.push_back(address);
    out.argValues[map.arg] = address;
  }
  // Filled after argValues is complete, so the pointers stay valid.
  for (CUdeviceptr &value : out.argValues)
    out.params.push_back(&value);
  return {};
}

// The manifest's tensor map enums are listed in the driver's order.
static_assert(static_cast<int>(TensorMapSwizzle::Bytes128) ==
              CU_TENSOR_MAP_SWIZZLE_128B);
static_assert(static_cast<int>(TensorMapL2Promotion::Bytes256) ==
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
static_assert(static_cast<int>(TensorMapOobFill::Nan) ==
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
static_assert(static_cast<int>(TensorMapInterleave::Bytes32) ==
              CU_TENSOR_MAP_INTERLEAVE_32B);

/// The driver's element type of a tensor map over `dtype`.
static CUtensorMapDataType tensorMapDataType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case DType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case DType::I64:
    return CU_TENSOR_MAP_DATA_TYPE_INT64;
  default: // i8, fp8 and i1 storage: bytes
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
}

Status GpuSession::encodeTensorMap(const std::string &context,
                                   const Buffer &buffer, const TensorMap &map,
                                   CUdeviceptr &address) {
  if (!cu.tensorMapEncodeTiled)
    return cudaFailure(context + ": the driver has no cuTensorMapEncodeTiled "
                                 "(TMA needs a CUDA 12 driver or later)");
  // The driver lists dims innermost first; strides in bytes, without the
  // innermost (the element).
  size_t rank = map.shape.size();
  int64_t elementBytes = reference::dtypeBytes(buffer.dtype);
  std::vector<cuuint64_t> dims(rank), strides(rank > 1 ? rank - 1 : 1);
  std::vector<cuuint32_t> box(rank), elementStrides(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    size_t inner = rank - 1 - i;
    dims[i] = static_cast<cuuint64_t>(map.shape[inner]);
    box[i] = static_cast<cuuint32_t>(map.box[inner]);
    if (i > 0)
      strides[i - 1] =
          static_cast<cuuint64_t>(map.strides[inner] * elementBytes);
  }
  CUtensorMap encoded;
  CUresult status = cu.tensorMapEncodeTiled(
      &encoded, tensorMapDataType(buffer.dtype), static_cast<cuuint32_t>(rank),
      reinterpret_cast<void *>(addressOf(buffer.name)), dims.data(),
      strides.data(), box.data(), elementStrides.data(),
      static_cast<CUtensorMapInterleave>(map.interleave),
      static_cast<CUtensorMapSwizzle>(map.swizzle),
      static_cast<CUtensorMapL2promotion>(map.l2Promotion),
      static_cast<CUtensorMapFloatOOBfill>(map.oobFill));
  if (status != CUDA_SUCCESS)
    return cudaFailure(context + ": cuTensorMapEncodeTiled", status);
  // The kernel reads the map from global memory (cuMemAlloc is 256-byte
  // aligned; TMA needs 64).
  if (status = cu.memAlloc(&address, sizeof(encoded)); status != CUDA_SUCCESS)
    return cudaFailure(context + ": cuMemAlloc of the tensor map", status);
  if (status = cu.memcpyHtoD(address, &encoded, sizeof(encoded));
      status != CUDA_SUCCESS) {
    cu.memFree(address);
    address = 0;
    return cudaFailure(context + ": copying the tensor map", status);
  }
  return {};
}

Status GpuSession::createLayout(const MatrixLayoutPlan &plan, DType dtype,
                                const std::string &stepName,
                                cublasLtMatrixLayout_t &layout) {
  std::string context =
      "step '" + stepName + "': layout of '" + plan.buffer + "'";
  cublasStatus_t status = lt.matrixLayoutCreate(
      &layout, cudaTypeOf(dtype), static_cast<uint64_t>(plan.rows),
      static_cast<uint64_t>(plan.cols), plan.ld);
  if (status != CUBLAS_STATUS_SUCCESS) {
    layout = nullptr;
    return cublasFailure(context, status);
  }
  if (plan.batchCount > 1) {
    int32_t count = plan.batchCount;
    int64_t stride = plan.batchStride;
    if ((status = lt.matrixLayoutSetAttribute(
             layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
             sizeof(count))) != CUBLAS_STATUS_SUCCESS ||
        (status = lt.matrixLayoutSetAttribute(
             layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
             sizeof(stride))) != CUBLAS_STATUS_SUCCESS)
      return cublasFailure(context + ": batch attributes", status);
  }
  return {};
}

Status GpuSession::prepareGemm(const Step &step, PreparedStep &out) {
  const GemmStep &gemm = step.gemm;
  std::string context = "step '" + step.name + "'";
  GemmPlan plan = planGemm(gemm);
  cudaDataType dataType = cudaTypeOf(gemm.dtype);

  cublasStatus_t status =
      lt.matmulDescCreate(&out.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (status != CUBLAS_STATUS_SUCCESS) {
    out.desc = nullptr;
    return cublasFailure(context + ": cublasLtMatmulDescCreate", status);
  }
  cublasOperation_t transA = plan.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t transB = plan.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = cublasEpilogueOf(plan.epilogue);
  if ((status = lt.matmulDescSetAttribute(out.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                          &transA, sizeof(transA))) !=
          CUBLAS_STATUS_SUCCESS ||
      (status = lt.matmulDescSetAttribute(out.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                          &transB, sizeof(transB))) !=
          CUBLAS_STATUS_SUCCESS ||
      (status = lt.matmulDescSetAttribute(
           out.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
           sizeof(epilogue))) != CUBLAS_STATUS_SUCCESS)
    return cublasFailure(context + ": matmul descriptor", status);
  if (!plan.bias.empty()) {
    out.bias = addressOf(plan.bias);
    const void *biasPointer = reinterpret_cast<const void *>(out.bias);
    int32_t biasType = dataType;
    if ((status = lt.matmulDescSetAttribute(
             out.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPointer,
             sizeof(biasPointer))) != CUBLAS_STATUS_SUCCESS ||
        (status = lt.matmulDescSetAttribute(
             out.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
             sizeof(biasType))) != CUBLAS_STATUS_SUCCESS)
      return cublasFailure(context + ": bias of the matmul descriptor", status);
  }
  // C and D may be an f32 accumulator beside bf16/f16 A and B.
  for (auto [layoutPlan, layout, dtype] :
       {std::tuple{&plan.a, &out.layoutA, gemm.dtype},
        std::tuple{&plan.b, &out.layoutB, gemm.dtype},
        std::tuple{&plan.c, &out.layoutC, gemm.outDtype},
        std::tuple{&plan.d, &out.layoutD, gemm.outDtype}})
    if (Status error = createLayout(*layoutPlan, dtype, step.name, *layout);
        !error.ok())
      return error;
  out.pointerA = addressOf(plan.a.buffer);
  out.pointerB = addressOf(plan.b.buffer);
  out.pointerC = addressOf(plan.c.buffer);
  out.pointerD = addressOf(plan.d.buffer);
  out.alpha = plan.alpha;
  out.beta = plan.beta;

  auto alignment = [&](const MatrixLayoutPlan &layout) {
    const Buffer *buffer = manifest.findBuffer(layout.buffer);
    return alignmentOf(buffer->offset,
                       layout.batchStride *
                           reference::dtypeBytes(buffer->dtype),
                       layout.batchCount);
  };
  uint32_t alignments[4] = {alignment(plan.a), alignment(plan.b),
                            alignment(plan.c), alignment(plan.d)};
  uint64_t maxWorkspace = static_cast<uint64_t>(workspaceBytes);
  cublasLtMatmulPreference_t preference = nullptr;
  if ((status = lt.preferenceCreate(&preference)) != CUBLAS_STATUS_SUCCESS)
    return cublasFailure(context + ": cublasLtMatmulPreferenceCreate", status);
  const cublasLtMatmulPreferenceAttributes_t alignmentKeys[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  status = lt.preferenceSetAttribute(preference,
                                     CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                     &maxWorkspace, sizeof(maxWorkspace));
  for (int i = 0; i < 4 && status == CUBLAS_STATUS_SUCCESS; ++i)
    status = lt.preferenceSetAttribute(preference, alignmentKeys[i],
                                       &alignments[i], sizeof(alignments[i]));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = lt.algoGetHeuristic(ltHandle, out.desc, out.layoutA, out.layoutB,
                                 out.layoutC, out.layoutD, preference, 1,
                                 &heuristic, &found);
  lt.preferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED)
    return cublasFailure(context + ": cublasLtMatmulAlgoGetHeuristic", status);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0 ||
      heuristic.state != CUBLAS_STATUS_SUCCESS)
    return cublasFailure(
        context + ": cuBLASLt has no algorithm for this gemm (" +
        reference::dtypeName(gemm.dtype) +
        (gemm.outDtype != gemm.dtype
             ? std::string(" to ") + reference::dtypeName(gemm.outDtype)
             : std::string()) +
        ", m=" + std::to_string(gemm.m) + " n=" + std::to_string(gemm.n) +
        " k=" + std::to_string(gemm.k) +
        " batch=" + std::to_string(gemm.batch) + ", epilogue " +
        epilogueName(gemm.epilogue) + ")");
  out.algo = heuristic.algo;
  return {};
}

Status GpuSession::launch(size_t stepIndex) {
  const Step &step = manifest.steps[stepIndex];
  PreparedStep &ready = prepared[stepIndex];
  if (step.kind == StepKind::AllReduce) {
    const AllReduceStep &allReduce = step.allReduce;
    nccl::ncclResult_t status = nccl.allReduce(
        reinterpret_cast<const void *>(ready.reduceInput),
        reinterpret_cast<void *>(ready.reduceOutput),
        static_cast<size_t>(allReduce.count), ncclTypeOf(allReduce.dtype),
        nccl::ncclSum, comm, stream);
    if (status != nccl::ncclSuccess)
      return ncclFailure("step '" + step.name + "': ncclAllReduce", status);
    return {};
  }
  if (step.kind == StepKind::Kernel) {
    const KernelStep &kernel = step.kernel;
    CUresult status = cu.launchKernel(
        ready.function, static_cast<unsigned>(kernel.grid[0]),
        static_cast<unsigned>(kernel.grid[1]),
        static_cast<unsigned>(kernel.grid[2]),
        static_cast<unsigned>(kernel.block[0]),
        static_cast<unsigned>(kernel.block[1]),
        static_cast<unsigned>(kernel.block[2]),
        static_cast<unsigned>(kernel.sharedBytes), stream,
        ready.params.empty() ? nullptr : ready.params.data(), nullptr);
    if (status != CUDA_SUCCESS)
      return cudaFailure("step '" + step.name + "': cuLaunchKernel", status);
    return {};
  }
  cublasStatus_t status =
      lt.matmul(ltHandle, ready.desc, &ready.alpha,
                reinterpret_cast<const void *>(ready.pointerA), ready.layoutA,
                reinterpret_cast<const void *>(ready.pointerB), ready.layoutB,
                &ready.beta, reinterpret_cast<const void *>(ready.pointerC),
                ready.layoutC, reinterpret_cast<void *>(ready.pointerD),
                ready.layoutD, &ready.algo, reinterpret_cast<void *>(workspace),
                static_cast<size_t>(workspaceBytes), stream);
  if (status != CUBLAS_STATUS_SUCCESS)
    return cublasFailure("step '" + step.name + "': cublasLtMatmul", status);
  return {};
}

Status GpuSession::launchAndWait(size_t stepIndex) {
  if (Status error = launch(stepIndex); failed(error))
    return error;
  if (CUresult status = cu.streamSynchronize(stream); status != CUDA_SUCCESS)
    return cudaFailure("step '" + manifest.steps[stepIndex].name + "' failed",
                       status);
  return {};
}

Status GpuSession::upload(const Buffer &buffer,
                          const std::vector<uint8_t> &bytes,
                          const std::string &what) {
  if (CUresult status =
          cu.memcpyHtoD(arena + buffer.offset, bytes.data(), bytes.size());
      status != CUDA_SUCCESS)
    return cudaFailure("uploading " + what, status);
  return {};
}

Status GpuSession::uploadInputs(const std::vector<HostInput> &inputs) {
  for (const HostInput &input : inputs)
    if (Status error =
            upload(*input.buffer, toBufferBytes(*input.buffer, input.tensor),
                   "input '" + input.binding->name + "'");
        failed(error))
      return error;
  // A copy from pageable memory may return before its DMA has finished.
  if (CUresult status = cu.ctxSynchronize(); status != CUDA_SUCCESS)
    return cudaFailure("waiting for the uploads", status);
  return {};
}

Status GpuSession::download(const Buffer &buffer, const std::string &what,
                            reference::Tensor &tensor) {
  std::vector<uint8_t> bytes(static_cast<size_t>(buffer.bytes));
  if (CUresult status =
          cu.memcpyDtoH(bytes.data(), arena + buffer.offset, bytes.size());
      status != CUDA_SUCCESS)
    return cudaFailure("downloading " + what, status);
  tensor = fromBufferBytes(buffer, bytes.data());
  return {};
}

/// Counters buffers must be zero again after every launch
/// (docs/bundle-format.md): one a kernel left set would hand the next run a
/// wrong count.
Status GpuSession::checkCountersAreZero(int runs) {
  for (const Buffer &buffer : manifest.buffers) {
    if (buffer.role != BufferRole::Counters)
      continue;
    reference::Tensor counts;
    if (Status error =
            download(buffer, "counters '" + buffer.name + "'", counts);
        failed(error))
      return error;
    if (std::any_of(counts.data.begin(), counts.data.end(),
                    [](double count) { return count != 0; }))
      return Status(ErrorCode::KernelState,
                    "buffer '" + buffer.name +
                        "' holds counters a kernel left nonzero after " +
                        std::to_string(runs) +
                        " run(s) of the bundle (the next run would start "
                        "from them)");
  }
  return {};
}

/// --check's per-step gate: every step once more, on the reference values of
/// the buffers it reads (docs/runtime.md, "Check").
Status GpuSession::runIsolatedPass(const std::vector<HostInput> &inputs,
                                   GpuRunResult &result) {
  // The memory plan may have reused the inputs' bytes since the warm-up.
  if (Status error = uploadInputs(inputs); failed(error))
    return error;
  result.isolatedOutputs.resize(manifest.steps.size());
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    const StepIsolation &isolation = options.isolatedPass[i];
    std::string stepName = "step '" + manifest.steps[i].name + "'";
    for (const StepIsolation::Upload &value : isolation.uploads)
      if (Status error =
              upload(*value.buffer, value.bytes,
                     "the reference value of '" + value.buffer->name +
                         "' for the isolated " + stepName);
          failed(error))
        return error;
    if (CUresult status = cu.ctxSynchronize(); status != CUDA_SUCCESS)
      return cudaFailure("waiting for the uploads", status);
    if (Status error = launchAndWait(i); failed(error))
      return error;
    for (const Buffer *buffer : isolation.downloads) {
      result.isolatedOutputs[i].emplace_back();
      if (Status error = download(
              *buffer, "'" + buffer->name + "' of the isolated " + stepName,
              result.isolatedOutputs[i].back());
          failed(error))
        return error;
    }
  }
  return {};
}

Status GpuSession::run(const std::vector<HostInput> &inputs,
                       GpuRunResult &result) {
  Status error;
  if (failed(error = openDevice(result)) || failed(error = loadModules()) ||
      failed(error = allocateArena()))
    return error;

  bool hasGemm =
      std::any_of(manifest.steps.begin(), manifest.steps.end(),
                  [](const Step &step) { return step.kind == StepKind::Gemm; });
  if (hasGemm) {
    if (Status error = lt.load(); !error.ok())
      return error;
    if (cublasStatus_t status = lt.create(&ltHandle);
        status != CUBLAS_STATUS_SUCCESS) {
      ltHandle = nullptr;
      return cublasFailure("cublasLtCreate", status);
    }
    workspaceBytes = kGemmWorkspaceBytes;
    if (CUresult status = cu.memAlloc(&workspace, workspaceBytes);
        status != CUDA_SUCCESS) {
      workspace = 0;
      return cudaFailure("cuMemAlloc of the " + std::to_string(workspaceBytes) +
                             "-byte cuBLASLt workspace",
                         status);
    }
  }

  bool hasAllReduce = std::any_of(
      manifest.steps.begin(), manifest.steps.end(),
      [](const Step &step) { return step.kind == StepKind::AllReduce; });
  if (hasAllReduce && failed(error = initNccl()))
    return error;

  prepared.resize(manifest.steps.size());
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    const Step &step = manifest.steps[i];
    if (step.kind == StepKind::AllReduce) {
      prepared[i].reduceInput = addressOf(step.allReduce.input);
      prepared[i].reduceOutput = addressOf(step.allReduce.output);
      continue;
    }
    error = step.kind == StepKind::Kernel ? prepareKernel(step, prepared[i])
                                          : prepareGemm(step, prepared[i]);
    if (failed(error))
      return error;
  }
  if (failed(error = noteFreeMemory()))
    return error;

  if (failed(error = uploadInputs(inputs)))
    return error;

  // Warm-up, one step at a time so that a fault names its step. Inputs may
  // share bytes with later intermediates, so the outputs of this first run are
  // the ones that --check judges.
  for (size_t i = 0; i < manifest.steps.size(); ++i)
    if (failed(error = launchAndWait(i)))
      return error;
  for (const Binding &binding : manifest.outputs) {
    result.outputs.emplace_back();
    if (failed(error = download(*manifest.findBuffer(binding.buffer),
                                "output '" + binding.name + "'",
                                result.outputs.back())))
      return error;
  }

  size_t stepCount = manifest.steps.size();
  events.resize(2 * stepCount + 2, nullptr);
  for (CUevent &event : events)
    if (CUresult status = cu.eventCreate(&event, CU_EVENT_DEFAULT);
        status != CUDA_SUCCESS) {
      event = nullptr;
      return cudaFailure("cuEventCreate", status);
    }
  auto elapsedSeconds = [&](CUevent start, CUevent end, double &seconds) {
    float milliseconds = 0;
    CUresult status = cu.eventElapsedTime(&milliseconds, start, end);
    seconds = milliseconds * 1e-3;
    return status;
  };

  // Per-step times (an event pair around every step) and the whole sequence
  // (without the events between its launches), alternating run by run: a
  // GPU's clocks drop under sustained load within milliseconds, so two
  // loops one after the other would time the sequence on a hotter GPU.
  std::vector<std::vector<double>> stepSamples(stepCount);
  std::vector<double> totalSamples;
  CUevent sequenceStart = events[2 * stepCount],
          sequenceEnd = events[2 * stepCount + 1];
  for (int iteration = 0; iteration < options.iters; ++iteration) {
    for (size_t i = 0; i < stepCount; ++i) {
      if (CUresult status = cu.eventRecord(events[2 * i], stream);
          status != CUDA_SUCCESS)
        return cudaFailure("cuEventRecord", status);
      if (failed(error = launch(i)))
        return error;
      if (CUresult status = cu.eventRecord(events[2 * i + 1], stream);
          status != CUDA_SUCCESS)
        return cudaFailure("cuEventRecord", status);
    }
    if (CUresult status = cu.streamSynchronize(stream); status != CUDA_SUCCESS)
      return cudaFailure("timed run " + std::to_string(iteration), status);
    for (size_t i = 0; i < stepCount; ++i) {
      double seconds = 0;
      if (CUresult status =
              elapsedSeconds(events[2 * i], events[2 * i + 1], seconds);
          status != CUDA_SUCCESS)
        return cudaFailure("cuEventElapsedTime", status);
      stepSamples[i].push_back(seconds);
    }

    if (CUresult status = cu.eventRecord(sequenceStart, stream);
        status != CUDA_SUCCESS)
      return cudaFailure("cuEventRecord", status);
    for (size_t i = 0; i < stepCount; ++i)
      if (failed(error = launch(i)))
        return error;
    if (CUresult status = cu.eventRecord(sequenceEnd, stream);
        status != CUDA_SUCCESS)
      return cudaFailure("cuEventRecord", status);
    if (CUresult status = cu.streamSynchronize(stream); status != CUDA_SUCCESS)
      return cudaFailure("timed run " + std::to_string(iteration), status);
    double seconds = 0;
    if (CUresult status = elapsedSeconds(sequenceStart, sequenceEnd, seconds);
        status != CUDA_SUCCESS)
      return cudaFailure("cuEventElapsedTime", status);
    totalSamples.push_back(seconds);
  }
  if (failed(error = noteFreeMemory()))
    return error;
  // After the timed runs, so that checking does not change the timings.
  if (!options.isolatedPass.empty() &&
      failed(error = runIsolatedPass(inputs, result)))
    return error;
  // Warm-up, two launches of every step per timed iteration, the isolated
  // pass.
  if (failed(error =
                 checkCountersAreZero(1 + 2 * options.iters +
                                      (options.isolatedPass.empty() ? 0 : 1))))
    return error;

  for (const std::vector<double> &samples : stepSamples)
    result.stepTimesS.push_back(median(samples));
  result.totalTimeS = median(totalSamples);
  result.workspaceBytes = workspaceBytes;
  // Other processes may free memory meanwhile: never report a negative peak.
  result.measuredPeakBytes =
      minFree < freeBefore ? static_cast<int64_t>(freeBefore - minFree) : 0;
  return {};
}

} // namespace

Status runOnGpu(const Manifest &manifest, const std::vector<HostInput> &inputs,
                const GpuRunOptions &options, GpuRunResult &result) {
  result = GpuRunResult();
  // Before any device: a run with the wrong ranks fails the same everywhere.
  RankConfig ranks;
  if (Status error = ranksForBundle(manifest, ranks); !error.ok())
    return error;
  // The outputs come back to the host: once as bytes, once as doubles.
  int64_t hostBytes = 0;
  for (const Binding &binding : manifest.outputs) {
    const Buffer *buffer = manifest.findBuffer(binding.buffer);
    addHostTensorBytes(buffer->shape, hostBytes);
    if (hostBytes >= 0 && !checkedAdd(hostBytes, buffer->bytes, hostBytes))
      hostBytes = -1;
  }
  if (std::string error = checkHostMemory(hostBytes, "downloading the outputs");
      !error.empty())
    return Status(ErrorCode::OutOfMemory, error);
  GpuSession session(manifest, options, ranks);
  return session.run(inputs, result);
}

} // namespace memwall::runtime

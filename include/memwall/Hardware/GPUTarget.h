//===- GPUTarget.h - Roofline model of a GPU --------------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A GPU as the roofline model sees it: dense peak FLOP/s per math precision,
// HBM bandwidth and capacity, and the on-chip resources later passes size
// tiles and fusions against. Built-in targets come from datasheets (see
// docs/targets.md); user targets come from a JSON file.
//
// This library depends on LLVMSupport only, so the MLIR-free runtime can use
// it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_HARDWARE_GPUTARGET_H
#define MEMWALL_HARDWARE_GPUTARGET_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace memwall {

/// The math unit an operation runs on. Tensor-core precisions (TF32 and
/// narrower) apply to contractions; everything else runs on the FP32 CUDA
/// cores.
enum class MathPrecision : unsigned { FP32 = 0, TF32, BF16, FP16, FP8, INT8 };
constexpr unsigned kNumMathPrecisions = 6;

/// Lowercase name used in JSON and reports: "fp32", "tf32", "bf16", "fp16",
/// "fp8", "int8".
llvm::StringRef stringifyMathPrecision(MathPrecision precision);
std::optional<MathPrecision> symbolizeMathPrecision(llvm::StringRef name);

/// Shape classes of a GEMM, whose achievable fraction of the tensor-core peak
/// differs: `Large` fills the GPU with full tiles for several waves, `Small`
/// does not (wave quantization and prologue/epilogue dominate), `Skinny` has
/// an M or N of at most 64 (GEMV-like: the tensor cores mostly idle).
enum class GemmShapeClass : unsigned { Large = 0, Small, Skinny };
constexpr unsigned kNumGemmShapeClasses = 3;
llvm::StringRef stringifyGemmShapeClass(GemmShapeClass shapeClass);

/// How a step's kernels are launched: one by one on a stream, or replayed
/// from a CUDA graph (as serving stacks run decode steps).
enum class LaunchMode : unsigned { Stream = 0, Graph };
llvm::StringRef stringifyLaunchMode(LaunchMode mode);
std::optional<LaunchMode> symbolizeLaunchMode(llvm::StringRef name);

/// Rates a real kernel reaches, separate from the datasheet peaks. Built-in
/// figures are measured (H100 SXM) or assumed from the measured ratios
/// (docs/targets.md says which); a calibration file overrides them.
struct AchievableRates {
  /// DRAM bandwidth of a streaming kernel (a device-to-device copy), bytes/s.
  double memoryBandwidth = 0;
  /// Fraction of the tensor-core peak a cuBLAS-class GEMM reaches, indexed by
  /// GemmShapeClass.
  std::array<double, kNumGemmShapeClasses> gemmEfficiency{};
  /// The same for memwall's own generated GEMM kernel (docs/codegen.md,
  /// "GEMM kernel"), which the fusion cost model weighs against cuBLASLt.
  std::array<double, kNumGemmShapeClasses> generatedGemmEfficiency{};
  /// Fraction of the tensor-core peak a FlashAttention-2-class kernel
  /// reaches on its counted (unmasked) FLOPs.
  double attentionEfficiency = 0;
};

/// Link bandwidths for communication, bytes/s in one direction per GPU.
/// Zero means the link does not exist (no NVLink on an L4).
struct Interconnect {
  /// GPU-to-GPU within a node (NVLink); collectives fall back to PCIe
  /// without it.
  double nvlinkBandwidth = 0;
  /// Host link (PCIe), used for offload and NVLink-less collectives.
  double pcieBandwidth = 0;
  /// Inter-node network per GPU (InfiniBand / RoCE NIC).
  double networkBandwidth = 0;
  /// GPUs sharing one node's NVLink domain.
  unsigned gpusPerNode = 8;
};

/// Per-SM limits every target memwall generates kernels for shares (sm_80
/// and sm_90; CUDA's occupancy calculator): the register file, resident
/// threads and resident CTAs.
inline constexpr int64_t kRegistersPerSM = 65536;
inline constexpr int64_t kMaxThreadsPerSM = 2048;
inline constexpr int64_t kMaxCTAsPerSM = 32;

struct GPUTarget {
  /// Lowercase, dash-separated identifier used by --target (e.g. "h100-sxm").
  std::string name;
  /// Human-readable product name (e.g. "NVIDIA H100 SXM5 80GB").
  std::string description;
  /// Dense (no structured sparsity) peak throughput in FLOP/s (OP/s for INT8),
  /// indexed by MathPrecision. Zero means the precision is not supported.
  std::array<double, kNumMathPrecisions> peakFlops{};
  /// Peak DRAM (HBM/GDDR) bandwidth in bytes per second.
  double memoryBandwidth = 0;
  /// DRAM capacity in bytes.
  uint64_t memoryCapacityBytes = 0;
  /// L2 cache size in bytes.
  uint64_t l2Bytes = 0;
  /// Maximum shared memory a single SM can provide, in bytes.
  uint64_t sharedMemoryPerSMBytes = 0;
  /// Number of streaming multiprocessors.
  unsigned smCount = 0;
  /// Fixed cost charged once per kernel launched on a stream, in seconds.
  double kernelLaunchSeconds = 0;
  /// The same for a kernel replayed from a CUDA graph.
  double graphKernelLaunchSeconds = 0;
  /// Which of the two launch costs predictions charge.
  LaunchMode launchMode = LaunchMode::Stream;
  /// PTX target architecture for codegen, e.g. "sm_90a", "sm_80".
  std::string smArch;
  /// What kernels reach; the time model divides by these, not the peaks.
  AchievableRates achievable;
  Interconnect interconnect;
  /// Where the achievable figures come from when a calibration file set
  /// them (its "calibration" text); empty for built-in figures.
  std::string calibration;
  /// The built-in target a JSON file started from ("base"), if any.
  std::string baseName;

  /// Peak for `precision`; when the target lacks it (FP8 on an A100) the next
  /// wider supported precision is used: FP8 -> FP16/BF16 -> TF32 -> FP32,
  /// INT8 -> FP16. Never returns zero for a valid target.
  double peakFor(MathPrecision precision) const;
  /// True when the hardware executes `precision` natively.
  bool supports(MathPrecision precision) const;
  /// Ridge point (FLOP/byte) of the roofline for `precision`: the arithmetic
  /// intensity above which an op at that precision is compute-bound.
  double ridgeFor(MathPrecision precision) const;

  /// Launch cost of one kernel under `launchMode`.
  double launchSeconds() const {
    return launchMode == LaunchMode::Graph ? graphKernelLaunchSeconds
                                           : kernelLaunchSeconds;
  }
  /// Bandwidth of the link data-parallel collectives among `devices` GPUs
  /// run over: NVLink within a node (PCIe without NVLink), the network
  /// beyond one node.
  double collectiveBandwidth(int64_t devices) const;
  /// One ring all-reduce of `bytes` over `devices` GPUs: each sends and
  /// receives 2 (n - 1) / n of them on collectiveBandwidth(n); over one
  /// device, a copy at the achievable DRAM bandwidth. Launch cost included.
  double allReduceSeconds(double bytes, int64_t devices) const;

  /// Checks internal consistency (positive bandwidth, capacity, SMs, FP32
  /// peak, L2; achievable rates positive and within the peaks; non-negative
  /// everything) and physical ranges (rates between 1 and 1e21 per second,
  /// efficiencies at least 0.001, capacity at most 2^60 bytes, ...; see
  /// docs/targets.md). Returns a message naming the bad field.
  llvm::Error validate() const;
};

/// All built-in targets, in a stable order.
llvm::ArrayRef<GPUTarget> getBuiltinGPUTargets();

/// Looks up a built-in target by its --target name.
const GPUTarget *lookupBuiltinGPUTarget(llvm::StringRef name);

/// The number of a PTX target: 90 for "sm_90a", 80 for "sm_80"; 0 for an
/// empty or unparsable one.
unsigned getSmArchNumber(llvm::StringRef smArch);

/// Parses a target from JSON text. `bufferName` is used in error messages,
/// which carry a line:column where one is known. The schema is documented in
/// docs/targets.md.
llvm::Expected<GPUTarget> parseGPUTargetJSON(llvm::StringRef jsonText,
                                             llvm::StringRef bufferName);

/// Reads and parses a target JSON file.
llvm::Expected<GPUTarget> loadGPUTargetFile(llvm::StringRef path);

/// Resolves the target a tool was asked for: `targetFile` if non-empty (then
/// `targetName` must be empty, the file's name, or the file's "base": a
/// calibration of that built-in GPU), else the built-in `targetName`.
/// Unknown names list the valid ones in the error.
llvm::Expected<GPUTarget> resolveGPUTarget(llvm::StringRef targetName,
                                           llvm::StringRef targetFile);

/// The target used when a tool is given none.
constexpr const char *kDefaultGPUTargetName = "h100-sxm";

} // namespace memwall

#endif // MEMWALL_HARDWARE_GPUTARGET_H

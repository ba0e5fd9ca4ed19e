//===- GPUTarget.h - Roofline model of a GPU --------------------*- C++ -*-===//
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
  /// Fixed cost charged once per kernel launch, in seconds.
  double kernelLaunchSeconds = 0;
  /// PTX target architecture for codegen, e.g. "sm_90a", "sm_80".
  std::string smArch;

  /// Peak for `precision`; when the target lacks it (FP8 on an A100) the next
  /// wider supported precision is used: FP8 -> FP16/BF16 -> TF32 -> FP32,
  /// INT8 -> FP16. Never returns zero for a valid target.
  double peakFor(MathPrecision precision) const;
  /// True when the hardware executes `precision` natively.
  bool supports(MathPrecision precision) const;
  /// Ridge point (FLOP/byte) of the roofline for `precision`: the arithmetic
  /// intensity above which an op at that precision is compute-bound.
  double ridgeFor(MathPrecision precision) const;

  /// Checks internal consistency (positive bandwidth, capacity, SMs, FP32
  /// peak; non-negative everything). Returns a message naming the bad field.
  llvm::Error validate() const;
};

/// All built-in targets, in a stable order.
llvm::ArrayRef<GPUTarget> getBuiltinGPUTargets();

/// Looks up a built-in target by its --target name.
const GPUTarget *lookupBuiltinGPUTarget(llvm::StringRef name);

/// Parses a target from JSON text. `bufferName` is used in error messages,
/// which carry a line:column where one is known. The schema is documented in
/// docs/targets.md.
llvm::Expected<GPUTarget> parseGPUTargetJSON(llvm::StringRef jsonText,
                                             llvm::StringRef bufferName);

/// Reads and parses a target JSON file.
llvm::Expected<GPUTarget> loadGPUTargetFile(llvm::StringRef path);

/// Resolves the target a tool was asked for: `targetFile` if non-empty (then
/// `targetName` must be empty or equal the file's name), else the built-in
/// `targetName`. Unknown names list the valid ones in the error.
llvm::Expected<GPUTarget> resolveGPUTarget(llvm::StringRef targetName,
                                           llvm::StringRef targetFile);

/// The target used when a tool is given none.
constexpr const char *kDefaultGPUTargetName = "h100-sxm";

} // namespace memwall

#endif // MEMWALL_HARDWARE_GPUTARGET_H

//===- GPUTarget.cpp - built-in GPUs and target JSON ----------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Peak rates below are dense (no structured sparsity). docs/targets.md lists
// every figure with its source and says which ones are not from a datasheet.
//
//===----------------------------------------------------------------------===//

#include "memwall/Hardware/GPUTarget.h"

#include "memwall/Support/InputLimits.h"
#include "memwall/Support/JSONDiagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace memwall;

static constexpr const char *kPrecisionNames[kNumMathPrecisions] = {
    "fp32", "tf32", "bf16", "fp16", "fp8", "int8"};

llvm::StringRef memwall::stringifyMathPrecision(MathPrecision precision) {
  return kPrecisionNames[static_cast<unsigned>(precision)];
}

std::optional<MathPrecision>
memwall::symbolizeMathPrecision(llvm::StringRef name) {
  for (unsigned index = 0; index < kNumMathPrecisions; ++index)
    if (name == kPrecisionNames[index])
      return static_cast<MathPrecision>(index);
  return std::nullopt;
}

static constexpr const char *kGemmShapeClassNames[kNumGemmShapeClasses] = {
    "large", "small", "skinny"};

llvm::StringRef memwall::stringifyGemmShapeClass(GemmShapeClass shapeClass) {
  return kGemmShapeClassNames[static_cast<unsigned>(shapeClass)];
}

llvm::StringRef memwall::stringifyLaunchMode(LaunchMode mode) {
  switch (mode) {
  case LaunchMode::Stream:
    return "stream";
  case LaunchMode::Graph:
    return "graph";
  }
  return "stream";
}

// The names are stringifyLaunchMode's, so the two directions cannot drift.
std::optional<LaunchMode> memwall::symbolizeLaunchMode(llvm::StringRef name) {
  for (LaunchMode mode : {LaunchMode::Stream, LaunchMode::Graph})
    if (name == stringifyLaunchMode(mode))
      return mode;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// GPUTarget
//===----------------------------------------------------------------------===//

/// The precision a kernel falls back to when the hardware lacks `precision`:
/// FP8 runs as FP16 (or BF16), INT8 as FP16, half types as TF32, TF32 as FP32.
static std::optional<MathPrecision> widerPrecision(MathPrecision precision) {
  switch (precision) {
  case MathPrecision::FP8:
  case MathPrecision::INT8:
    return MathPrecision::FP16;
  case MathPrecision::FP16:
    return MathPrecision::BF16;
  case MathPrecision::BF16:
    return MathPrecision::TF32;
  case MathPrecision::TF32:
    return MathPrecision::FP32;
  case MathPrecision::FP32:
    return std::nullopt;
  }
  return std::nullopt;
}

bool GPUTarget::supports(MathPrecision precision) const {
  return peakFlops[static_cast<unsigned>(precision)] > 0;
}

double GPUTarget::peakFor(MathPrecision precision) const {
  std::optional<MathPrecision> current = precision;
  while (current) {
    if (supports(*current))
      return peakFlops[static_cast<unsigned>(*current)];
    current = widerPrecision(*current);
  }
  return peakFlops[static_cast<unsigned>(MathPrecision::FP32)];
}

double GPUTarget::ridgeFor(MathPrecision precision) const {
  return peakFor(precision) / memoryBandwidth;
}

double GPUTarget::collectiveBandwidth(int64_t devices) const {
  if (devices > static_cast<int64_t>(std::max(1u, interconnect.gpusPerNode)))
    return interconnect.networkBandwidth;
  return interconnect.nvlinkBandwidth > 0 ? interconnect.nvlinkBandwidth
                                          : interconnect.pcieBandwidth;
}

double GPUTarget::allReduceSeconds(double bytes, int64_t devices) const {
  if (devices <= 1)
    return 2 * bytes / achievable.memoryBandwidth + launchSeconds();
  double bandwidth = collectiveBandwidth(devices);
  double moved = 2.0 * static_cast<double>(devices - 1) / devices * bytes;
  return (bandwidth > 0 ? moved / bandwidth : 0.0) + launchSeconds();
}

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Target names are what users type after --target=.
static bool isValidTargetName(llvm::StringRef name) {
  return !name.empty() && llvm::all_of(name, [](char c) {
    return llvm::isLower(c) || llvm::isDigit(c) || c == '-';
  });
}

// Physical ranges: every built-in target (and any real GPU) lies well inside
// them. Outside them a figure is a unit mistake, and the time model's
// quotients leave the doubles (a peak of 1e-308 FLOP/s times any kernel at
// inf, a NaN in the remat MILP) or the int64 counts memwall compares
// capacities with.
namespace {
/// FLOP/s and bytes/s.
constexpr double kMinRate = 1;
constexpr double kMaxRate = 1e21;
/// Achievable fractions of a peak.
constexpr double kMinEfficiency = 1e-3;
/// Bytes of device memory, L2 and shared memory per SM: 1 EiB, 1 TiB,
/// 1 GiB.
constexpr uint64_t kMaxCapacityBytes = uint64_t(1) << 60;
constexpr uint64_t kMaxL2Bytes = uint64_t(1) << 40;
constexpr uint64_t kMaxSharedMemoryPerSMBytes = uint64_t(1) << 30;
/// SMs per GPU and GPUs per node.
constexpr unsigned kMaxUnits = 1u << 16;
constexpr double kMaxLaunchSeconds = 1;
} // namespace

/// A rate (FLOP/s, bytes/s) in [kMinRate, kMaxRate], or an error naming
/// `field`.
static llvm::Error checkRate(double value, const llvm::Twine &field,
                             llvm::StringRef unit) {
  if (value >= kMinRate && value <= kMaxRate)
    return llvm::Error::success();
  return makeError(field + " (" + llvm::formatv("{0:e2}", value).str() +
                   ") must be between 1 and 1e+21 " + unit);
}

/// The datasheet rates, before anything is derived from them.
static llvm::Error validatePeakRates(const GPUTarget &target) {
  // A precision a GPU lacks has a peak of 0.
  for (unsigned index = 0; index < kNumMathPrecisions; ++index)
    if (target.peakFlops[index] != 0)
      if (llvm::Error error =
              checkRate(target.peakFlops[index],
                        llvm::Twine("peak_flops.") + kPrecisionNames[index],
                        "FLOP/s (or 0: not supported)"))
        return error;
  return checkRate(target.memoryBandwidth, "memory_bandwidth_bytes_per_s",
                   "bytes/s");
}

/// The rest of the ranges, once the checks of GPUTarget::validate passed.
static llvm::Error validatePhysicalRanges(const GPUTarget &target) {
  if (llvm::Error error =
          checkRate(target.achievable.memoryBandwidth,
                    "achievable.memory_bandwidth_bytes_per_s", "bytes/s"))
    return error;
  for (auto [value, key] :
       {std::pair{target.interconnect.nvlinkBandwidth, "nvlink_bytes_per_s"},
        {target.interconnect.pcieBandwidth, "pcie_bytes_per_s"},
        {target.interconnect.networkBandwidth, "network_bytes_per_s"}})
    if (value != 0) // no NVLink
      if (llvm::Error error =
              checkRate(value, llvm::Twine("interconnect.") + key, "bytes/s"))
        return error;
  auto efficiency = [](double value, const llvm::Twine &field) -> llvm::Error {
    if (value >= kMinEfficiency)
      return llvm::Error::success();
    return makeError(field + " (" + llvm::formatv("{0:e2}", value).str() +
                     ") must be at least 0.001 of the peak");
  };
  for (unsigned index = 0; index < kNumGemmShapeClasses; ++index) {
    if (llvm::Error error =
            efficiency(target.achievable.gemmEfficiency[index],
                       llvm::Twine("achievable.gemm_efficiency.") +
                           kGemmShapeClassNames[index]))
      return error;
    if (llvm::Error error =
            efficiency(target.achievable.generatedGemmEfficiency[index],
                       llvm::Twine("achievable.generated_gemm_efficiency.") +
                           kGemmShapeClassNames[index]))
      return error;
  }
  if (llvm::Error error = efficiency(target.achievable.attentionEfficiency,
                                     "achievable.attention_efficiency"))
    return error;
  for (auto [value, key, limit, limitText] :
       {std::tuple{target.memoryCapacityBytes, "memory_capacity_bytes",
                   kMaxCapacityBytes, "2^60 (1 EiB)"},
        {target.l2Bytes, "l2_bytes", kMaxL2Bytes, "2^40 (1 TiB)"},
        {target.sharedMemoryPerSMBytes, "shared_memory_per_sm_bytes",
         kMaxSharedMemoryPerSMBytes, "2^30 (1 GiB)"},
        {uint64_t(target.smCount), "sm_count", uint64_t(kMaxUnits), "65536"},
        {uint64_t(target.interconnect.gpusPerNode),
         "interconnect.gpus_per_node", uint64_t(kMaxUnits), "65536"}})
    if (value > limit)
      return makeError(llvm::Twine(key) + " (" + llvm::Twine(value) +
                       ") must be at most " + limitText);
  for (auto [value, key] :
       {std::pair{target.kernelLaunchSeconds, "kernel_launch_s"},
        {target.graphKernelLaunchSeconds, "graph_kernel_launch_s"}})
    if (value > kMaxLaunchSeconds)
      return makeError(llvm::Twine(key) + " (" +
                       llvm::formatv("{0:e2}", value).str() +
                       ") must be at most 1 second");
  return llvm::Error::success();
}

llvm::Error GPUTarget::validate() const {
  auto positive = [](double value) {
    return std::isfinite(value) && value > 0;
  };
  if (!isValidTargetName(name))
    return makeError("target name '" + name +
                     "' must be lowercase letters, digits and dashes");
  for (unsigned index = 0; index < kNumMathPrecisions; ++index)
    if (!std::isfinite(peakFlops[index]) || peakFlops[index] < 0)
      return makeError(llvm::Twine("peak_flops.") + kPrecisionNames[index] +
                       " must be a finite non-negative number");
  if (!positive(peakFlops[static_cast<unsigned>(MathPrecision::FP32)]))
    return makeError("peak_flops.fp32 must be positive");
  if (!positive(memoryBandwidth))
    return makeError("memory_bandwidth_bytes_per_s must be positive");
  if (llvm::Error error = validatePeakRates(*this))
    return error;
  if (memoryCapacityBytes == 0)
    return makeError("memory_capacity_bytes must be positive");
  if (smCount == 0)
    return makeError("sm_count must be positive");
  if (l2Bytes == 0)
    return makeError("l2_bytes must be positive");
  if (!std::isfinite(kernelLaunchSeconds) || kernelLaunchSeconds < 0)
    return makeError("kernel_launch_s must be a finite non-negative number");
  if (!std::isfinite(graphKernelLaunchSeconds) || graphKernelLaunchSeconds < 0)
    return makeError(
        "graph_kernel_launch_s must be a finite non-negative number");
  // A kernel cannot beat the datasheet: a figure above it is a unit mistake
  // or a calibration taken on another GPU.
  if (!positive(achievable.memoryBandwidth))
    return makeError("achievable.memory_bandwidth_bytes_per_s must be "
                     "positive");
  if (achievable.memoryBandwidth > memoryBandwidth)
    return makeError(llvm::formatv(
        "achievable.memory_bandwidth_bytes_per_s ({0:e2}) exceeds the "
        "datasheet memory_bandwidth_bytes_per_s ({1:e2}); is the figure for "
        "another GPU?",
        achievable.memoryBandwidth, memoryBandwidth));
  auto fraction = [&](double value) {
    return std::isfinite(value) && value > 0 && value <= 1;
  };
  for (unsigned index = 0; index < kNumGemmShapeClasses; ++index) {
    if (!fraction(achievable.gemmEfficiency[index]))
      return makeError(llvm::Twine("achievable.gemm_efficiency.") +
                       kGemmShapeClassNames[index] +
                       " must be a fraction of the peak in (0, 1]");
    if (!fraction(achievable.generatedGemmEfficiency[index]))
      return makeError(llvm::Twine("achievable.generated_gemm_efficiency.") +
                       kGemmShapeClassNames[index] +
                       " must be a fraction of the peak in (0, 1]");
  }
  if (!fraction(achievable.attentionEfficiency))
    return makeError("achievable.attention_efficiency must be a fraction of "
                     "the peak in (0, 1]");
  for (auto [value, key] :
       {std::pair{interconnect.nvlinkBandwidth, "nvlink_bytes_per_s"},
        {interconnect.pcieBandwidth, "pcie_bytes_per_s"},
        {interconnect.networkBandwidth, "network_bytes_per_s"}})
    if (!std::isfinite(value) || value < 0)
      return makeError(llvm::Twine("interconnect.") + key +
                       " must be a finite non-negative number");
  if (!positive(interconnect.pcieBandwidth))
    return makeError("interconnect.pcie_bytes_per_s must be positive");
  if (!positive(interconnect.networkBandwidth))
    return makeError("interconnect.network_bytes_per_s must be positive");
  if (interconnect.gpusPerNode == 0)
    return makeError("interconnect.gpus_per_node must be positive");
  return validatePhysicalRanges(*this);
}

//===----------------------------------------------------------------------===//
// Built-in targets
//===----------------------------------------------------------------------===//

namespace {
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;
// Per-launch costs; see docs/targets.md (estimates until calibrated).
constexpr double kLaunchSeconds = 2e-6;
constexpr double kGraphLaunchSeconds = 1e-6;

// Achievable fractions measured on an H100 SXM (../baselines: 2026-11-22,
// PyTorch 2.11, CUDA 13; docs/targets.md): a 1 GiB device copy at
// 3.01 TB/s, a cuBLAS bf16 8192^3 GEMM at 767 TFLOP/s, SDPA flash (FA2)
// forward at 356 TFLOP/s. Other GPUs assume the same fractions until
// calibrated; the small and skinny GEMM classes are assumed everywhere.
constexpr double kMeasuredCopyBandwidthH100 = 3.01e12;
constexpr double kCopyFraction = 3.01 / 3.35;
constexpr double kLargeGemmFraction = 767 / 989.4;
constexpr double kSmallGemmFraction = 0.5;
constexpr double kSkinnyGemmFraction = 0.25;
constexpr double kAttentionFraction = 356 / 989.4;
// FlashAttention-2 on an A100 reaches 50-73% of the bf16 peak forward (FA2
// paper, Fig. 4); 0.6 is the middle of that range.
constexpr double kAttentionFractionAmpere = 0.6;
// memwall's generated GEMM (docs/codegen.md). Hopper and later: the wgmma +
// TMA kernel, measured on an H100 SXM (docs/PERFORMANCE.md, 2026-11-24) at
// 0.55 and 0.60 of the bf16 peak on 8192^3 and 16384x4096x4096 but 0.30-0.40
// with K = 768-3072 and an epilogue (GPT-2 MLP, 65536x1024x1024 + GELU):
// the large class is the median of the five, 0.40; the small class is
// assumed at the same ratio to cuBLAS's small figure as before (0.3), the
// skinny one as cuBLAS's. mma.sync on Hopper runs at a measured fraction of
// that (GemmTiling.h, getGemmVariantRelativeRate). Ampere and Ada: assumed,
// mma.sync is the tensor cores' native path there, so a well-pipelined kernel
// reaches 0.9 of cuBLAS.
constexpr double kGeneratedGemmRelativeAmpere = 0.9;
constexpr std::array<double, kNumGemmShapeClasses>
    kGeneratedGemmFractionsHopper = {0.40, 0.3, 0.25};

/// The generated GEMM's assumed fractions on `smArch`, given cuBLAS's.
std::array<double, kNumGemmShapeClasses>
generatedGemmFractions(llvm::StringRef smArch,
                       const std::array<double, kNumGemmShapeClasses> &cublas) {
  if (getSmArchNumber(smArch) >= 90)
    return kGeneratedGemmFractionsHopper;
  std::array<double, kNumGemmShapeClasses> fractions;
  for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
    fractions[index] = kGeneratedGemmRelativeAmpere * cublas[index];
  return fractions;
}

struct Links {
  double nvlink, pcie, network;
};
// Per GPU, one direction (datasheet bidirectional figures halved): NVLink
// 3 = 600 GB/s, NVLink 4 = 900 GB/s, NVLink 5 = 1.8 TB/s, an H100 PCIe
// NVLink bridge = 600 GB/s; PCIe 4.0 x16 = 32 GB/s, 5.0 x16 = 64 GB/s; one
// 200 Gb/s HDR (A100) or 400 Gb/s NDR (Hopper, Blackwell) NIC per GPU as in
// DGX systems, 200 Gb/s assumed for L4 servers and 100 Gb/s for RTX 4090s.
constexpr Links kAmpereLinks = {300e9, 32e9, 25e9};
constexpr Links kHopperLinks = {450e9, 64e9, 50e9};
constexpr Links kHopperPCIeLinks = {300e9, 64e9, 50e9};
constexpr Links kBlackwellLinks = {900e9, 64e9, 50e9};
constexpr Links kL4Links = {0, 32e9, 25e9};
constexpr Links kGeForceLinks = {0, 32e9, 12.5e9};

GPUTarget makeTarget(const char *name, const char *description, double fp32,
                     double tf32, double bf16, double fp16, double fp8,
                     double int8, double bandwidth, uint64_t capacity,
                     uint64_t l2, uint64_t sharedPerSM, unsigned sms,
                     const char *smArch, Links links,
                     double achievableBandwidth = 0,
                     double attentionFraction = kAttentionFraction) {
  GPUTarget target;
  target.name = name;
  target.description = description;
  target.peakFlops = {fp32, tf32, bf16, fp16, fp8, int8};
  target.memoryBandwidth = bandwidth;
  target.memoryCapacityBytes = capacity;
  target.l2Bytes = l2;
  target.sharedMemoryPerSMBytes = sharedPerSM;
  target.smCount = sms;
  target.kernelLaunchSeconds = kLaunchSeconds;
  target.graphKernelLaunchSeconds = kGraphLaunchSeconds;
  target.smArch = smArch;
  target.achievable.memoryBandwidth =
      achievableBandwidth > 0 ? achievableBandwidth : kCopyFraction * bandwidth;
  target.achievable.gemmEfficiency = {kLargeGemmFraction, kSmallGemmFraction,
                                      kSkinnyGemmFraction};
  target.achievable.generatedGemmEfficiency =
      generatedGemmFractions(smArch, target.achievable.gemmEfficiency);
  target.achievable.attentionEfficiency = attentionFraction;
  target.interconnect.nvlinkBandwidth = links.nvlink;
  target.interconnect.pcieBandwidth = links.pcie;
  target.interconnect.networkBandwidth = links.network;
  target.interconnect.gpusPerNode = 8;
  return target;
}

const std::vector<GPUTarget> &builtinTargets() {
  // Sources and conventions for every figure: docs/targets.md.
  static const std::vector<GPUTarget> targets = {
      //          name, description,
      //          fp32, tf32, bf16, fp16, fp8, int8 (dense TFLOP/s or TOP/s),
      //          bandwidth, capacity, L2, shared memory per SM, SMs, arch,
      //          links[, measured copy bandwidth, attention fraction]
      // A100 datasheet, SXM column; Ampere whitepaper / tuning guide.
      makeTarget("a100-40gb", "NVIDIA A100 SXM4 40GB", 19.5e12, 156e12, 312e12,
                 312e12, 0, 624e12, 1555e9, 40 * kGiB, 40 * kMiB, 164 * kKiB,
                 108, "sm_80", kAmpereLinks, 0, kAttentionFractionAmpere),
      makeTarget("a100-80gb", "NVIDIA A100 SXM4 80GB", 19.5e12, 156e12, 312e12,
                 312e12, 0, 624e12, 2039e9, 80 * kGiB, 40 * kMiB, 164 * kKiB,
                 108, "sm_80", kAmpereLinks, 0, kAttentionFractionAmpere),
      // H100 datasheet (SXM / PCIe columns); Hopper whitepaper for the
      // unrounded dense rates.
      makeTarget("h100-sxm", "NVIDIA H100 SXM5 80GB", 66.9e12, 494.7e12,
                 989.4e12, 989.4e12, 1978.9e12, 1978.9e12, 3350e9, 80 * kGiB,
                 50 * kMiB, 228 * kKiB, 132, "sm_90a", kHopperLinks,
                 kMeasuredCopyBandwidthH100),
      makeTarget("h100-pcie", "NVIDIA H100 PCIe 80GB", 51.2e12, 378e12, 756e12,
                 756e12, 1513e12, 1513e12, 2000e9, 80 * kGiB, 50 * kMiB,
                 228 * kKiB, 114, "sm_90a", kHopperPCIeLinks),
      // H200 datasheet: H100 SXM compute with HBM3e.
      makeTarget("h200", "NVIDIA H200 SXM 141GB", 66.9e12, 494.7e12, 989.4e12,
                 989.4e12, 1978.9e12, 1978.9e12, 4800e9, 141 * kGiB, 50 * kMiB,
                 228 * kKiB, 132, "sm_90a", kHopperLinks),
      // HGX B200 per-GPU figures at 1000 W; SMs and L2 measured, not from a
      // datasheet.
      makeTarget("b200", "NVIDIA B200 180GB (HGX B200)", 75e12, 1100e12,
                 2250e12, 2250e12, 4500e12, 4500e12, 8000e9, 180 * kGiB,
                 126 * kMiB, 228 * kKiB, 148, "sm_100a", kBlackwellLinks),
      // L4 datasheet; SM count from its FP32 rate at the 2040 MHz boost.
      makeTarget("l4", "NVIDIA L4 24GB", 30.3e12, 60e12, 121e12, 121e12,
                 242.5e12, 242.5e12, 300e9, 24 * kGiB, 48 * kMiB, 100 * kKiB,
                 58, "sm_89", kL4Links),
      // Ada Lovelace whitepaper, GeForce RTX 4090 column (FP32 accumulate).
      makeTarget("rtx-4090", "NVIDIA GeForce RTX 4090 24GB", 82.6e12, 82.6e12,
                 165.2e12, 165.2e12, 330.3e12, 660.6e12, 1008e9, 24 * kGiB,
                 72 * kMiB, 100 * kKiB, 128, "sm_89", kGeForceLinks),
  };
  return targets;
}
} // namespace

llvm::ArrayRef<GPUTarget> memwall::getBuiltinGPUTargets() {
  return builtinTargets();
}

const GPUTarget *memwall::lookupBuiltinGPUTarget(llvm::StringRef name) {
  for (const GPUTarget &target : builtinTargets())
    if (target.name == name)
      return &target;
  return nullptr;
}

static std::string listBuiltinNames() {
  std::string names;
  llvm::raw_string_ostream os(names);
  llvm::interleaveComma(builtinTargets(), os,
                        [&](const GPUTarget &target) { os << target.name; });
  return names;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// Reads `peak_flops`: {"fp32": ..., "bf16": ...} in FLOP/s.
static void readPeaks(const llvm::json::Object &object,
                      JSONObjectReader &reader, GPUTarget &target) {
  const llvm::json::Value *field = object.get("peak_flops");
  if (!field)
    return;
  const llvm::json::Object *peaks = field->getAsObject();
  if (!peaks)
    return reader.fail("peak_flops", "must be an object {\"fp32\": ..., ...}");
  for (const auto &[key, value] : *peaks) {
    std::string name = ("peak_flops." + llvm::StringRef(key)).str();
    std::optional<MathPrecision> precision = symbolizeMathPrecision(key);
    if (!precision)
      return reader.fail(name, "is not a precision (fp32, tf32, bf16, fp16, "
                               "fp8, int8)");
    std::optional<double> number = value.getAsNumber();
    if (!number || !std::isfinite(*number) || *number < 0)
      return reader.fail(name, "must be a non-negative number of FLOP/s");
    target.peakFlops[static_cast<unsigned>(*precision)] = *number;
  }
}

/// Reads a non-negative count of bytes or units into an unsigned field.
template <typename T>
static void readCount(JSONObjectReader &reader, llvm::StringRef key, T &value) {
  int64_t count = static_cast<int64_t>(value);
  reader.readInteger(key, count);
  // sm_count is 32-bit: a count that does not fit must not wrap to zero.
  if (static_cast<uint64_t>(count) > std::numeric_limits<T>::max())
    return reader.fail(key, "is too large");
  value = static_cast<T>(count);
}

/// The nested object `key`, or null (failing `reader` when it is not one).
static const llvm::json::Object *readObject(const llvm::json::Object &object,
                                            JSONObjectReader &reader,
                                            llvm::StringRef key) {
  const llvm::json::Value *field = object.get(key);
  if (!field)
    return nullptr;
  const llvm::json::Object *nested = field->getAsObject();
  if (!nested)
    reader.fail(key, "must be an object");
  return nested;
}

/// Reads `achievable`: {"memory_bandwidth_bytes_per_s", "gemm_efficiency":
/// {"large", "small", "skinny"}, "attention_efficiency"}.
static void readAchievable(const llvm::json::Object &object,
                           JSONObjectReader &reader, llvm::StringRef bufferName,
                           GPUTarget &target) {
  const llvm::json::Object *achievable =
      readObject(object, reader, "achievable");
  if (!achievable)
    return;
  JSONObjectReader nested(*achievable, bufferName, "achievable.");
  nested.rejectUnknownKeys({"memory_bandwidth_bytes_per_s", "gemm_efficiency",
                            "generated_gemm_efficiency",
                            "attention_efficiency"},
                           "field of \"achievable\"");
  nested.readNumber("memory_bandwidth_bytes_per_s",
                    target.achievable.memoryBandwidth, /*positive=*/true);
  nested.readNumber("attention_efficiency",
                    target.achievable.attentionEfficiency, /*positive=*/true);
  for (auto [key, fractions] :
       {std::pair{"gemm_efficiency", &target.achievable.gemmEfficiency},
        {"generated_gemm_efficiency",
         &target.achievable.generatedGemmEfficiency}}) {
    const llvm::json::Object *gemm = readObject(*achievable, nested, key);
    if (!gemm)
      continue;
    std::string prefix = "achievable." + std::string(key) + ".";
    JSONObjectReader classes(*gemm, bufferName, prefix);
    classes.rejectUnknownKeys({"large", "small", "skinny"}, "GEMM shape class");
    for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
      classes.readNumber(kGemmShapeClassNames[index], (*fractions)[index],
                         /*positive=*/true);
    nested.adopt(classes.takeError());
  }
  reader.adopt(nested.takeError());
}

/// Reads `interconnect`: link bandwidths and GPUs per node.
static void readInterconnect(const llvm::json::Object &object,
                             JSONObjectReader &reader,
                             llvm::StringRef bufferName, GPUTarget &target) {
  const llvm::json::Object *links = readObject(object, reader, "interconnect");
  if (!links)
    return;
  JSONObjectReader nested(*links, bufferName, "interconnect.");
  nested.rejectUnknownKeys({"nvlink_bytes_per_s", "pcie_bytes_per_s",
                            "network_bytes_per_s", "gpus_per_node"},
                           "field of \"interconnect\"");
  nested.readNumber("nvlink_bytes_per_s", target.interconnect.nvlinkBandwidth);
  nested.readNumber("pcie_bytes_per_s", target.interconnect.pcieBandwidth,
                    /*positive=*/true);
  nested.readNumber("network_bytes_per_s", target.interconnect.networkBandwidth,
                    /*positive=*/true);
  readCount(nested, "gpus_per_node", target.interconnect.gpusPerNode);
  reader.adopt(nested.takeError());
}

llvm::Expected<GPUTarget>
memwall::parseGPUTargetJSON(llvm::StringRef jsonText,
                            llvm::StringRef bufferName) {
  llvm::Expected<llvm::json::Object> object =
      parseJSONObjectWithLocation(jsonText, bufferName, "a target");
  if (!object)
    return object.takeError();

  JSONObjectReader reader(*object, bufferName);
  reader.rejectUnknownKeys(
      {"name", "description", "base", "peak_flops",
       "memory_bandwidth_bytes_per_s", "memory_capacity_bytes", "l2_bytes",
       "shared_memory_per_sm_bytes", "sm_count", "kernel_launch_s",
       "graph_kernel_launch_s", "launch_mode", "sm_arch", "achievable",
       "interconnect", "calibration"},
      "target field");
  reader.requireKeys({"name"});

  GPUTarget target;
  target.kernelLaunchSeconds = kLaunchSeconds;
  target.graphKernelLaunchSeconds = kGraphLaunchSeconds;
  std::string baseName;
  reader.readString("base", baseName);
  if (!baseName.empty()) {
    const GPUTarget *base = lookupBuiltinGPUTarget(baseName);
    if (!base)
      reader.fail("base", "names no built-in target; valid targets: " +
                              listBuiltinNames());
    else
      target = *base;
    target.baseName = baseName;
  } else {
    reader.requireKeys({"peak_flops", "memory_bandwidth_bytes_per_s",
                        "memory_capacity_bytes", "sm_count", "l2_bytes"},
                       "(or give \"base\" to start from a built-in target)");
  }

  reader.readString("name", target.name);
  reader.readString("description", target.description);
  reader.readString("sm_arch", target.smArch);
  readPeaks(*object, reader, target);
  double datasheetBandwidth = target.memoryBandwidth;
  reader.readNumber("memory_bandwidth_bytes_per_s", target.memoryBandwidth);
  // Without a base or an explicit figure, kernels reach the fraction of the
  // datasheet bandwidth measured on an H100 (docs/targets.md).
  if (target.memoryBandwidth != datasheetBandwidth || baseName.empty())
    target.achievable.memoryBandwidth = kCopyFraction * target.memoryBandwidth;
  if (baseName.empty()) {
    target.achievable.gemmEfficiency = {kLargeGemmFraction, kSmallGemmFraction,
                                        kSkinnyGemmFraction};
    target.achievable.generatedGemmEfficiency = {};
    target.achievable.attentionEfficiency = kAttentionFraction;
    target.interconnect.pcieBandwidth = kHopperLinks.pcie;
    target.interconnect.networkBandwidth = kHopperLinks.network;
  }
  readCount(reader, "memory_capacity_bytes", target.memoryCapacityBytes);
  readCount(reader, "l2_bytes", target.l2Bytes);
  readCount(reader, "shared_memory_per_sm_bytes",
            target.sharedMemoryPerSMBytes);
  readCount(reader, "sm_count", target.smCount);
  reader.readNumber("kernel_launch_s", target.kernelLaunchSeconds);
  reader.readNumber("graph_kernel_launch_s", target.graphKernelLaunchSeconds);
  std::string launchMode;
  reader.readString("launch_mode", launchMode);
  if (!launchMode.empty()) {
    if (std::optional<LaunchMode> mode = symbolizeLaunchMode(launchMode))
      target.launchMode = *mode;
    else
      reader.fail("launch_mode", "must be \"stream\" or \"graph\"");
  }
  readAchievable(*object, reader, bufferName, target);
  // Without a base or an explicit figure, the generated GEMM's fractions
  // follow the architecture and the file's cuBLAS fractions.
  std::array<double, kNumGemmShapeClasses> assumed =
      generatedGemmFractions(target.smArch, target.achievable.gemmEfficiency);
  for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
    if (target.achievable.generatedGemmEfficiency[index] == 0)
      target.achievable.generatedGemmEfficiency[index] = assumed[index];
  readInterconnect(*object, reader, bufferName, target);
  reader.readString("calibration", target.calibration);
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  if (llvm::Error error = target.validate())
    return makeError(bufferName + ": " + llvm::toString(std::move(error)));
  return target;
}

llvm::Expected<GPUTarget> memwall::loadGPUTargetFile(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readTextInput(path, "target file", kMaxJSONInputBytes);
  if (!buffer)
    return buffer.takeError();
  return parseGPUTargetJSON((*buffer)->getBuffer(), path);
}

llvm::Expected<GPUTarget>
memwall::resolveGPUTarget(llvm::StringRef targetName,
                          llvm::StringRef targetFile) {
  if (!targetFile.empty()) {
    llvm::Expected<GPUTarget> target = loadGPUTargetFile(targetFile);
    if (!target || targetName.empty() || target->name == targetName ||
        target->baseName == targetName)
      return target;
    if (!target->baseName.empty())
      return makeError("--target=" + targetName + " contradicts '" +
                       targetFile + "': its \"base\" is '" + target->baseName +
                       "' (a calibration file for another GPU)");
    return makeError("--target=" + targetName + " contradicts the target '" +
                     target->name + "' described in '" + targetFile +
                     "' (its \"name\")");
  }
  if (const GPUTarget *target = lookupBuiltinGPUTarget(targetName))
    return *target;
  return makeError("unknown target '" + targetName +
                   "'; valid targets: " + listBuiltinNames());
}

unsigned memwall::getSmArchNumber(llvm::StringRef smArch) {
  unsigned number = 0;
  if (!smArch.consume_front("sm_") ||
      smArch.take_while(llvm::isDigit).getAsInteger(10, number))
    return 0;
  return number;
}

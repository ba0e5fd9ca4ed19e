//===- GPUTarget.cpp - built-in GPUs and target JSON ----------------------===//
//
// Peak rates below are dense (no structured sparsity). docs/targets.md lists
// every figure with its source and says which ones are not from a datasheet.
//
//===----------------------------------------------------------------------===//

#include "memwall/Hardware/GPUTarget.h"

#include "memwall/Support/JSONDiagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
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

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Target names are what users type after --target=.
static bool isValidTargetName(llvm::StringRef name) {
  return !name.empty() && llvm::all_of(name, [](char c) {
    return llvm::isLower(c) || llvm::isDigit(c) || c == '-';
  });
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
  if (memoryCapacityBytes == 0)
    return makeError("memory_capacity_bytes must be positive");
  if (smCount == 0)
    return makeError("sm_count must be positive");
  if (!std::isfinite(kernelLaunchSeconds) || kernelLaunchSeconds < 0)
    return makeError("kernel_launch_s must be a finite non-negative number");
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Built-in targets
//===----------------------------------------------------------------------===//

namespace {
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;
// Per-launch cost charged to every kernel; see docs/targets.md.
constexpr double kLaunchSeconds = 2e-6;

GPUTarget makeTarget(const char *name, const char *description, double fp32,
                     double tf32, double bf16, double fp16, double fp8,
                     double int8, double bandwidth, uint64_t capacity,
                     uint64_t l2, uint64_t sharedPerSM, unsigned sms,
                     const char *smArch) {
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
  target.smArch = smArch;
  return target;
}

const std::vector<GPUTarget> &builtinTargets() {
  // Sources and conventions for every figure: docs/targets.md.
  static const std::vector<GPUTarget> targets = {
      //          name, description,
      //          fp32, tf32, bf16, fp16, fp8, int8 (dense TFLOP/s or TOP/s),
      //          bandwidth, capacity, L2, shared memory per SM, SMs, arch
      // A100 datasheet, SXM column; Ampere whitepaper / tuning guide.
      makeTarget("a100-40gb", "NVIDIA A100 SXM4 40GB", 19.5e12, 156e12, 312e12,
                 312e12, 0, 624e12, 1555e9, 40 * kGiB, 40 * kMiB, 164 * kKiB,
                 108, "sm_80"),
      makeTarget("a100-80gb", "NVIDIA A100 SXM4 80GB", 19.5e12, 156e12, 312e12,
                 312e12, 0, 624e12, 2039e9, 80 * kGiB, 40 * kMiB, 164 * kKiB,
                 108, "sm_80"),
      // H100 datasheet (SXM / PCIe columns); Hopper whitepaper for the
      // unrounded dense rates.
      makeTarget("h100-sxm", "NVIDIA H100 SXM5 80GB", 66.9e12, 494.7e12,
                 989.4e12, 989.4e12, 1978.9e12, 1978.9e12, 3350e9, 80 * kGiB,
                 50 * kMiB, 228 * kKiB, 132, "sm_90a"),
      makeTarget("h100-pcie", "NVIDIA H100 PCIe 80GB", 51.2e12, 378e12, 756e12,
                 756e12, 1513e12, 1513e12, 2000e9, 80 * kGiB, 50 * kMiB,
                 228 * kKiB, 114, "sm_90a"),
      // H200 datasheet: H100 SXM compute with HBM3e.
      makeTarget("h200", "NVIDIA H200 SXM 141GB", 66.9e12, 494.7e12, 989.4e12,
                 989.4e12, 1978.9e12, 1978.9e12, 4800e9, 141 * kGiB, 50 * kMiB,
                 228 * kKiB, 132, "sm_90a"),
      // HGX B200 per-GPU figures at 1000 W; SMs and L2 measured, not from a
      // datasheet.
      makeTarget("b200", "NVIDIA B200 180GB (HGX B200)", 75e12, 1100e12,
                 2250e12, 2250e12, 4500e12, 4500e12, 8000e9, 180 * kGiB,
                 126 * kMiB, 228 * kKiB, 148, "sm_100a"),
      // L4 datasheet; SM count from its FP32 rate at the 2040 MHz boost.
      makeTarget("l4", "NVIDIA L4 24GB", 30.3e12, 60e12, 121e12, 121e12,
                 242.5e12, 242.5e12, 300e9, 24 * kGiB, 48 * kMiB, 100 * kKiB,
                 58, "sm_89"),
      // Ada Lovelace whitepaper, GeForce RTX 4090 column (FP32 accumulate).
      makeTarget("rtx-4090", "NVIDIA GeForce RTX 4090 24GB", 82.6e12, 82.6e12,
                 165.2e12, 165.2e12, 330.3e12, 660.6e12, 1008e9, 24 * kGiB,
                 72 * kMiB, 100 * kKiB, 128, "sm_89"),
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
       "shared_memory_per_sm_bytes", "sm_count", "kernel_launch_s", "sm_arch"},
      "target field");
  reader.requireKeys({"name"});

  GPUTarget target;
  target.kernelLaunchSeconds = kLaunchSeconds;
  std::string baseName;
  reader.readString("base", baseName);
  if (!baseName.empty()) {
    const GPUTarget *base = lookupBuiltinGPUTarget(baseName);
    if (!base)
      reader.fail("base", "names no built-in target; valid targets: " +
                              listBuiltinNames());
    else
      target = *base;
  } else {
    reader.requireKeys({"peak_flops", "memory_bandwidth_bytes_per_s",
                        "memory_capacity_bytes", "sm_count"},
                       "(or give \"base\" to start from a built-in target)");
  }

  reader.readString("name", target.name);
  reader.readString("description", target.description);
  reader.readString("sm_arch", target.smArch);
  readPeaks(*object, reader, target);
  reader.readNumber("memory_bandwidth_bytes_per_s", target.memoryBandwidth);
  readCount(reader, "memory_capacity_bytes", target.memoryCapacityBytes);
  readCount(reader, "l2_bytes", target.l2Bytes);
  readCount(reader, "shared_memory_per_sm_bytes",
            target.sharedMemoryPerSMBytes);
  readCount(reader, "sm_count", target.smCount);
  reader.readNumber("kernel_launch_s", target.kernelLaunchSeconds);
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  if (llvm::Error error = target.validate())
    return makeError(bufferName + ": " + llvm::toString(std::move(error)));
  return target;
}

llvm::Expected<GPUTarget> memwall::loadGPUTargetFile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return makeError("cannot read target file '" + path +
                     "': " + buffer.getError().message());
  return parseGPUTargetJSON((*buffer)->getBuffer(), path);
}

llvm::Expected<GPUTarget>
memwall::resolveGPUTarget(llvm::StringRef targetName,
                          llvm::StringRef targetFile) {
  if (!targetFile.empty()) {
    llvm::Expected<GPUTarget> target = loadGPUTargetFile(targetFile);
    if (target && !targetName.empty() && target->name != targetName)
      return makeError("--target=" + targetName + " contradicts the target '" +
                       target->name + "' described in '" + targetFile + "'");
    return target;
  }
  if (const GPUTarget *target = lookupBuiltinGPUTarget(targetName))
    return *target;
  return makeError("unknown target '" + targetName +
                   "'; valid targets: " + listBuiltinNames());
}

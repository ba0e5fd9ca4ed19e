//===- GPUTargetTest.cpp - built-in targets and target JSON ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Hardware/GPUTarget.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace memwall;

namespace {
std::string errorOf(llvm::Expected<GPUTarget> target) {
  if (target)
    return "";
  return llvm::toString(target.takeError());
}

double peak(const GPUTarget &target, MathPrecision precision) {
  return target.peakFlops[static_cast<unsigned>(precision)];
}

/// Writes every field under its documented JSON key (docs/targets.md), so a
/// parse of the result must give back the same target.
std::string toJSONText(const GPUTarget &target) {
  llvm::json::Object peaks;
  for (unsigned index = 0; index < kNumMathPrecisions; ++index)
    peaks[stringifyMathPrecision(static_cast<MathPrecision>(index))] =
        target.peakFlops[index];
  llvm::json::Object object{
      {"name", target.name},
      {"description", target.description},
      {"peak_flops", std::move(peaks)},
      {"memory_bandwidth_bytes_per_s", target.memoryBandwidth},
      {"memory_capacity_bytes", target.memoryCapacityBytes},
      {"l2_bytes", target.l2Bytes},
      {"shared_memory_per_sm_bytes", target.sharedMemoryPerSMBytes},
      {"sm_count", target.smCount},
      {"kernel_launch_s", target.kernelLaunchSeconds},
      {"sm_arch", target.smArch}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(object)));
  return text;
}

void expectSameFigures(const GPUTarget &actual, const GPUTarget &expected) {
  EXPECT_EQ(actual.description, expected.description);
  for (unsigned index = 0; index < kNumMathPrecisions; ++index)
    EXPECT_EQ(actual.peakFlops[index], expected.peakFlops[index])
        << stringifyMathPrecision(static_cast<MathPrecision>(index)).str();
  EXPECT_EQ(actual.memoryBandwidth, expected.memoryBandwidth);
  EXPECT_EQ(actual.memoryCapacityBytes, expected.memoryCapacityBytes);
  EXPECT_EQ(actual.l2Bytes, expected.l2Bytes);
  EXPECT_EQ(actual.sharedMemoryPerSMBytes, expected.sharedMemoryPerSMBytes);
  EXPECT_EQ(actual.smCount, expected.smCount);
  EXPECT_EQ(actual.kernelLaunchSeconds, expected.kernelLaunchSeconds);
  EXPECT_EQ(actual.smArch, expected.smArch);
  for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
    EXPECT_EQ(actual.achievable.generatedGemmEfficiency[index],
              expected.achievable.generatedGemmEfficiency[index]);
}
} // namespace

//===----------------------------------------------------------------------===//
// Precisions
//===----------------------------------------------------------------------===//

TEST(MathPrecisionTest, NamesRoundTripAndUnknownNamesAreRejected) {
  const char *names[] = {"fp32", "tf32", "bf16", "fp16", "fp8", "int8"};
  for (unsigned index = 0; index < kNumMathPrecisions; ++index) {
    auto precision = static_cast<MathPrecision>(index);
    EXPECT_EQ(stringifyMathPrecision(precision), names[index]);
    EXPECT_EQ(symbolizeMathPrecision(names[index]), precision);
  }
  EXPECT_EQ(symbolizeMathPrecision("fp64"), std::nullopt);
  EXPECT_EQ(symbolizeMathPrecision("BF16"), std::nullopt);
  EXPECT_EQ(symbolizeMathPrecision(""), std::nullopt);
}

//===----------------------------------------------------------------------===//
// Built-in targets
//===----------------------------------------------------------------------===//

TEST(GPUTargetTest, EveryBuiltinValidatesAndIsNamedForTheCommandLine) {
  std::vector<std::string> expected = {"a100-40gb", "a100-80gb", "h100-sxm",
                                       "h100-pcie", "h200",      "b200",
                                       "l4",        "rtx-4090"};
  std::vector<std::string> names;
  for (const GPUTarget &target : getBuiltinGPUTargets()) {
    names.push_back(target.name);
    EXPECT_FALSE(static_cast<bool>(target.validate())) << target.name;
    EXPECT_TRUE(llvm::all_of(target.name, [](char c) {
      return llvm::isLower(c) || llvm::isDigit(c) || c == '-';
    })) << target.name;
    EXPECT_FALSE(target.description.empty()) << target.name;
    EXPECT_TRUE(llvm::StringRef(target.smArch).starts_with("sm_"))
        << target.name;
    EXPECT_GT(target.l2Bytes, 0u) << target.name;
    EXPECT_GT(target.sharedMemoryPerSMBytes, 0u) << target.name;
    EXPECT_EQ(target.kernelLaunchSeconds, 2e-6) << target.name;
    // Every built-in has tensor cores: they outrun the CUDA cores, and each
    // narrower type is at least as fast as the wider one.
    EXPECT_GT(peak(target, MathPrecision::BF16),
              peak(target, MathPrecision::FP32))
        << target.name;
    EXPECT_GE(peak(target, MathPrecision::BF16),
              peak(target, MathPrecision::TF32))
        << target.name;
    EXPECT_GE(peak(target, MathPrecision::INT8),
              peak(target, MathPrecision::BF16))
        << target.name;
  }
  EXPECT_EQ(names, expected);
}

TEST(GPUTargetTest, LookupFindsEveryBuiltinByNameAndNothingElse) {
  for (const GPUTarget &target : getBuiltinGPUTargets()) {
    const GPUTarget *found = lookupBuiltinGPUTarget(target.name);
    ASSERT_NE(found, nullptr) << target.name;
    EXPECT_EQ(found, &target);
  }
  EXPECT_EQ(lookupBuiltinGPUTarget("h100"), nullptr);
  EXPECT_EQ(lookupBuiltinGPUTarget("H100-SXM"), nullptr);
  EXPECT_EQ(lookupBuiltinGPUTarget(""), nullptr);

  llvm::Expected<GPUTarget> byDefault =
      resolveGPUTarget(kDefaultGPUTargetName, "");
  ASSERT_TRUE(static_cast<bool>(byDefault))
      << llvm::toString(byDefault.takeError());
  EXPECT_EQ(byDefault->name, "h100-sxm");
}

TEST(GPUTargetTest, UnknownNamesListTheValidOnes) {
  EXPECT_EQ(errorOf(resolveGPUTarget("h100", "")),
            "unknown target 'h100'; valid targets: a100-40gb, a100-80gb, "
            "h100-sxm, h100-pcie, h200, b200, l4, rtx-4090");
}

TEST(GPUTargetTest, H100RidgeIsPeakOverBandwidth) {
  const GPUTarget *h100 = lookupBuiltinGPUTarget("h100-sxm");
  ASSERT_NE(h100, nullptr);
  // By hand: 989.4e12 FLOP/s / 3.35e12 B/s = 295.343... FLOP/byte.
  EXPECT_DOUBLE_EQ(h100->ridgeFor(MathPrecision::BF16), 989.4e12 / 3.35e12);
  EXPECT_NEAR(h100->ridgeFor(MathPrecision::BF16), 295.343, 1e-3);
  // 66.9e12 / 3.35e12 = 19.970...: CUDA-core kernels turn compute-bound at
  // about 20 FLOP/byte.
  EXPECT_NEAR(h100->ridgeFor(MathPrecision::FP32), 19.970, 1e-3);
  EXPECT_EQ(h100->memoryCapacityBytes, 80ull << 30);
  EXPECT_EQ(h100->smCount, 132u);
}

TEST(GPUTargetTest, MissingPrecisionFallsBackToTheNextWiderOne) {
  const GPUTarget *a100 = lookupBuiltinGPUTarget("a100-40gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_FALSE(a100->supports(MathPrecision::FP8));
  EXPECT_TRUE(a100->supports(MathPrecision::INT8));
  // FP8 on an A100 runs at the FP16 tensor-core rate, 312 TFLOP/s.
  EXPECT_EQ(a100->peakFor(MathPrecision::FP8), 312e12);
  EXPECT_EQ(a100->peakFor(MathPrecision::INT8), 624e12);
  EXPECT_DOUBLE_EQ(a100->ridgeFor(MathPrecision::FP8), 312e12 / 1555e9);
  EXPECT_TRUE(lookupBuiltinGPUTarget("h100-sxm")->supports(MathPrecision::FP8));

  // A BF16-only tensor core: FP16, FP8 and INT8 all land on it.
  GPUTarget bf16Only;
  bf16Only.peakFlops = {1e12, 0, 8e12, 0, 0, 0};
  EXPECT_EQ(bf16Only.peakFor(MathPrecision::FP16), 8e12);
  EXPECT_EQ(bf16Only.peakFor(MathPrecision::FP8), 8e12);
  EXPECT_EQ(bf16Only.peakFor(MathPrecision::INT8), 8e12);
  EXPECT_EQ(bf16Only.peakFor(MathPrecision::TF32), 1e12);

  // No tensor cores at all: everything runs on the CUDA cores.
  GPUTarget fp32Only;
  fp32Only.peakFlops = {1e12, 0, 0, 0, 0, 0};
  for (unsigned index = 0; index < kNumMathPrecisions; ++index)
    EXPECT_EQ(fp32Only.peakFor(static_cast<MathPrecision>(index)), 1e12);
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

TEST(GPUTargetJSONTest, EveryBuiltinRoundTripsWithoutBase) {
  for (const GPUTarget &builtin : getBuiltinGPUTargets()) {
    GPUTarget renamed = builtin;
    renamed.name = "copy-of-" + builtin.name;
    llvm::Expected<GPUTarget> parsed =
        parseGPUTargetJSON(toJSONText(renamed), "t.json");
    ASSERT_TRUE(static_cast<bool>(parsed))
        << builtin.name << ": " << llvm::toString(parsed.takeError());
    EXPECT_EQ(parsed->name, renamed.name);
    expectSameFigures(*parsed, builtin);
  }
}

TEST(GPUTargetJSONTest, BaseAloneCopiesTheBuiltin) {
  for (const GPUTarget &builtin : getBuiltinGPUTargets()) {
    std::string text = R"({"name": "mine", "base": ")" + builtin.name + R"("})";
    llvm::Expected<GPUTarget> parsed = parseGPUTargetJSON(text, "t.json");
    ASSERT_TRUE(static_cast<bool>(parsed))
        << builtin.name << ": " << llvm::toString(parsed.takeError());
    EXPECT_EQ(parsed->name, "mine");
    expectSameFigures(*parsed, builtin);
  }
}

TEST(GPUTargetJSONTest, BaseIsOverriddenOnlyWhereAKeyIsGiven) {
  llvm::Expected<GPUTarget> target = parseGPUTargetJSON(
      R"({"name": "slow-h100", "base": "h100-sxm",
          "memory_bandwidth_bytes_per_s": 2e12,
          "peak_flops": {"bf16": 5e14},
          "kernel_launch_s": 5e-6, "sm_arch": "sm_90"})",
      "t.json");
  ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
  EXPECT_EQ(target->name, "slow-h100");
  EXPECT_EQ(target->memoryBandwidth, 2e12);
  EXPECT_EQ(peak(*target, MathPrecision::BF16), 5e14);
  EXPECT_EQ(target->kernelLaunchSeconds, 5e-6);
  EXPECT_EQ(target->smArch, "sm_90");
  // Inherited from the base, including peaks not named in "peak_flops".
  const GPUTarget *h100 = lookupBuiltinGPUTarget("h100-sxm");
  EXPECT_EQ(peak(*target, MathPrecision::FP16), 989.4e12);
  EXPECT_EQ(peak(*target, MathPrecision::FP8), 1978.9e12);
  EXPECT_EQ(target->description, h100->description);
  EXPECT_EQ(target->memoryCapacityBytes, h100->memoryCapacityBytes);
  EXPECT_EQ(target->smCount, 132u);
}

TEST(GPUTargetJSONTest, WithoutBaseOnlyTheRequiredFieldsAreNeeded) {
  llvm::Expected<GPUTarget> target = parseGPUTargetJSON(
      R"({"name": "tiny", "peak_flops": {"fp32": 1e12, "bf16": 8e12},
          "memory_bandwidth_bytes_per_s": 1e11,
          "memory_capacity_bytes": 1073741824, "sm_count": 4,
          "l2_bytes": 4194304})",
      "t.json");
  ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
  EXPECT_EQ(target->ridgeFor(MathPrecision::BF16), 80);
  EXPECT_FALSE(target->supports(MathPrecision::FP16));
  // Optional fields take their defaults: achievable rates are the H100's
  // measured fractions of the peaks (3.01 of 3.35 TB/s; 767 of 989.4
  // TFLOP/s for large GEMMs).
  EXPECT_EQ(target->description, "");
  EXPECT_NEAR(target->achievable.memoryBandwidth, 1e11 * 3.01 / 3.35, 1);
  EXPECT_NEAR(target->achievable.gemmEfficiency[0], 0.7752, 1e-4);
  EXPECT_EQ(target->sharedMemoryPerSMBytes, 0u);
  EXPECT_EQ(target->kernelLaunchSeconds, 2e-6);
  EXPECT_EQ(target->smArch, "");
}

TEST(GPUTargetJSONTest, TheFullExampleInTheDocsIsAnH100Sxm) {
  // The second example in docs/targets.md, verbatim.
  llvm::Expected<GPUTarget> target = parseGPUTargetJSON(R"({
  "name": "my-gpu",
  "description": "An H100 SXM written out in full",
  "peak_flops": {"fp32": 6.69e13, "tf32": 4.947e14, "bf16": 9.894e14,
                 "fp16": 9.894e14, "fp8": 1.9789e15, "int8": 1.9789e15},
  "memory_bandwidth_bytes_per_s": 3.35e12,
  "memory_capacity_bytes": 85899345920,
  "l2_bytes": 52428800,
  "shared_memory_per_sm_bytes": 233472,
  "sm_count": 132,
  "kernel_launch_s": 2e-6,
  "sm_arch": "sm_90a"
})",
                                                        "docs.json");
  ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
  GPUTarget expected = *lookupBuiltinGPUTarget("h100-sxm");
  expected.description = "An H100 SXM written out in full";
  expectSameFigures(*target, expected);
}

TEST(GPUTargetJSONTest, WithoutBaseEachRequiredFieldIsNamedWhenMissing) {
  const char *required[] = {"peak_flops", "memory_bandwidth_bytes_per_s",
                            "memory_capacity_bytes", "sm_count"};
  for (const char *missing : required) {
    llvm::json::Object object{
        {"name", "tiny"},
        {"peak_flops", llvm::json::Object{{"fp32", 1e12}}},
        {"memory_bandwidth_bytes_per_s", 1e11},
        {"memory_capacity_bytes", 1 << 30},
        {"sm_count", 4}};
    object.erase(missing);
    std::string text;
    llvm::raw_string_ostream(text) << llvm::json::Value(std::move(object));
    EXPECT_EQ(errorOf(parseGPUTargetJSON(text, "t.json")),
              std::string("t.json: \"") + missing +
                  "\" is required (or give \"base\" to start from a "
                  "built-in target)");
  }
}

TEST(GPUTargetJSONTest, SyntaxErrorsCarryLineAndColumn) {
  // The missing comma is noticed at the next key: line 3, column 2.
  EXPECT_EQ(errorOf(parseGPUTargetJSON(
                "{\"name\": \"x\",\n \"base\": \"h100-sxm\"\n \"sm_count\": 1}",
                "my.json")),
            "my.json:3:2: Expected , or } after object property");
  EXPECT_EQ(errorOf(parseGPUTargetJSON("{\"name\": \"x\",\n\n  \"base\": }",
                                       "my.json")),
            "my.json:3:11: Invalid JSON value");
}

TEST(GPUTargetJSONTest, EachClassOfBadInputNamesTheProblem) {
  struct Case {
    const char *what;
    const char *json;
    const char *message;
  } cases[] = {
      {"unknown key", R"({"name": "x", "base": "h100-sxm", "bandwidth": 1})",
       "t.json: \"bandwidth\" is not a target field"},
      {"wrong type", R"({"name": "x", "base": "h100-sxm", "sm_count": "many"})",
       "t.json: \"sm_count\" must be a non-negative integer"},
      {"fractional count",
       R"({"name": "x", "base": "h100-sxm", "sm_count": 1.5})",
       "t.json: \"sm_count\" must be a non-negative integer"},
      {"count too large",
       R"({"name": "x", "base": "h100-sxm", "sm_count": 5000000000})",
       "t.json: \"sm_count\" is too large"},
      {"wrong type", R"({"name": 7, "base": "h100-sxm"})",
       "t.json: \"name\" must be a string"},
      {"wrong type", R"({"name": "x", "base": "h100-sxm", "peak_flops": 1})",
       "t.json: \"peak_flops\" must be an object {\"fp32\": ..., ...}"},
      {"negative number",
       R"({"name": "x", "base": "h100-sxm", "memory_bandwidth_bytes_per_s": -1})",
       "t.json: \"memory_bandwidth_bytes_per_s\" must be a non-negative "
       "number"},
      {"negative peak",
       R"({"name": "x", "base": "h100-sxm", "peak_flops": {"bf16": -1}})",
       "t.json: \"peak_flops.bf16\" must be a non-negative number of FLOP/s"},
      {"non-finite number",
       R"({"name": "x", "base": "h100-sxm", "kernel_launch_s": 1e999})",
       "t.json: \"kernel_launch_s\" must be a non-negative number"},
      {"unknown precision",
       R"({"name": "x", "base": "h100-sxm", "peak_flops": {"fp4": 1}})",
       "t.json: \"peak_flops.fp4\" is not a precision (fp32, tf32, bf16, fp16, "
       "fp8, int8)"},
      {"unknown base", R"({"name": "x", "base": "tpu"})",
       "t.json: \"base\" names no built-in target; valid targets: a100-40gb, "
       "a100-80gb, h100-sxm, h100-pcie, h200, b200, l4, rtx-4090"},
      {"missing name", R"({"base": "h100-sxm"})",
       "t.json: \"name\" is required"},
      {"bad name", R"({"name": "My GPU", "base": "h100-sxm"})",
       "t.json: target name 'My GPU' must be lowercase letters, digits and "
       "dashes"},
      {"empty name", R"({"name": "", "base": "h100-sxm"})",
       "t.json: target name '' must be lowercase letters, digits and dashes"},
      {"zero bandwidth",
       R"({"name": "x", "base": "h100-sxm", "memory_bandwidth_bytes_per_s": 0})",
       "t.json: memory_bandwidth_bytes_per_s must be positive"},
      {"zero fp32 peak",
       R"({"name": "x", "base": "h100-sxm", "peak_flops": {"fp32": 0}})",
       "t.json: peak_flops.fp32 must be positive"},
      {"not an object", "[1, 2]", "t.json: a target must be a JSON object"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(errorOf(parseGPUTargetJSON(c.json, "t.json")), c.message)
        << c.what << ": " << c.json;
}

TEST(GPUTargetJSONTest, TargetFilesAreReadAndMustAgreeWithTheName) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("target", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << R"({"name": "mine", "base": "l4"})";
  }
  llvm::Expected<GPUTarget> target = resolveGPUTarget("", path);
  ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
  EXPECT_EQ(target->name, "mine");
  EXPECT_EQ(target->memoryBandwidth, 300e9);
  // Naming the file's own target, or the built-in it calibrates, is
  // allowed; naming another GPU is not, and the error names the field.
  EXPECT_TRUE(static_cast<bool>(resolveGPUTarget("mine", path)));
  EXPECT_TRUE(static_cast<bool>(resolveGPUTarget("l4", path)));
  EXPECT_EQ(errorOf(resolveGPUTarget("h100-sxm", path)),
            "--target=h100-sxm contradicts '" + path.str().str() +
                "': its \"base\" is 'l4' (a calibration file for another "
                "GPU)");
  llvm::sys::fs::remove(path);
  EXPECT_EQ(
      errorOf(loadGPUTargetFile(path))
          .rfind("cannot read target file '" + path.str().str() + "': ", 0),
      0u);
}

TEST(GPUTargetJSONTest, ErrorsInAFileNameThatFile) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("target", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << "{\"name\": \"x\",\n  \"base\": }";
  }
  EXPECT_EQ(errorOf(loadGPUTargetFile(path)),
            path.str().str() + ":2:11: Invalid JSON value");
  llvm::sys::fs::remove(path);
}

//===----------------------------------------------------------------------===//
// Achievable rates, interconnect, launch modes, calibration files
//===----------------------------------------------------------------------===//

TEST(GPUTargetAchievableTest, BuiltinH100CarriesTheMeasuredRates) {
  const GPUTarget *h100 = lookupBuiltinGPUTarget("h100-sxm");
  ASSERT_NE(h100, nullptr);
  // ../shared/docs/baselines.md: copy 3.01 TB/s, cuBLAS 767 TFLOP/s, SDPA
  // flash 356 TFLOP/s on an H100 SXM.
  EXPECT_EQ(h100->achievable.memoryBandwidth, 3.01e12);
  EXPECT_NEAR(h100->achievable.gemmEfficiency[0] * 989.4e12, 767e12, 1e6);
  EXPECT_NEAR(h100->achievable.attentionEfficiency * 989.4e12, 356e12, 1e6);
  EXPECT_EQ(h100->interconnect.nvlinkBandwidth, 450e9);
  // Up to 8 GPUs talk over NVLink, more over the 400 Gb/s network; an L4
  // has no NVLink and uses PCIe.
  EXPECT_EQ(h100->collectiveBandwidth(8), 450e9);
  EXPECT_EQ(h100->collectiveBandwidth(16), 50e9);
  EXPECT_EQ(lookupBuiltinGPUTarget("l4")->collectiveBandwidth(4), 32e9);
  // Other GPUs assume the H100's measured copy ratio: 2039 x 3.01 / 3.35.
  EXPECT_NEAR(lookupBuiltinGPUTarget("a100-80gb")->achievable.memoryBandwidth,
              2039e9 * 3.01 / 3.35, 1);
  for (const GPUTarget &target : getBuiltinGPUTargets()) {
    SCOPED_TRACE(target.name);
    EXPECT_FALSE(static_cast<bool>(target.validate()));
    EXPECT_LE(target.achievable.memoryBandwidth, target.memoryBandwidth);
    EXPECT_EQ(target.launchSeconds(), 2e-6);
  }
}

// The generated GEMM's fractions are assumptions (docs/targets.md): on
// Hopper and later a fixed 0.55 / 0.4 / 0.25 (mma.sync, not wgmma), below
// cuBLAS's; on Ampere and Ada 0.9 of cuBLAS's.
TEST(GPUTargetAchievableTest, GeneratedGemmFractionsFollowTheArchitecture) {
  const GPUTarget *h100 = lookupBuiltinGPUTarget("h100-sxm");
  const GPUTarget *a100 = lookupBuiltinGPUTarget("a100-80gb");
  ASSERT_NE(h100, nullptr);
  ASSERT_NE(a100, nullptr);
  // Hopper: the wgmma kernel's measured fractions (docs/targets.md).
  EXPECT_EQ(h100->achievable.generatedGemmEfficiency[0], 0.40);
  EXPECT_EQ(h100->achievable.generatedGemmEfficiency[1], 0.3);
  EXPECT_EQ(h100->achievable.generatedGemmEfficiency[2], 0.25);
  for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
    EXPECT_DOUBLE_EQ(a100->achievable.generatedGemmEfficiency[index],
                     0.9 * a100->achievable.gemmEfficiency[index]);
  // A file may calibrate them; a class it leaves out keeps the base's.
  llvm::Expected<GPUTarget> calibrated = parseGPUTargetJSON(
      R"({"name": "mine", "base": "h100-sxm", "achievable":
          {"generated_gemm_efficiency": {"large": 0.7}}})",
      "t.json");
  ASSERT_TRUE(static_cast<bool>(calibrated))
      << llvm::toString(calibrated.takeError());
  EXPECT_EQ(calibrated->achievable.generatedGemmEfficiency[0], 0.7);
  EXPECT_EQ(calibrated->achievable.generatedGemmEfficiency[1], 0.3);
  // Without a base they follow sm_arch: sm_80 gives 0.9 of the file's
  // cuBLAS fractions.
  llvm::Expected<GPUTarget> ampere = parseGPUTargetJSON(
      R"({"name": "mine", "sm_arch": "sm_80", "peak_flops": {"fp32": 1e13},
          "memory_bandwidth_bytes_per_s": 1e12,
          "memory_capacity_bytes": 8589934592, "l2_bytes": 4194304,
          "sm_count": 40,
          "achievable": {"gemm_efficiency": {"large": 0.8, "small": 0.5,
                                             "skinny": 0.2}}})",
      "t.json");
  ASSERT_TRUE(static_cast<bool>(ampere)) << llvm::toString(ampere.takeError());
  EXPECT_DOUBLE_EQ(ampere->achievable.generatedGemmEfficiency[0], 0.72);
  EXPECT_DOUBLE_EQ(ampere->achievable.generatedGemmEfficiency[2], 0.18);
}

TEST(GPUTargetAchievableTest, TheCalibrationExampleInTheDocsParses) {
  // docs/targets.md, "Calibration files", verbatim.
  llvm::Expected<GPUTarget> target = parseGPUTargetJSON(R"({
  "name": "h100-sxm-measured",
  "base": "h100-sxm",
  "calibration": "memwall-run --calibrate on an H100 80GB HBM3, 2026-11-22",
  "achievable": {
    "memory_bandwidth_bytes_per_s": 3.01e12,
    "gemm_efficiency": {"large": 0.775, "small": 0.55, "skinny": 0.3},
    "attention_efficiency": 0.36
  },
  "kernel_launch_s": 2.4e-6,
  "graph_kernel_launch_s": 0.8e-6
})",
                                                        "c.json");
  ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
  EXPECT_EQ(target->baseName, "h100-sxm");
  EXPECT_EQ(target->achievable.gemmEfficiency[1], 0.55);
  EXPECT_EQ(target->achievable.gemmEfficiency[2], 0.3);
  EXPECT_EQ(target->calibration,
            "memwall-run --calibrate on an H100 80GB HBM3, 2026-11-22");
  EXPECT_EQ(target->launchSeconds(), 2.4e-6);
  GPUTarget graph = *target;
  graph.launchMode = LaunchMode::Graph;
  EXPECT_EQ(graph.launchSeconds(), 0.8e-6);
  // The rest is the base's.
  EXPECT_EQ(target->memoryBandwidth, 3.35e12);
  EXPECT_EQ(target->smCount, 132u);
}

TEST(GPUTargetAchievableTest, FiguresOutsidePhysicalRangesAreRefused) {
  // Each was accepted once and broke the time model: a denormal peak or
  // bandwidth made times inf (bare `inf` in the JSON report, NaN in the
  // remat MILP); sizes past int64 compared as negative.
  const std::pair<const char *, const char *> cases[] = {
      {R"({"name": "x", "base": "h100-sxm", "peak_flops": {"bf16": 1e-308}})",
       "x.json: peak_flops.bf16 (1.00e-308) must be between 1 and 1e+21 "
       "FLOP/s (or 0: not supported)"},
      {R"({"name": "x", "base": "h100-sxm", "peak_flops": {"fp32": 1e22}})",
       "x.json: peak_flops.fp32 (1.00e+22) must be between 1 and 1e+21 FLOP/s "
       "(or 0: not supported)"},
      {R"({"name": "x", "base": "h100-sxm", "memory_bandwidth_bytes_per_s": 5e-324})",
       "x.json: memory_bandwidth_bytes_per_s (4.94e-324) must be between 1 "
       "and 1e+21 bytes/s"},
      {R"({"name": "x", "base": "h100-sxm", "achievable": {"memory_bandwidth_bytes_per_s": 0.5}})",
       "x.json: achievable.memory_bandwidth_bytes_per_s (5.00e-01) must be "
       "between 1 and 1e+21 bytes/s"},
      {R"({"name": "x", "base": "h100-sxm", "interconnect": {"network_bytes_per_s": 1e-300}})",
       "x.json: interconnect.network_bytes_per_s (1.00e-300) must be between "
       "1 and 1e+21 bytes/s"},
      {R"({"name": "x", "base": "h100-sxm", "achievable": {"attention_efficiency": 1e-308}})",
       "x.json: achievable.attention_efficiency (1.00e-308) must be at least "
       "0.001 of the peak"},
      {R"({"name": "x", "base": "h100-sxm", "memory_capacity_bytes": 4611686018427387904})",
       "x.json: memory_capacity_bytes (4611686018427387904) must be at most "
       "2^60 (1 EiB)"},
      {R"({"name": "x", "base": "h100-sxm", "sm_count": 4000000})",
       "x.json: sm_count (4000000) must be at most 65536"},
      {R"({"name": "x", "base": "h100-sxm", "kernel_launch_s": 5})",
       "x.json: kernel_launch_s (5.00e+00) must be at most 1 second"},
  };
  for (auto [json, error] : cases) {
    SCOPED_TRACE(json);
    EXPECT_EQ(errorOf(parseGPUTargetJSON(json, "x.json")), error);
  }
  // A GPU without NVLink, or without a precision, has 0 there.
  EXPECT_TRUE(static_cast<bool>(parseGPUTargetJSON(
      R"({"name": "x", "base": "l4", "interconnect": {"nvlink_bytes_per_s": 0}, "peak_flops": {"fp8": 0}})",
      "x.json")));
}

TEST(GPUTargetAchievableTest, BadRatesAreRefusedNamingTheField) {
  struct Case {
    const char *json;
    const char *error;
  };
  const Case cases[] = {
      {R"({"name": "x", "base": "h100-sxm", "achievable": {"memory_bandwidth_bytes_per_s": 4.5e12}})",
       "x.json: achievable.memory_bandwidth_bytes_per_s (4.50e+12) exceeds "
       "the datasheet memory_bandwidth_bytes_per_s (3.35e+12); is the figure "
       "for another GPU?"},
      {R"({"name": "x", "base": "h100-sxm", "achievable": {"gemm_efficiency": {"large": 1.3}}})",
       "x.json: achievable.gemm_efficiency.large must be a fraction of the "
       "peak in (0, 1]"},
      {R"({"name": "x", "base": "h100-sxm", "achievable": {"generated_gemm_efficiency": {"large": 1.3}}})",
       "x.json: achievable.generated_gemm_efficiency.large must be a fraction "
       "of the peak in (0, 1]"},
      {R"({"name": "x", "base": "h100-sxm", "achievable": {"gemm_efficiency": {"small": 0}}})",
       "x.json: \"achievable.gemm_efficiency.small\" must be a positive "
       "number"},
      {R"({"name": "x", "base": "h100-sxm", "achievable": {"attention_efficiency": -0.5}})",
       "x.json: \"achievable.attention_efficiency\" must be a positive "
       "number"},
      {R"({"name": "x", "base": "h100-sxm", "achievable": {"gemm_efficiency": {"huge": 0.9}}})",
       "x.json: \"achievable.gemm_efficiency.huge\" is not a GEMM shape "
       "class"},
      {R"({"name": "x", "base": "h100-sxm", "achievable": 3})",
       "x.json: \"achievable\" must be an object"},
      {R"({"name": "x", "base": "h100-sxm", "l2_bytes": 0})",
       "x.json: l2_bytes must be positive"},
      {R"({"name": "x", "base": "h100-sxm", "interconnect": {"pcie_bytes_per_s": 0}})",
       "x.json: \"interconnect.pcie_bytes_per_s\" must be a positive number"},
      {R"({"name": "x", "base": "h100-sxm", "interconnect": {"nvlink": 1}})",
       "x.json: \"interconnect.nvlink\" is not a field of \"interconnect\""},
      {R"({"name": "x", "base": "h100-sxm", "launch_mode": "eager"})",
       "x.json: \"launch_mode\" must be \"stream\" or \"graph\""},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.json);
    EXPECT_EQ(errorOf(parseGPUTargetJSON(c.json, "x.json")), c.error);
  }
}

// The arch number the cost model keys Hopper-and-later behaviour on.
TEST(GPUTargetArchTest, SmArchNumberReadsTheDigitsAfterSm) {
  EXPECT_EQ(getSmArchNumber("sm_90a"), 90u);
  EXPECT_EQ(getSmArchNumber("sm_80"), 80u);
  EXPECT_EQ(getSmArchNumber("sm_100a"), 100u);
  EXPECT_EQ(getSmArchNumber(""), 0u);
  EXPECT_EQ(getSmArchNumber("sm_"), 0u);
  EXPECT_EQ(getSmArchNumber("compute_90"), 0u);
}

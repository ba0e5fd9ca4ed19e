//===- GPUTargetTest.cpp - built-in targets and target JSON ---------------===//

#include "memwall/Hardware/GPUTarget.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace memwall;

namespace {
std::string errorOf(llvm::Expected<GPUTarget> target) {
  if (target)
    return "";
  return llvm::toString(target.takeError());
}
} // namespace

TEST(GPUTargetTest, EveryBuiltinValidatesAndIsNamedForTheCommandLine) {
  std::vector<std::string> expected = {"a100-40gb", "a100-80gb", "h100-sxm",
                                       "h100-pcie", "h200",      "b200",
                                       "l4",        "rtx-4090"};
  std::vector<std::string> names;
  for (const GPUTarget &target : getBuiltinGPUTargets()) {
    names.push_back(target.name);
    EXPECT_FALSE(static_cast<bool>(target.validate())) << target.name;
    EXPECT_GT(target.peakFlops[unsigned(MathPrecision::BF16)],
              target.peakFlops[unsigned(MathPrecision::FP32)])
        << target.name << ": tensor cores outrun CUDA cores";
    EXPECT_FALSE(target.smArch.empty()) << target.name;
  }
  EXPECT_EQ(names, expected);
}

TEST(GPUTargetTest, H100RidgeIsPeakOverBandwidth) {
  const GPUTarget *h100 = lookupBuiltinGPUTarget("h100-sxm");
  ASSERT_NE(h100, nullptr);
  // 989.4 TFLOP/s / 3.35 TB/s = 295.34 FLOP/byte (anchors: ~295).
  EXPECT_NEAR(h100->ridgeFor(MathPrecision::BF16), 989.4e12 / 3.35e12, 1e-9);
  EXPECT_NEAR(h100->ridgeFor(MathPrecision::BF16), 295.34, 0.01);
  // 66.9 TFLOP/s FP32 / 3.35 TB/s = 19.97.
  EXPECT_NEAR(h100->ridgeFor(MathPrecision::FP32), 19.97, 0.01);
  EXPECT_EQ(h100->memoryCapacityBytes, 80ull << 30);
  EXPECT_EQ(h100->smCount, 132u);
}

TEST(GPUTargetTest, MissingPrecisionFallsBackToTheNextWiderOne) {
  const GPUTarget *a100 = lookupBuiltinGPUTarget("a100-40gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_FALSE(a100->supports(MathPrecision::FP8));
  // FP8 on an A100 runs at the FP16 tensor-core rate, 312 TFLOP/s.
  EXPECT_EQ(a100->peakFor(MathPrecision::FP8), 312e12);
  EXPECT_EQ(a100->peakFor(MathPrecision::INT8), 624e12);
  GPUTarget fp32Only;
  fp32Only.peakFlops = {1e12, 0, 0, 0, 0, 0};
  EXPECT_EQ(fp32Only.peakFor(MathPrecision::FP8), 1e12);
}

TEST(GPUTargetTest, UnknownNamesListTheValidOnes) {
  EXPECT_EQ(lookupBuiltinGPUTarget("h100"), nullptr);
  std::string message = errorOf(resolveGPUTarget("h100", ""));
  EXPECT_NE(message.find("unknown target 'h100'; valid targets: a100-40gb, "
                         "a100-80gb, h100-sxm"),
            std::string::npos)
      << message;
}

TEST(GPUTargetTest, JSONWithBaseOverridesOnlyTheGivenFields) {
  llvm::Expected<GPUTarget> target = parseGPUTargetJSON(
      R"({"name": "slow-h100", "base": "h100-sxm",
          "memory_bandwidth_bytes_per_s": 2e12,
          "peak_flops": {"bf16": 5e14}})",
      "t.json");
  ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
  EXPECT_EQ(target->name, "slow-h100");
  EXPECT_EQ(target->memoryBandwidth, 2e12);
  EXPECT_EQ(target->peakFlops[unsigned(MathPrecision::BF16)], 5e14);
  // Inherited from the base.
  EXPECT_EQ(target->peakFlops[unsigned(MathPrecision::FP8)], 1978.9e12);
  EXPECT_EQ(target->smCount, 132u);
}

TEST(GPUTargetTest, JSONWithoutBaseNeedsEveryRequiredField) {
  llvm::Expected<GPUTarget> target = parseGPUTargetJSON(
      R"({"name": "tiny", "peak_flops": {"fp32": 1e12, "bf16": 8e12},
          "memory_bandwidth_bytes_per_s": 1e11,
          "memory_capacity_bytes": 1073741824, "sm_count": 4})",
      "t.json");
  ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
  EXPECT_EQ(target->ridgeFor(MathPrecision::BF16), 80);
  EXPECT_FALSE(target->supports(MathPrecision::FP16));

  EXPECT_EQ(errorOf(parseGPUTargetJSON(R"({"name": "tiny", "sm_count": 4})",
                                       "t.json")),
            "t.json: \"peak_flops\" is required (or give \"base\" to start "
            "from a built-in target)");
}

TEST(GPUTargetTest, BadJSONNamesTheProblem) {
  struct Case {
    const char *json;
    const char *message;
  } cases[] = {
      {"{\"name\": \"x\",\n \"base\": \"h100-sxm\"\n \"sm_count\": 1}",
       "t.json:3:2: Expected , or } after object property"},
      {R"({"name": "x", "base": "h100-sxm", "bandwidth": 1})",
       "t.json: \"bandwidth\" is not a target field"},
      {R"({"name": "x", "base": "h100-sxm", "sm_count": "many"})",
       "t.json: \"sm_count\" must be a non-negative integer"},
      {R"({"name": "x", "base": "h100-sxm", "memory_bandwidth_bytes_per_s": -1})",
       "t.json: \"memory_bandwidth_bytes_per_s\" must be a non-negative "
       "number"},
      {R"({"name": "x", "base": "h100-sxm", "peak_flops": {"fp4": 1}})",
       "t.json: \"peak_flops.fp4\" is not a precision"},
      {R"({"name": "x", "base": "tpu"})",
       "t.json: \"base\" names no built-in target"},
      {R"({"base": "h100-sxm"})", "t.json: \"name\" is required"},
      {R"({"name": "My GPU", "base": "h100-sxm"})",
       "t.json: target name 'My GPU' must be lowercase letters, digits and "
       "dashes"},
      {R"({"name": "x", "base": "h100-sxm", "memory_bandwidth_bytes_per_s": 0})",
       "t.json: memory_bandwidth_bytes_per_s must be positive"},
      {"[1, 2]", "t.json: a target must be a JSON object"},
  };
  for (const Case &c : cases) {
    std::string message = errorOf(parseGPUTargetJSON(c.json, "t.json"));
    EXPECT_EQ(message.rfind(c.message, 0), 0u)
        << "got: " << message << "\nwant prefix: " << c.message;
  }
}

TEST(GPUTargetTest, TargetFilesAreReadAndMustAgreeWithTheName) {
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
  EXPECT_NE(errorOf(resolveGPUTarget("l4", path)).find("contradicts"),
            std::string::npos);
  llvm::sys::fs::remove(path);
  EXPECT_EQ(
      errorOf(loadGPUTargetFile(path))
          .rfind("cannot read target file '" + path.str().str() + "': ", 0),
      0u);
}

//===- CheckTest.cpp - Tests of the numerics check ------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The end-to-end rule and the per-step gate of memwall-run --check and
// memwall-simulate (runtime/Check.h), on hand-computed numbers.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace memwall::runtime;
using memwall::reference::Tensor;

namespace {

Tensor tensor(DType type, std::vector<double> data) {
  Tensor t;
  t.dtype = type;
  t.shape = {static_cast<int64_t>(data.size())};
  t.data = std::move(data);
  return t;
}

// The f32 evaluation [1, -2, 0.5, 4]: rms = sqrt(21.25 / 4) = 2.3049, so
// errors are relative to 2.3049 in the first three elements and to 4 in the
// last. bf16 holds 4 + k/32 exactly.
const std::vector<double> kF32 = {1, -2, 0.5, 4};

TEST(CheckEndToEnd, BoundIsTheToleranceWhenTheReferenceIsClose) {
  // The reference is the f32 result; the kernels are 1/128 off in element 0:
  // 0.0078125 / 2.3049 = 0.0033895.
  OutputCheck check = checkEndToEnd(
      "out", tensor(DType::BF16, {1.0078125, -2, 0.5, 4}),
      tensor(DType::BF16, kF32), tensor(DType::F32, kF32), /*rtol=*/0);
  EXPECT_EQ(check.name, "out");
  EXPECT_EQ(check.dtype, DType::BF16);
  EXPECT_EQ(check.referenceError, 0);
  EXPECT_EQ(check.kernels.tolerance, 1e-2);
  EXPECT_EQ(check.bound, 1e-2);
  EXPECT_NEAR(check.kernels.maxRelError, 0.0078125 / std::sqrt(5.3125), 1e-12);
  EXPECT_EQ(check.kernels.maxAbsError, 0.0078125);
  EXPECT_TRUE(check.passed);
}

TEST(CheckEndToEnd, KernelsMayDriftAsFarAsOneAndAHalfTimesTheReference) {
  // The bf16 reference ends 1/16 off in the last element: 0.0625 / 4 =
  // 0.015625; bound = max(0.01, 1.5 x 0.015625) = 0.0234375.
  Tensor declared = tensor(DType::BF16, {1, -2, 0.5, 4.0625});
  Tensor f32 = tensor(DType::F32, kF32);
  // 3/32 off: 0.09375 / 4 = 0.0234375, exactly the bound.
  OutputCheck atBound = checkEndToEnd(
      "out", tensor(DType::BF16, {1, -2, 0.5, 4.09375}), declared, f32, 0);
  EXPECT_EQ(atBound.referenceError, 0.015625);
  EXPECT_EQ(atBound.bound, 0.0234375);
  EXPECT_EQ(atBound.kernels.maxRelError, 0.0234375);
  EXPECT_TRUE(atBound.passed);
  EXPECT_TRUE(atBound.kernels.passed);
  // 1/8 off: 0.125 / 4 = 0.03125, past it.
  OutputCheck past = checkEndToEnd(
      "out", tensor(DType::BF16, {1, -2, 0.5, 4.125}), declared, f32, 0);
  EXPECT_EQ(past.kernels.maxRelError, 0.03125);
  EXPECT_FALSE(past.passed);
  EXPECT_FALSE(past.kernels.passed);
}

TEST(CheckEndToEnd, RtolReplacesTheTolerance) {
  OutputCheck check = checkEndToEnd(
      "out", tensor(DType::BF16, {1, -2, 0.5, 4.125}),
      tensor(DType::BF16, {1, -2, 0.5, 4.0625}), tensor(DType::F32, kF32),
      /*rtol=*/0.05);
  EXPECT_EQ(check.kernels.tolerance, 0.05);
  EXPECT_EQ(check.bound, 0.05); // > 1.5 x 0.015625
  EXPECT_TRUE(check.passed);
}

TEST(CheckEndToEnd, NaNFails) {
  OutputCheck check =
      checkEndToEnd("out", tensor(DType::BF16, {std::nan(""), -2, 0.5, 4}),
                    tensor(DType::BF16, kF32), tensor(DType::F32, kF32), 0);
  EXPECT_TRUE(std::isinf(check.kernels.maxRelError));
  EXPECT_FALSE(check.passed);
}

TEST(CheckEndToEnd, F32OutputsKeepTheF32Tolerance) {
  // 4 x (1 + 2e-5): 8e-5 / 4 = 2e-5 > 1e-5.
  Tensor f32 = tensor(DType::F32, kF32);
  OutputCheck check = checkEndToEnd(
      "out", tensor(DType::F32, {1, -2, 0.5, 4 * (1 + 2e-5)}), f32, f32, 0);
  EXPECT_EQ(check.bound, 1e-5);
  EXPECT_NEAR(check.kernels.maxRelError, 2e-5, 1e-12);
  EXPECT_FALSE(check.passed);
}

TEST(CheckEndToEnd, IntegersMustBeExact) {
  Tensor ids = tensor(DType::I32, {1, 2, 3});
  OutputCheck same = checkEndToEnd("ids", ids, ids, ids, 0);
  EXPECT_EQ(same.bound, 0);
  EXPECT_TRUE(same.passed);
  OutputCheck off =
      checkEndToEnd("ids", tensor(DType::I32, {1, 2, 4}), ids, ids, 0);
  EXPECT_FALSE(off.passed);
}

// x [4] -> add_0 -> "a" (intermediate) -> fused_1 -> "b+c" (intermediate,
// the fused group's value is its last op's "c") -> gemm_2 (in place: c = d
// = "b+c") -> multi_3 -> "m#0", "m#1" -> tail_4 -> "t" (the output bound to
// value "v"). Values are f32 [4] (except "x#0" style names, not matched).
const char *kManifest = R"({
  "format": "memwall-bundle", "version": 1, "model": "m",
  "target": "h100-sxm", "arch": "sm_90a",
  "modules": [ { "name": "kernels", "file": "kernels.ptx" } ],
  "arena_bytes": 2304,
  "buffers": [
    { "name": "x", "offset": 0, "bytes": 16, "dtype": "f32",
      "shape": [4], "role": "input" },
    { "name": "w", "offset": 256, "bytes": 16, "dtype": "f32",
      "shape": [1, 4], "role": "weight" },
    { "name": "a", "offset": 512, "bytes": 16, "dtype": "f32",
      "shape": [4], "role": "intermediate" },
    { "name": "b+c", "offset": 768, "bytes": 16, "dtype": "f32",
      "shape": [4, 1], "role": "intermediate" },
    { "name": "m#0", "offset": 1024, "bytes": 16, "dtype": "f32",
      "shape": [4], "role": "intermediate" },
    { "name": "m#1", "offset": 1280, "bytes": 16, "dtype": "f32",
      "shape": [4], "role": "intermediate" },
    { "name": "t", "offset": 1536, "bytes": 16, "dtype": "f32",
      "shape": [4], "role": "output" },
    { "name": "unknown", "offset": 1792, "bytes": 16, "dtype": "f32",
      "shape": [4], "role": "intermediate" }
  ],
  "inputs": [ { "name": "x", "buffer": "x", "value": "x" },
              { "name": "w", "buffer": "w", "value": "w" } ],
  "outputs": [ { "name": "result0", "buffer": "t", "value": "v" } ],
  "steps": [
    { "kind": "kernel", "name": "add_0", "module": "kernels",
      "function": "f", "grid": [1, 1, 1], "block": [32, 1, 1],
      "shared_bytes": 0, "args": ["x", "a"], "ops": ["a"],
      "predicted_time_s": 1e-06 },
    { "kind": "kernel", "name": "fused_1", "module": "kernels",
      "function": "f", "grid": [1, 1, 1], "block": [32, 1, 1],
      "shared_bytes": 0, "args": ["a", "b+c", "unknown"],
      "ops": ["b", "c"], "predicted_time_s": 1e-06 },
    { "kind": "gemm", "name": "gemm_2", "ops": ["g"], "a": "b+c", "b": "w",
      "c": "b+c", "bias": null, "d": "b+c", "m": 4, "n": 1, "k": 1,
      "batch": 1, "stride_a": 0, "stride_b": 0, "stride_c": 0,
      "stride_d": 0, "trans_a": false, "trans_b": false, "dtype": "f32",
      "epilogue": "none", "predicted_time_s": 1e-06 },
    { "kind": "kernel", "name": "multi_3", "module": "kernels",
      "function": "f", "grid": [1, 1, 1], "block": [32, 1, 1],
      "shared_bytes": 0, "args": ["b+c", "m#0", "m#1"], "ops": ["m"],
      "predicted_time_s": 1e-06 },
    { "kind": "kernel", "name": "tail_4", "module": "kernels",
      "function": "f", "grid": [1, 1, 1], "block": [32, 1, 1],
      "shared_bytes": 0, "args": ["m#0", "a", "t"], "ops": ["v"],
      "predicted_time_s": 1e-06 }
  ],
  "predicted": { "time_s": 5e-06, "peak_bytes": 2304 },
  "reference": {
    "values": [ { "name": "x", "dtype": "f32", "shape": [4] },
                { "name": "w", "dtype": "f32", "shape": [1, 4] },
                { "name": "a", "dtype": "f32", "shape": [4] },
                { "name": "c", "dtype": "f32", "shape": [4] },
                { "name": "m", "dtype": "f32", "shape": [4] },
                { "name": "v", "dtype": "f32", "shape": [4] } ],
    "ops": []
  }
})";

class CheckPlanTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(parseManifestText(kManifest, "bundle", manifest).message(), "");
  }
  Manifest manifest;
};

TEST_F(CheckPlanTest, ReferenceValueNames) {
  EXPECT_EQ(referenceValueName(manifest, "a"), "a");
  EXPECT_EQ(referenceValueName(manifest, "b+c"), "c"); // the last op's
  EXPECT_EQ(referenceValueName(manifest, "m#0"), "m"); // the first result
  EXPECT_EQ(referenceValueName(manifest, "m#1"), "");  // not matched
  EXPECT_EQ(referenceValueName(manifest, "t"), "v");   // the output binding
  EXPECT_EQ(referenceValueName(manifest, "unknown"), "");
}

std::vector<std::string> names(const std::vector<StepBuffer> &buffers) {
  std::vector<std::string> result;
  for (const StepBuffer &buffer : buffers)
    result.push_back(buffer.buffer->name + "=" + buffer.value);
  return result;
}

TEST_F(CheckPlanTest, FirstWriterIsCheckedLaterStepsReadTheReference) {
  std::vector<StepBuffers> plan = planStepBuffers(manifest);
  ASSERT_EQ(plan.size(), 5u);
  using List = std::vector<std::string>;
  EXPECT_EQ(names(plan[0].reads), List{});
  EXPECT_EQ(names(plan[0].writes), List{"a=a"});
  EXPECT_EQ(names(plan[1].reads), List{"a=a"});
  EXPECT_EQ(names(plan[1].writes), List{"b+c=c"}); // "unknown" has no value
  EXPECT_EQ(names(plan[2].reads), List{"b+c=c"});  // in place: read only
  EXPECT_EQ(names(plan[2].writes), List{});
  EXPECT_EQ(names(plan[3].reads), List{"b+c=c"});
  EXPECT_EQ(names(plan[3].writes), List{"m#0=m"});
  EXPECT_EQ(names(plan[4].reads), (List{"m#0=m", "a=a"}));
  EXPECT_EQ(names(plan[4].writes), List{"t=v"});
}

TEST_F(CheckPlanTest, ABufferALaterOneOverwritesInPlaceIsRead) {
  // m#1 written over m#0 (an elementwise kernel writing in place over an
  // input that dies there): m#0 is an input of the step, though no step
  // named it before, and nothing holds its value after it.
  for (Buffer &buffer : manifest.buffers)
    if (buffer.name == "m#1")
      buffer.offset = 1024;
  std::vector<StepBuffers> plan = planStepBuffers(manifest);
  ASSERT_EQ(plan.size(), 5u);
  using List = std::vector<std::string>;
  EXPECT_EQ(names(plan[3].reads), (List{"b+c=c", "m#0=m"}));
  EXPECT_EQ(names(plan[3].writes), List{});
}

TEST_F(CheckPlanTest, AllReduceReadsItsInputAndWritesItsOutput) {
  // gemm_2 as an all-reduce of b+c: in place it only reads (nothing holds
  // b+c's reference value after it); into m#0 it writes m#0 as well.
  Step &step = manifest.steps[2];
  step.kind = StepKind::AllReduce;
  step.allReduce = {"b+c", "b+c", 4, DType::F32, 1};
  using List = std::vector<std::string>;
  std::vector<StepBuffers> plan = planStepBuffers(manifest);
  ASSERT_EQ(plan.size(), 5u);
  EXPECT_EQ(names(plan[2].reads), List{"b+c=c"});
  EXPECT_EQ(names(plan[2].writes), List{});
  step.allReduce.output = "m#0";
  plan = planStepBuffers(manifest);
  EXPECT_EQ(names(plan[2].reads), List{"b+c=c"});
  EXPECT_EQ(names(plan[2].writes), List{"m#0=m"});
}

TEST_F(CheckPlanTest, IsolatedPassUploadsReferenceValuesOfReads) {
  std::map<std::string, Tensor> values = {
      {"a", tensor(DType::F32, {1, 2, 3, 4})},
      {"c", tensor(DType::F32, {5, 6, 7, 8})},
      {"m", tensor(DType::F32, {0, 0, 0, 0})},
      {"v", tensor(DType::F32, {0, 0, 0, 0})}};
  std::vector<StepIsolation> pass =
      isolatedPass(planStepBuffers(manifest), values);
  ASSERT_EQ(pass.size(), 5u);
  EXPECT_TRUE(pass[0].uploads.empty());
  ASSERT_EQ(pass[0].downloads.size(), 1u);
  EXPECT_EQ(pass[0].downloads[0]->name, "a");
  ASSERT_EQ(pass[1].uploads.size(), 1u);
  EXPECT_EQ(pass[1].uploads[0].buffer->name, "a");
  EXPECT_EQ(pass[1].uploads[0].bytes, values["a"].toBytes());
  ASSERT_EQ(pass[2].uploads.size(), 1u);
  EXPECT_EQ(pass[2].uploads[0].bytes, values["c"].toBytes());
  EXPECT_TRUE(pass[2].downloads.empty());
}

TEST_F(CheckPlanTest, IsolatedStepsAreJudgedAtTheTolerance) {
  std::map<std::string, Tensor> values = {
      {"a", tensor(DType::F32, {1, 2, 3, 4})},
      {"c", tensor(DType::F32, {5, 6, 7, 8})},
      {"m", tensor(DType::F32, {1, 1, 1, 1})},
      {"v", tensor(DType::F32, {2, 2, 2, 2})}};
  std::vector<StepBuffers> plan = planStepBuffers(manifest);
  // What each step wrote into its `writes`: the reference values, except
  // tail_4's first element, 0.5 off.
  std::vector<std::vector<Tensor>> written = {
      {tensor(DType::F32, {1, 2, 3, 4})},
      {tensor(DType::F32, {5, 6, 7, 8})},
      {},
      {tensor(DType::F32, {1, 1, 1, 1})},
      {tensor(DType::F32, {2.5, 2, 2, 2})}};
  written[1][0].shape = {4, 1}; // the buffer's shape, not the value's
  std::vector<StepCheck> checks =
      checkIsolatedSteps(manifest, plan, written, values, /*rtol=*/0);
  ASSERT_EQ(checks.size(), 4u);
  EXPECT_EQ(checks[0].step, "add_0");
  EXPECT_EQ(checks[0].buffer, "a");
  EXPECT_TRUE(checks[0].comparison.passed);
  EXPECT_EQ(checks[1].step, "fused_1");
  EXPECT_EQ(checks[1].buffer, "b+c");
  EXPECT_TRUE(checks[1].comparison.passed);
  EXPECT_EQ(checks[2].step, "multi_3");
  EXPECT_EQ(checks[3].step, "tail_4");
  EXPECT_EQ(checks[3].buffer, "t");
  // 0.5 / max(2, rms 2) = 0.25.
  EXPECT_EQ(checks[3].comparison.maxRelError, 0.25);
  EXPECT_EQ(checks[3].comparison.tolerance, 1e-5);
  EXPECT_FALSE(checks[3].comparison.passed);
  EXPECT_FALSE(allPassed(checks));

  std::vector<OutputCheck> outputs(1);
  outputs[0].name = "result0";
  EXPECT_EQ(describeFailures(checks, outputs),
            "1 of 4 isolated steps (first: 'tail_4', buffer 't'), 1 of 1 "
            "output (first: 'result0')");
  outputs[0].passed = true;
  EXPECT_EQ(describeFailures({}, outputs), "");
}

// A fused kernel keeps intermediates in f32 where the reference rounds each
// op: a step may land as far from the reference as 1.5 x the reference's
// own error against the f32 evaluation, and no farther.
TEST_F(CheckPlanTest, IsolatedStepsMayDriftAsFarAsTheReferenceFromF32) {
  std::map<std::string, Tensor> values = {
      {"a", tensor(DType::F32, {1, 2, 3, 4})},
      {"c", tensor(DType::F32, {5, 6, 7, 8})},
      {"m", tensor(DType::F32, {1, 1, 1, 1})},
      {"v", tensor(DType::F32, {2, 2, 2, 2})}};
  // The f32 evaluation of v differs by 0.2 in one element: the reference's
  // own error is 0.2 / max(2.2, rms) = 1/11, so the bound is 1.5/11.
  std::map<std::string, Tensor> f32 = values;
  f32["v"] = tensor(DType::F32, {2.2, 2, 2, 2});
  std::vector<StepBuffers> plan = planStepBuffers(manifest);
  auto tailWrote = [&](double first) {
    std::vector<std::vector<Tensor>> written = {
        {tensor(DType::F32, {1, 2, 3, 4})},
        {tensor(DType::F32, {5, 6, 7, 8})},
        {},
        {tensor(DType::F32, {1, 1, 1, 1})},
        {tensor(DType::F32, {first, 2, 2, 2})}};
    written[1][0].shape = {4, 1};
    return checkIsolatedSteps(manifest, plan, written, values, /*rtol=*/0,
                              &f32)[3];
  };
  StepCheck within = tailWrote(2.26); // 0.26 / 2 = 0.13
  EXPECT_NEAR(within.comparison.tolerance, 1.5 / 11, 1e-12);
  EXPECT_TRUE(within.comparison.passed);
  StepCheck beyond = tailWrote(2.28); // 0.14
  EXPECT_FALSE(beyond.comparison.passed);
  // Where the reference equals its f32 evaluation the dtype's tolerance
  // stays.
  std::map<std::string, Tensor> exact = values;
  std::vector<std::vector<Tensor>> written = {
      {tensor(DType::F32, {1, 2, 3, 4})},
      {tensor(DType::F32, {5, 6, 7, 8})},
      {},
      {tensor(DType::F32, {1, 1, 1, 1})},
      {tensor(DType::F32, {2, 2, 2, 2})}};
  written[1][0].shape = {4, 1};
  EXPECT_EQ(checkIsolatedSteps(manifest, plan, written, values, 0, &exact)[3]
                .comparison.tolerance,
            1e-5);
}

} // namespace
